/**
 * `npm run bench -- dispatch --host [--files N] [--rounds R] [--concurrency C]`
 *
 * A remote dispatch's added cost over a local one (issue 28; targets: ≤ 1.5× at 1, and C
 * concurrent over 2 hosts faster than C on this machine). Two real `sshd` hosts are started on
 * loopback (scripts/loopback-ssh-hosts.ts: each its own user, host key and directory, as the host
 * e2e tests use), and a repository of N (default 2 000) files is generated.
 *
 * A dispatch here is the whole turn of a task that does nothing: `WorktreeManager.create()` and a
 * pi turn through the real supervisor (detached runner, gate, sandbox, the real `pi` against the
 * scripted model) until its result. Locally the turn runs on this machine; remotely the same
 * supervisor, configured with `workers.hosts`, places it on a host: the worktree's state is pushed
 * to the host's mirror over SSH, the host's Polly runs the turn in its sandbox (the model reached
 * through a forwarded port), events stream back, the state is fetched back and applied. The first
 * turn on each host (making its mirror, sending the repository's objects once) is a warm-up, untimed.
 *
 * Loopback hosts share this machine's cores: the C-concurrent figure says what the transport and
 * the host's Polly cost under load, not what separate machines would gain.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { cpus, homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type PollyConfig } from '../brain/config/config-schema.js';
import { createFileRegistryStore } from '../brain/registry/registry-store.js';
import { createGitRunner } from '../workers/git/git.js';
import { createWorktreeManager, type WorktreeManager } from '../workers/git/worktree-manager.js';
import { createWorkerSupervisor } from '../workers/supervisor/worker-supervisor.js';
import type { WorkerSupervisor } from '../workers/worker-turn.js';
import { startSshHosts, type SshHosts } from './loopback-ssh-hosts.js';
import { BENCH_GIT_ENV, generateBenchRepo } from './bench-repo.js';
import { parseModelScript } from './scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model/server.js';

const BENCH_SCRIPT = 'sessions:\n  - name: bench\n    match: {role: implement}\n    turns:\n      - steps:\n          - finish: "Nothing to do."\n';
const BENCH_KEY_ENV = 'POLLY_BENCH_MODEL_KEY';
export interface HostBenchArgs {
  files: number;
  rounds: number;
  concurrency: number;
  dir: string;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

let seq = 0;

/** One dispatch: a worktree, then a pi turn to its end. @returns its wall ms and where it ran. */
async function dispatchTurn(repo: string, manager: WorktreeManager, supervisor: WorkerSupervisor): Promise<{ ms: number; host: string | null }> {
  const id = `bench-${++seq}`;
  const t0 = process.hrtime.bigint();
  const wt = await manager.create({ id, baseBranch: 'main' });
  const result = await supervisor.runTurn({
    taskId: id,
    orderId: `bench:${id}:dispatch`,
    harness: 'pi',
    purpose: 'implement',
    role: 'implement',
    readOnly: false,
    cwd: wt.path,
    prompt: `[polly task=${id} role=implement] benchmark turn`,
    resumeSessionId: null,
    model: null,
    gateContext: { repoRoot: repo, worktree: wt.path, branch: wt.branch, defaultBranch: 'main', home: homedir() },
    env: { [BENCH_KEY_ENV]: 'bench-dummy-key', PORT: String(wt.port) },
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (result.status !== 'ok') throw new Error(`bench: turn of ${id} ended ${result.status}: ${result.message ?? ''}`);
  return { ms, host: result.host ?? null };
}

/** Run the host bench (see the module doc): prints its report lines on stdout and returns them. */
export async function runHostBench(args: HostBenchArgs): Promise<string[]> {
  const root = realpathSync(mkdtempSync(join(args.dir, 'polly-bench-host-')));
  let model: ScriptedModelServer | null = null;
  let hosts: SshHosts | null = null;
  try {
    process.stderr.write(`generating a repository of ${args.files} files and starting two loopback sshd hosts …\n`);
    const repo = generateBenchRepo(root, args.files, { origin: true });
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b' }]);
    model = await startScriptedModelServer({ script: parseModelScript(BENCH_SCRIPT) });
    const git = createGitRunner({ env: BENCH_GIT_ENV, timeoutMs: 600_000 });
    const manager = createWorktreeManager({ repoRoot: repo, git });
    const base: PollyConfig = structuredClone(DEFAULT_CONFIG);
    base.workers.pi = { command: 'pi', model: 'scripted', provider: null, base_url: `${model.url}/v1`, api: 'openai-completions', api_key_env: BENCH_KEY_ENV };
    const remote: PollyConfig = structuredClone(base);
    const perHost = Math.max(1, Math.ceil(args.concurrency / 2));
    remote.workers.hosts = hosts.hosts.map((h) => ({ name: h.name, ssh: h.name, port: null, capacity: perHost, harnesses: ['pi'], dir: h.dir }));
    remote.workers.ssh_config = hosts.sshConfig;
    const store = createFileRegistryStore(join(repo, '.polly'));
    const local = createWorkerSupervisor({ repoRoot: repo, store, config: base, stateRoot: join(repo, '.polly', 'workers'), pollMs: 20, gateJournalPath: null });
    const onHosts = createWorkerSupervisor({ repoRoot: repo, store, config: remote, stateRoot: join(repo, '.polly', 'workers'), pollMs: 20, gateJournalPath: null });

    // Warm-up, untimed: the runners, the page cache, each host's mirror and first push.
    await dispatchTurn(repo, manager, local);
    const warm = await Promise.all([dispatchTurn(repo, manager, onHosts), dispatchTurn(repo, manager, onHosts)]);
    if (warm.some((w) => w.host === null)) throw new Error(`bench: a remote turn ran here (${JSON.stringify(warm)}): check the hosts with polly hosts check`);

    const load0 = loadavg()[0]!;
    const single = { local: [] as number[], remote: [] as number[] };
    for (let r = 0; r < args.rounds; r++) {
      const pair = r % 2 === 0 ? (['local', 'remote'] as const) : (['remote', 'local'] as const);
      for (const side of pair) single[side].push((await dispatchTurn(repo, manager, side === 'local' ? local : onHosts)).ms);
    }
    const many = { local: [] as number[], remote: [] as number[] };
    const spread: Record<string, number> = {};
    const concRounds = Math.max(1, Math.min(3, args.rounds));
    for (let r = 0; r < concRounds; r++) {
      const pair = r % 2 === 0 ? (['local', 'remote'] as const) : (['remote', 'local'] as const);
      for (const side of pair) {
        const t0 = process.hrtime.bigint();
        const done = await Promise.all(Array.from({ length: args.concurrency }, () => dispatchTurn(repo, manager, side === 'local' ? local : onHosts)));
        many[side].push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (side === 'remote') for (const d of done) spread[d.host ?? 'here'] = (spread[d.host ?? 'here'] ?? 0) + 1;
      }
    }
    const load1 = loadavg()[0]!;
    const f = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
    const ratio1 = median(single.remote) / median(single.local);
    const ratioC = median(many.remote) / median(many.local);
    const lines = [
      `bench dispatch --host — ${args.files} files, 2 loopback sshd hosts (capacity ${perHost} each), ${cpus().length} cores`,
      'dispatch = WorktreeManager.create() + a pi turn to its result (supervisor, runner, gate, sandbox, scripted model)',
      '',
      `single (median of ${args.rounds})`,
      `  local dispatch               ${f(median(single.local))}`,
      `  remote dispatch              ${f(median(single.remote))}   (+${(median(single.remote) - median(single.local)).toFixed(0)} ms)`,
      `  ratio remote / local         ${ratio1.toFixed(2)}×   (target ≤ 1.50×)`,
      '',
      `${args.concurrency} concurrent (wall clock, median of ${concRounds})`,
      `  ${args.concurrency} local                      ${f(median(many.local))}`,
      `  ${args.concurrency} over 2 hosts               ${f(median(many.remote))}   (turns per host: ${Object.entries(spread)
        .map(([h, n]) => `${h} ${n}`)
        .join(', ')})`,
      `  ratio hosts / local          ${ratioC.toFixed(2)}×   (target < 1.00×; loopback hosts share this machine's cores)`,
      '',
      `load average (1 min) at start / end: ${load0.toFixed(1)} / ${load1.toFixed(1)} on ${cpus().length} cores`,
    ];
    // Printed before the hosts are stopped: removing their users and files takes minutes on a loaded disk.
    process.stdout.write(`${lines.join('\n')}\n`);
    local.stop?.();
    onHosts.stop?.();
    return lines;
  } finally {
    process.stderr.write('stopping the hosts (removing their users and files) …\n');
    await model?.close();
    await hosts?.stop();
    rmSync(root, { recursive: true, force: true });
  }
}
