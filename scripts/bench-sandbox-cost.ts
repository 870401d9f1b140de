/**
 * The OS sandbox's cost, measured inside `npm run bench -- dispatch` in the same run: one full
 * agent turn (the real `pi` against the scripted model, gate installed) confined and unconfined,
 * alternated ABBA so drifting load weighs on both alike, and one acceptance command (`true`)
 * confined and unconfined, each timed from building its sandbox (the git read view brought up to
 * date, workers/sandbox/git-read-view.ts) to its end. Prints the turn ratio (target ≤ 1.10×) and the
 * acceptance run's added ms.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PollyConfig } from '../brain/config/config-schema.js';
import { prepareGate } from '../gate/hooks/harness-gate.js';
import { runAcceptance } from '../workers/acceptance.js';
import { createAgentAdapter } from '../workers/agents/agent-factory.js';
import { agentTurnSandbox } from '../workers/sandbox/agent-turn-sandbox.js';
import { commandSandbox } from '../workers/sandbox/command-sandbox.js';
import { repoStateDir } from '../workers/sandbox/agent-state-dir.js';

export interface SandboxCostInput {
  repo: string;
  worktree: string;
  branch: string;
  config: PollyConfig;
  /** Environment handed to the agent (its key variable). */
  env: Record<string, string>;
  rounds: number;
  home: string;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : Number.NaN;
};

/** Run the measurement; returns the lines to print. Throws when a turn does not end `ok`. */
export async function measureSandboxCost(input: SandboxCostInput): Promise<string[]> {
  const adapter = createAgentAdapter('pi', input.config, { model: input.config.workers.pi.model });
  const stateDir = join(repoStateDir(input.repo), 'agents', 'bench-sandbox', 'pi');
  const gateDir = join(input.repo, '.polly', 'workers', 'bench-sandbox', 'gate');
  type Mode = 'free' | 'boxed' | 'bounded';
  const limits = input.config.workers.limits ?? {};
  const turn = async (mode: Mode | boolean, i: number): Promise<number> => {
    const m: Mode = mode === true ? 'boxed' : mode === false ? 'free' : mode;
    const confined = m !== 'free';
    const started = performance.now();
    const box = confined
      ? (
          await agentTurnSandbox({
            ...(m === 'bounded' ? { limits } : {}),
            repoRoot: input.repo,
            cwd: input.worktree,
            readOnly: false,
            agentStateDir: stateDir,
            gateDir,
            env: input.env,
            configuredUrls: [input.config.workers.pi.base_url],
            allowUnconfined: false,
            realHome: input.home,
          })
        ).sandbox
      : null;
    const gate = await prepareGate('pi', {
      role: 'implement',
      context: { repoRoot: input.repo, worktree: input.worktree, branch: input.branch, defaultBranch: 'main', home: input.home },
      stateDir: gateDir,
      journalPath: null,
      policy: input.config.policies,
    });
    const r = await adapter.start({
      cwd: input.worktree,
      prompt: `[polly task=bench-sandbox-${i} role=implement] benchmark turn`,
      resumeSessionId: null,
      model: input.config.workers.pi.model,
      readOnly: false,
      gate: { args: gate.args, env: gate.env },
      env: input.env,
      stateDir,
      sandbox: box,
    }).result;
    if (r.status !== 'ok') throw new Error(`bench turn (${confined ? 'confined' : 'unconfined'}) ended ${r.status}: ${r.message ?? ''}`);
    return performance.now() - started;
  };
  const accept = async (mode: Mode | boolean): Promise<number> => {
    const m: Mode = mode === true ? 'boxed' : mode === false ? 'free' : mode;
    const confined = m !== 'free';
    // The sandbox's construction (its git read view brought up to date) counts: it runs before every command.
    const started = performance.now();
    const c = await commandSandbox({ repoRoot: input.repo, worktree: input.worktree, network: false, allowUnconfined: false, ...(m === 'bounded' ? { limits } : {}) });
    const o = await runAcceptance({ cwd: input.worktree, commands: ['true'], timeoutSeconds: 60, env: c.env, sandbox: confined ? c.sandbox : null });
    if (!o.green) throw new Error(`bench acceptance (${confined ? 'confined' : 'unconfined'}) was red: ${o.results[0]?.output ?? ''}`);
    return performance.now() - started;
  };
  await turn(true, -1); // warm-up: page cache, the bundled gate's code cache
  await turn(false, -2);
  const free: number[] = [];
  const boxed: number[] = [];
  const freeAcc: number[] = [];
  const boxedAcc: number[] = [];
  // The resource bounds (workers.limits: a cgroup or rlimits, a sized /tmp): the same sandbox with them.
  const bounded: number[] = [];
  const boundedAcc: number[] = [];
  for (let r = 0; r < input.rounds; r++) {
    const order = r % 2 === 0 ? [false, true] : [true, false];
    for (const confined of order) (confined ? boxed : free).push(await turn(confined, r * 3 + Number(confined)));
    bounded.push(await turn('bounded', r * 3 + 2));
    for (const confined of order) (confined ? boxedAcc : freeAcc).push(await accept(confined));
    const pair: Mode[] = r % 2 === 0 ? ['boxed', 'bounded'] : ['bounded', 'boxed'];
    for (const m of pair) (m === 'bounded' ? boundedAcc : boxedAcc).push(await accept(m));
  }
  const f = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
  return [
    `sandbox cost (median of ${input.rounds}, ABBA; a full pi turn against the scripted model, gate installed)`,
    `  unconfined turn             ${f(median(free))}`,
    `  confined turn (bubblewrap)  ${f(median(boxed))}`,
    `  ratio confined / unconfined ${(median(boxed) / median(free)).toFixed(2)}×   (target ≤ 1.10×)`,
    `  acceptance \`true\`          ${f(median(freeAcc))} unconfined, ${f(median(boxedAcc))} confined: +${(median(boxedAcc) - median(freeAcc)).toFixed(0)} ms per command`,
    `  confined turn with bounds   ${f(median(bounded))}   ratio bounded / confined ${(median(bounded) / median(boxed)).toFixed(2)}×`,
    `  acceptance \`true\` bounded  ${f(median(boundedAcc))}: +${(median(boundedAcc) - median(boxedAcc)).toFixed(0)} ms over confined (${(median(boundedAcc) / median(boxedAcc)).toFixed(2)}×)`,
  ];
}

// `npm run bench -- sandbox-cost [dispatch bench flags]` runs this module (scripts/bench.mjs lists
// every bench-*.js): its figures need the dispatch bench's repository, worktree and scripted model,
// so it runs the dispatch bench (same process tree, same flags; 2,000 files unless --files says
// otherwise), whose "sandbox cost" lines are these figures, and exits with its status.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rest = process.argv.slice(2);
  const args = rest.includes('--files') ? rest : ['--files', '2000', ...rest];
  process.stderr.write(`sandbox-cost: measured by the dispatch bench (its "sandbox cost" lines): npm run bench -- dispatch ${args.join(' ')}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(dirname(fileURLToPath(import.meta.url)), 'bench-dispatch.js'), ...args], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
