/**
 * `npm run bench -- dispatch [--files N] [--rounds R] [--concurrency C] [--dir PATH] [--no-worker] [--standby N] [--host]`
 *
 * `--host`: a remote dispatch on two loopback SSH hosts against a local one instead
 * (scripts/host-dispatch-bench.ts; 2 000 files unless `--files` says otherwise).
 *
 * Time from "dispatch" to a ready worker, against a bare `git worktree add` of the same repository
 * in the same run (target ≤ 1.2×), one at a time and C (default 8) at once. Runs on a generated
 * repository of N (default 20 000) files.
 *
 * A dispatch is `WorktreeManager.create()` (worktree, includes, submodules, PORT) followed by the
 * entries of {@link DISPATCH_STAGES}, each inside the timed region with its own time printed:
 * `worker runner spawned` (supervisor.runTurn: spec + registry row + detached runner, until the
 * runner has written runner.pid) and `agent CLI started` (the runner built the adapter, installed
 * the gate and spawned the real `pi`, until agent.json names its pid). The turn itself runs against
 * the scripted model server and is awaited untimed. `--no-worker`: the worktree part only.
 * `--standby N`: runners the supervisor keeps booted ahead of need (default 1, the supervisor's).
 * CPU figures count reaped children only: the detached runners and agents are not in them.
 * With the worker: the OS sandbox's cost too (scripts/bench-sandbox-cost.ts): a full turn confined
 * vs unconfined as a ratio (target ≤ 1.10×), and an acceptance command's added ms.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { cpus, homedir, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type PollyConfig } from '../brain/config/config-schema.js';
import { createFileRegistryStore } from '../brain/registry/registry-store.js';
import type { WorkerSupervisor, WorkerTurnResult } from '../workers/worker-turn.js';
import { createGitRunner, type GitRunner } from '../workers/git/git.js';
import { createWorkerSupervisor, workerIdFor } from '../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager, type CreatedWorktree, type WorktreeManager } from '../workers/git/worktree-manager.js';
import { measureSandboxCost } from './bench-sandbox-cost.js';
import { runHostBench } from './host-dispatch-bench.js';
import { BENCH_GIT_ENV, generateBenchRepo } from './bench-repo.js';
import { parseModelScript } from './scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model/server.js';

/** One step of a dispatch after the worktree exists (timed as part of the dispatch). */
export interface DispatchStage {
  name: string;
  /** Do the step for `worktree`; return a cleanup run after timing (e.g. stop the process). */
  run(worktree: CreatedWorktree): Promise<(() => Promise<void>) | void>;
}

/** Stages after `create()` (main() adds the worker stages once the repository exists). */
export const DISPATCH_STAGES: DispatchStage[] = [];

const BENCH_SCRIPT = 'sessions:\n  - name: bench\n    match: {role: implement}\n    turns:\n      - steps:\n          - finish: "Nothing to do."\n';
const BENCH_KEY_ENV = 'POLLY_BENCH_MODEL_KEY';

async function waitForFile(path: string, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${what}: ${path} did not appear within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * The worker stages: the implementer's turn through the real supervisor (detached runner, gate,
 * the real `pi` against the scripted model), timed until the runner runs (runner.pid) and until
 * the agent CLI has been spawned (agent.json). The turn's end is awaited untimed (cleanup).
 */
function workerStages(repo: string, supervisor: WorkerSupervisor, stateRoot: string): DispatchStage[] {
  const turns = new Map<string, Promise<WorkerTurnResult>>();
  let failures = 0;
  const orderOf = (wt: CreatedWorktree) => `bench:${wt.id}:dispatch`;
  return [
    {
      name: 'worker runner spawned',
      async run(wt) {
        turns.set(
          wt.id,
          supervisor.runTurn({
            taskId: wt.id,
            orderId: orderOf(wt),
            harness: 'pi',
            purpose: 'implement',
            role: 'implement',
            readOnly: false,
            cwd: wt.path,
            prompt: `[polly task=${wt.id} role=implement] benchmark turn`,
            resumeSessionId: null,
            model: null,
            gateContext: { repoRoot: repo, worktree: wt.path, branch: wt.branch, defaultBranch: 'main', home: homedir() },
            env: { [BENCH_KEY_ENV]: 'bench-dummy-key', PORT: String(wt.port) },
          }),
        );
        await waitForFile(join(stateRoot, workerIdFor(wt.id, orderOf(wt)), 'runner.pid'), 'worker runner');
      },
    },
    {
      name: 'agent CLI started',
      async run(wt) {
        const id = workerIdFor(wt.id, orderOf(wt));
        await waitForFile(join(stateRoot, id, 'agent.json'), 'agent CLI');
        return async () => {
          const r = await turns.get(wt.id)!;
          turns.delete(wt.id);
          if (r.status !== 'ok' && failures++ < 3) process.stderr.write(`bench: worker ${id} ended ${r.status}: ${r.message ?? ''}\n`);
        };
      },
    },
  ];
}

interface Args {
  files: number;
  rounds: number;
  concurrency: number;
  /** Parent directory of the generated repository. */
  dir: string;
  /** Include the worker stages (default; `--no-worker`: the worktree only). */
  worker: boolean;
  /** Standby runners the supervisor keeps booted (its default: 1). */
  standby: number;
  /** `--host`: remote dispatch vs local (scripts/host-dispatch-bench.ts). */
  host: boolean;
}

function parseArgs(argv: string[]): Args {
  // tmpfs by default: on a shared VM disk, writeback from other work swung a bare add of 20 000
  // files between 6 and 19 s within one run; on tmpfs the git work is faster, so Polly's fixed
  // overhead weighs more in the ratio (a stricter test). `--dir /tmp` measures on disk.
  const args: Args = { files: 20_000, rounds: 7, concurrency: 8, dir: existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), worker: true, standby: 1, host: false };
  let filesGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    if (flag === '--no-worker') {
      args.worker = false;
    } else if (flag === '--host') {
      args.host = true;
    } else if (flag === '--dir') {
      args.dir = argv[i + 1] ?? '';
      i++;
    } else if (flag === '--standby') {
      if (!Number.isInteger(value) || value < 0) throw new Error(`--standby needs a non-negative integer, got "${argv[i + 1]}"`);
      args.standby = value;
      i++;
    } else if (flag === '--files' || flag === '--rounds' || flag === '--concurrency') {
      if (!Number.isInteger(value) || value < 1) throw new Error(`${flag} needs a positive integer, got "${argv[i + 1]}"`);
      args[flag.slice(2) as 'files' | 'rounds' | 'concurrency'] = value;
      if (flag === '--files') filesGiven = true;
      i++;
    } else {
      throw new Error(`unknown flag "${flag}"; use --files N, --rounds R, --concurrency C, --dir PATH, --no-worker, --standby N, --host`);
    }
  }
  if (args.host && !filesGiven) args.files = 2_000;
  return args;
}

/**
 * CPU ms used so far by this process plus its reaped descendants (git and the gits it waited for):
 * `process.cpuUsage()` + cutime/cstime of /proc/self/stat (Linux; fields 16-17, clock ticks of
 * 10 ms). Unlike wall clock, it does not grow when other work shares the machine.
 */
function cpuMs(): number {
  const self = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children = (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    children = Number.NaN;
  }
  return (self.user + self.system) / 1000 + children;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; cpu: number; value: T }> {
  const start = process.hrtime.bigint();
  const cpu0 = cpuMs();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, cpu: cpuMs() - cpu0, value };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

let seq = 0;

/** Failed bare adds (git's own race between concurrent `worktree add`s), retried under a new name. */
let bareFailures = 0;
let lastBareError = '';

/**
 * The baseline: a plain `git worktree add -b`. Run concurrently, git itself sometimes fails
 * ("failed to read .git/worktrees/<other>/commondir": one add reads another's half-written admin
 * dir); such an add is retried under a fresh name and counted.
 */
async function bareAdd(git: GitRunner, repo: string, commit: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const name = `bare-${++seq}`;
    const path = join(repo, '.worktrees', name);
    try {
      await git.run(['worktree', 'add', '-q', '-b', `bare/${name}`, path, commit], { cwd: repo });
      return path;
    } catch (error) {
      bareFailures++;
      lastBareError = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
      if (attempt >= 10) throw error;
    }
  }
}

async function dispatch(manager: WorktreeManager, stageMs: Map<string, number[]>): Promise<{ wt: CreatedWorktree; cleanups: Array<() => Promise<void>> }> {
  const id = `bench-${++seq}`;
  const created = await timed(() => manager.create({ id, baseBranch: 'main' }));
  push(stageMs, 'create()', created.ms);
  const cleanups: Array<() => Promise<void>> = [];
  for (const stage of DISPATCH_STAGES) {
    const r = await timed(() => stage.run(created.value));
    push(stageMs, stage.name, r.ms);
    if (r.value) cleanups.push(r.value);
  }
  return { wt: created.value, cleanups };
}

function push(m: Map<string, number[]>, k: string, v: number) {
  m.set(k, [...(m.get(k) ?? []), v]);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.host) {
    await runHostBench(args);
    return;
  }
  const root = realpathSync(mkdtempSync(join(args.dir, 'polly-bench-dispatch-')));
  let model: ScriptedModelServer | null = null;
  try {
    process.stderr.write(`generating a repository of ${args.files} files in ${root} …\n`);
    const gen = await timed(async () => generateBenchRepo(root, args.files));
    const repo = gen.value;
    const git = createGitRunner({ env: BENCH_GIT_ENV, timeoutMs: 600_000 });
    const commit = (await git.run(['rev-parse', 'main'], { cwd: repo })).stdout.trim();
    const manager = createWorktreeManager({ repoRoot: repo, git });
    const version = (await git.run(['version'], { cwd: repo })).stdout.trim();
    if (args.worker) {
      model = await startScriptedModelServer({ script: parseModelScript(BENCH_SCRIPT) });
      const config: PollyConfig = structuredClone(DEFAULT_CONFIG);
      config.workers.pi = { command: 'pi', model: 'scripted', provider: null, base_url: `${model.url}/v1`, api: 'openai-completions', api_key_env: BENCH_KEY_ENV };
      const stateRoot = join(repo, '.polly', 'workers');
      const store = createFileRegistryStore(join(repo, '.polly'));
      const supervisor = createWorkerSupervisor({ repoRoot: repo, store, config, stateRoot, pollMs: 20, gateJournalPath: null, standby: args.standby });
      DISPATCH_STAGES.push(...workerStages(repo, supervisor, stateRoot));
    }

    const removeBare = async (path: string) => {
      await git.run(['worktree', 'remove', '--force', path], { cwd: repo });
    };
    const removeManaged = async (d: { wt: CreatedWorktree; cleanups: Array<() => Promise<void>> }) => {
      for (const c of d.cleanups) await c();
      await git.run(['worktree', 'remove', '--force', d.wt.path], { cwd: repo });
    };

    // Warm-up (page cache, .worktrees/ exclude entry), untimed.
    await removeBare(await bareAdd(git, repo, commit));
    await removeManaged(await dispatch(manager, new Map()));

    // One at a time, then C at once; each round runs bare-ours-ours-bare (ABBA) so that load from
    // other work drifting during the run weighs on both sides alike.
    const single = { bare: [] as number[], ours: [] as number[], bareCpu: [] as number[], oursCpu: [] as number[] };
    const stageMs = new Map<string, number[]>();
    const load0 = loadavg()[0] as number;
    const oneBare = async () => {
      const b = await timed(() => bareAdd(git, repo, commit));
      single.bare.push(b.ms);
      single.bareCpu.push(b.cpu);
      await removeBare(b.value);
    };
    const oneOurs = async () => {
      const d = await timed(() => dispatch(manager, stageMs));
      single.ours.push(d.ms);
      single.oursCpu.push(d.cpu);
      await removeManaged(d.value);
    };
    for (let r = 0; r < args.rounds; r++) {
      if (r % 2 === 0) {
        await oneBare();
        await oneOurs();
      } else {
        await oneOurs();
        await oneBare();
      }
    }

    const conc = { bare: [] as number[], ours: [] as number[], bareCpu: [] as number[], oursCpu: [] as number[] };
    const concRounds = Math.max(1, Math.min(5, args.rounds));
    const manyBare = async () => {
      const b = await timed(() => Promise.all(Array.from({ length: args.concurrency }, () => bareAdd(git, repo, commit))));
      conc.bare.push(b.ms);
      conc.bareCpu.push(b.cpu);
      for (const p of b.value) await removeBare(p);
      await git.run(['worktree', 'prune'], { cwd: repo });
    };
    const manyOurs = async () => {
      const d = await timed(() => Promise.all(Array.from({ length: args.concurrency }, () => dispatch(manager, new Map()))));
      conc.ours.push(d.ms);
      conc.oursCpu.push(d.cpu);
      for (const x of d.value) await removeManaged(x);
    };
    for (let r = 0; r < concRounds; r++) {
      if (r % 2 === 0) {
        await manyBare();
        await manyOurs();
      } else {
        await manyOurs();
        await manyBare();
      }
    }
    const load1 = loadavg()[0] as number;
    const bare = single.bare;
    const ours = single.ours;
    const bareC = conc.bare;
    const oursC = conc.ours;
    const f = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
    const out = [
      `bench dispatch — ${args.files} files in ${args.dir}, ${version}, ${cpus().length} cores, repo generated in ${(gen.ms / 1000).toFixed(1)} s`,
      `dispatch = WorktreeManager.create()${DISPATCH_STAGES.map((s) => ` + ${s.name}`).join('')}${args.worker ? ` (standby runners: ${args.standby})` : ''}`,
      '',
      `single (median of ${args.rounds})`,
      `  bare git worktree add       ${f(median(bare))}`,
      `  dispatch                    ${f(median(ours))}`,
      ...[...stageMs].map(([k, v]) => `    ${k.padEnd(26)}${f(median(v))}`),
      `  ratio dispatch / bare       ${(median(ours) / median(bare)).toFixed(2)}×   (target ≤ 1.20×)`,
      `  CPU ms bare / dispatch      ${median(single.bareCpu).toFixed(0)} / ${median(single.oursCpu).toFixed(0)}  ratio ${(median(single.oursCpu) / median(single.bareCpu)).toFixed(2)}×`,
      '',
      `${args.concurrency} concurrent (wall clock, median of ${concRounds})`,
      `  bare git worktree add ×${args.concurrency}    ${f(median(bareC))}`,
      `  dispatch ×${args.concurrency}                 ${f(median(oursC))}`,
      `  ratio dispatch / bare       ${(median(oursC) / median(bareC)).toFixed(2)}×   (target ≤ 1.20×)`,
      `  CPU ms bare / dispatch      ${median(conc.bareCpu).toFixed(0)} / ${median(conc.oursCpu).toFixed(0)}  ratio ${(median(conc.oursCpu) / median(conc.bareCpu)).toFixed(2)}×`,
      `  bare adds that git itself failed (retried): ${bareFailures}${bareFailures ? ` — e.g. ${lastBareError.slice(0, 160)}` : ''}`,
    ];
    if (args.worker && model) {
      const d = await dispatch(manager, new Map());
      const config: PollyConfig = structuredClone(DEFAULT_CONFIG);
      config.workers.pi = { command: 'pi', model: 'scripted', provider: null, base_url: `${model.url}/v1`, api: 'openai-completions', api_key_env: BENCH_KEY_ENV };
      out.push(
        '',
        ...(await measureSandboxCost({
          repo,
          worktree: d.wt.path,
          branch: d.wt.branch,
          config,
          env: { [BENCH_KEY_ENV]: 'bench-dummy-key' },
          rounds: Math.max(3, args.rounds),
          home: homedir(),
        })),
      );
      await removeManaged(d);
    }
    out.push(
      '',
      `load average (1 min) at start / end: ${load0.toFixed(1)} / ${load1.toFixed(1)} on ${cpus().length} cores — wall-clock ratios are noisy when it exceeds the core count; CPU ratios are not`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench dispatch failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
