/**
 * `npm run bench -- local-forge [--prs N] [--rounds R] [--files F]`
 *
 * What one refresh of the local forge costs the Brain while its PRs wait for a human (the Brain
 * refreshes on every pass, brain/forge/local-forge.ts `refresh`): N (default 8) open draft PRs on a
 * generated repository of F (default 2 000) files with a bare `origin`, nothing moving. A refresh is
 * `listPullRequests()`: fetch, `ls-remote`, and merge detection per PR.
 *
 * Baseline, same process: a new forge for every refresh (nothing remembered: what every refresh
 * cost before open PRs whose head and base did not move were remembered as not merged). Ours: one
 * forge refreshed again and again (after its first refresh). Figures, median of R (default 7):
 * git processes per refresh, wall ms, and CPU ms of this process plus its reaped children (git),
 * read from /proc/self/stat (proc(5): utime, stime, cutime, cstime; Linux only).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalForge, type LocalForge } from '../brain/forge/local-forge.js';
import { createFileRegistryStore } from '../brain/registry/registry-store.js';
import { createGitRunner, type GitRunner } from '../workers/git/git.js';
import { BENCH_GIT_ENV, generateBenchRepo } from './bench-repo.js';

interface Args {
  prs: number;
  rounds: number;
  files: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { prs: 8, rounds: 7, files: 2000 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const value = Number(argv[i + 1]);
    const key = flag.replace(/^--/, '') as keyof Args;
    if (!(key in args)) throw new Error(`unknown flag "${flag}"; use --prs N, --rounds R, --files F`);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${flag} needs a positive integer, got "${argv[i + 1]}"`);
    args[key] = value;
  }
  return args;
}

/**
 * CPU ms of this process and its reaped children so far: /proc/self/stat fields 14–17 (utime, stime,
 * cutime, cstime), in clock ticks (USER_HZ, 100 on Linux). The command name (field 2) may hold
 * spaces, so fields are counted after its closing parenthesis.
 */
function cpuMs(): number {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(rest[i]), 0) * 10;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-bench-forge-')));
  try {
    const repo = generateBenchRepo(root, args.files, { origin: true });
    const env = {
      ...BENCH_GIT_ENV,
      GIT_AUTHOR_NAME: 'Bench',
      GIT_AUTHOR_EMAIL: 'bench@example.invalid',
      GIT_COMMITTER_NAME: 'Bench',
      GIT_COMMITTER_EMAIL: 'bench@example.invalid',
    };
    const inner = createGitRunner({ env });
    let calls = 0;
    const git: GitRunner = {
      ...inner,
      run(a, o) {
        calls += 1;
        return inner.run(a, o);
      },
    };
    const store = createFileRegistryStore(join(repo, '.polly'));
    const forge = (): LocalForge => createLocalForge({ repoRoot: repo, store, remote: 'origin', git });
    const opener = forge();
    for (let i = 1; i <= args.prs; i++) {
      const branch = `polly/t${i}`;
      await inner.run(['checkout', '-q', '-b', branch, 'main'], { cwd: repo });
      execFileSync('sh', ['-c', `echo change ${i} > src/m0/d0/f${i}.ts`], { cwd: repo });
      await inner.run(['commit', '-q', '-am', `task t${i}`], { cwd: repo });
      await opener.openDraftPullRequest({ head: branch, base: 'main', title: `Task t${i}`, body: '' });
    }
    await inner.run(['checkout', '-q', 'main'], { cwd: repo });

    const measure = async (f: LocalForge) => {
      const c0 = calls;
      const cpu0 = cpuMs();
      const t0 = performance.now();
      const open = await f.listPullRequests();
      if (open.length !== args.prs) throw new Error(`expected ${args.prs} open PRs, saw ${open.length}`);
      return { calls: calls - c0, ms: performance.now() - t0, cpu: cpuMs() - cpu0 };
    };
    const kept = forge();
    await measure(kept); // its first refresh examines every PR, as the baseline does each time
    const base = { calls: [] as number[], ms: [] as number[], cpu: [] as number[] };
    const ours = { calls: [] as number[], ms: [] as number[], cpu: [] as number[] };
    const load0 = loadavg()[0] as number;
    for (let r = 0; r < args.rounds; r++) {
      // ABBA: drifting load weighs on both sides alike.
      const order = r % 2 === 0 ? [false, true] : [true, false];
      for (const memo of order) {
        const m = await measure(memo ? kept : forge());
        const side = memo ? ours : base;
        side.calls.push(m.calls);
        side.ms.push(m.ms);
        side.cpu.push(m.cpu);
      }
    }
    const load1 = loadavg()[0] as number;
    const row = (name: string, s: typeof base) =>
      `  ${name.padEnd(34)}${String(median(s.calls)).padStart(6)}${median(s.ms).toFixed(0).padStart(10)}${median(s.cpu).toFixed(0).padStart(10)}`;
    process.stdout.write(
      [
        `bench local-forge — ${args.prs} open draft PRs, nothing moving, ${args.files} files, ${cpus().length} cores (median of ${args.rounds})`,
        `  ${''.padEnd(34)}${'git'.padStart(6)}${'ms'.padStart(10)}${'CPU ms'.padStart(10)}`,
        row('refresh, nothing remembered', base),
        row('refresh, unmoved PRs remembered', ours),
        `  ratio remembered / not: git ${(median(ours.calls) / median(base.calls)).toFixed(2)}×, wall ${(median(ours.ms) / median(base.ms)).toFixed(2)}×, CPU ${(median(ours.cpu) / Math.max(1, median(base.cpu))).toFixed(2)}×`,
        `load average (1 min) at start / end: ${load0.toFixed(1)} / ${load1.toFixed(1)}`,
        '',
      ].join('\n'),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench local-forge: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
