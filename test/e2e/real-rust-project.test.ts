/**
 * A real Rust crate through `polly run`, two vendors, and a human who merges (issue 35 item 8).
 *
 * The project: the **fnv crate 1.0.7** (Apache-2.0/MIT, by Alex Crichton, in servo; the
 * Fowler–Noll–Vo hasher rustc itself used, with hundreds of millions of downloads), as Debian
 * ships its sources in the binary package **librust-fnv-dev 1.0.7-1** (bookworm, `amd64`; source
 * package rust-fnv; .deb SHA-256
 * 906cc04d72bbbb03e1439c56aa5c66356fee07a27716484623ba22754431d17f), fetched at test time through
 * test/helpers/real-projects.ts (Debian's archive via apt's own downloader, cached outside the
 * repository; no network is a failure, not a skip). Why this one:
 * - real and tiny: one 367-line lib.rs with its own unit test (the published FNV-1a test vectors)
 *   and doc tests, so a cold `cargo test` takes a few seconds;
 * - no dependencies of any kind (no optional, dev or build dependencies: Cargo puts those in the
 *   lockfile too, and offline it could not resolve them), so `cargo test --offline` runs in Polly's
 *   network-less sandbox with Debian's cargo (1.65, rustc 1.63) and no registry;
 * - its own .gitignore ignores `target` and `Cargo.lock`: every `cargo test` in a worktree leaves
 *   ignored build output there, the case that broke Polly's staging (issue 35 item 1); the test
 *   asserts it is in the worktree and not on the PR branch.
 *
 * The plan (test/fixtures/real-rust-project/): pi derives Clone and Debug for FnvHasher, reviewed
 * by Claude Code; Claude Code adds `fnv::hash(&[u8])`, reviewed by pi; both change lib.rs, in
 * hunks far enough apart that git merges the second after the first. Acceptance is the crate's
 * `cargo test --offline`. Then the human merges the first PR with a merge commit, `polly pr sync`
 * (the task is done, its worktree removed after a backup, the second PR checked on the moved
 * base), squashes the second, syncs again; nothing of the repository is left running.
 * `polly run` runs as a developer whose cargo is rustup's proxy under HOME (`~/.cargo/bin`, a
 * script that runs the system cargo and says so): the checks must run that one, through Polly's
 * read-only mount of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { humanMerge } from '../helpers/human-merge.js';
import { fetchDebianBinary, unpackDebianBinary } from '../helpers/real-projects.js';
import { polly, readRegistry, runAsync, waitForNoProcessesIn } from '../helpers/real-project-run.js';
import { HOME_TOOLCHAIN_MARKER, prSync, requireSystemTool, runWithSystemToolchain, type ToolchainProjectRun } from '../helpers/real-project-toolchain.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { hasSystemPackages } from '../helpers/system-packages.js';

// Runs a Rust crate's tests in Polly's sandbox: skipped and listed without bubblewrap, cargo, a failure under CI=true (test/helpers/system-packages.ts).
const READY = hasSystemPackages(['bubblewrap', 'cargo'], import.meta.url);

const PIN = {
  package: 'librust-fnv-dev',
  source: 'rust-fnv',
  version: '1.0.7-1',
  architecture: 'amd64',
  sha256: '906cc04d72bbbb03e1439c56aa5c66356fee07a27716484623ba22754431d17f',
};
/** Where the .deb puts the crate's sources. */
const CRATE_DIR = 'usr/share/cargo/registry/fnv-1.0.7';
const ACCEPTANCE = 'cargo test --offline';
const FIXTURES = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'test', 'fixtures', 'real-rust-project');

/** The `test result: ok. N passed; …` counts of cargo test's output, in order (unit tests, then doc tests). */
function passedCounts(output: string): number[] {
  return [...output.matchAll(/^test result: ok\. (\d+) passed; 0 failed/gm)].map((m) => Number(m[1]));
}

describe.skipIf(!READY)(`polly run on a real Rust crate (fnv from ${PIN.package} ${PIN.version}), two vendors, a human merge`, () => {
  let p: ToolchainProjectRun | null = null;

  beforeAll(async () => {
    await requireSystemTool('cargo', ['--version'], 'cargo');
    const deb = await fetchDebianBinary(PIN);
    p = await runWithSystemToolchain({
      prefix: 'polly-real-rust-',
      populate: async (dir) => {
        const unpacked = join(dir, '..', 'unpacked');
        await unpackDebianBinary(deb, unpacked);
        for (const name of readdirSync(join(unpacked, CRATE_DIR))) renameSync(join(unpacked, CRATE_DIR, name), join(dir, name));
      },
      message: `fnv 1.0.7 as Debian ships it (${PIN.package} ${PIN.version})`,
      fixtures: FIXTURES,
      pristineTest: ['cargo', 'test', '--offline'],
      // The developer's cargo is rustup's proxy in ~/.cargo/bin (issue 35: "one of them with its toolchain installed under HOME").
      homeToolchain: { bin: '.cargo/bin', tools: ['cargo'] },
    });
    process.stderr.write(`[real-rust-project] polly run took ${(p.runMs / 1000).toFixed(1)} s\n`);
  }, 300_000);

  afterAll(async () => {
    await p?.server.close();
    await stopTrackedBrains();
    if (p) rmSync(p.project.root, { recursive: true, force: true });
  });

  const run_ = () => ({ ...p!, ...p!.project });
  const originGit = (args: string[]) => run_().originGit(args);
  const task = (key: 't1' | 't2') => {
    const t = Object.values(readRegistry(run_().repo).tasks).find((x) => x.id.endsWith(`-${key}`));
    expect(t, `task ${key} in the registry`).toBeDefined();
    return t!;
  };

  it('polly init proposes cargo test and no setup for a crate, with no warning when cargo is the system one', () => {
    const { init, repo } = run_();
    expect(init.stderr).toContain('detected rust (Cargo.toml)');
    expect(init.stderr).not.toMatch(/warning/i);
    const config = parse(readFileSync(join(repo, '.polly', 'config.yaml'), 'utf8')) as { acceptance: { commands: string[] }; worktrees: { setup: string | null } };
    expect(config.acceptance.commands).toEqual(['cargo test']);
    expect(config.worktrees.setup).toBeNull();
  });

  it('polly run exits 0 with both tasks ready, each with one ready PR; every run replays through its workflow', async () => {
    const { result, repo, env } = run_();
    expect(result.code, `polly run failed:\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
    const out = JSON.parse(result.stdout) as { admitted: boolean; status: string; tasks: unknown[] };
    expect(out).toMatchObject({ admitted: true, status: 'done' });
    expect(out.tasks).toHaveLength(2);
    const list = await polly(['pr', 'list', '--json'], repo, env, 30_000);
    expect(list.code, list.stderr).toBe(0);
    const prs = JSON.parse(list.stdout) as Array<{ number: number; state: string; head: string; base: string; headCommit: string; taskId: string }>;
    for (const key of ['t1', 't2'] as const) {
      const t = task(key);
      expect(t.status).toBe('ready');
      expect(prs.filter((pr) => pr.taskId === t.id).map((pr) => [pr.state, pr.head, pr.base, pr.headCommit, pr.number])).toEqual([
        ['ready', `polly/${t.id}`, 'main', t.headCommit, t.pr?.number],
      ]);
    }
    expect(prs).toHaveLength(2);
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(2);
  });

  it("ran the crate's own cargo test --offline as each task's acceptance, green, with the new tests in it, with the developer's cargo under HOME", () => {
    const pristine = passedCounts(run_().pristine.stdout + run_().pristine.stderr);
    expect(pristine).toEqual([1, 2]); // basic_tests; the two doc examples
    // t1 adds a unit test; t2 a unit test and a doc test.
    for (const [key, counts] of [
      ['t1', [2, 2]],
      ['t2', [2, 3]],
    ] as const) {
      const t = task(key);
      expect(t.acceptance.commands).toEqual([ACCEPTANCE]);
      expect(t.checks.map((c) => [c.command, c.exitCode, c.timedOut])).toEqual([[ACCEPTANCE, 0, false]]);
      expect(passedCounts(t.checks[0]!.output), t.checks[0]!.output).toEqual(counts);
      // Polly's checks sandbox ran the developer's cargo from ~/.cargo/bin (mounted read-only), not the system's first.
      expect(t.checks[0]!.output.trimEnd().endsWith(`${HOME_TOOLCHAIN_MARKER} cargo`), t.checks[0]!.output.slice(-300)).toBe(true);
    }
  });

  it('two vendors implemented, another vendor reviewed each: the real CLIs played the scripted sessions', () => {
    expect([task('t1').worker, task('t2').worker]).toEqual(['pi', 'claude-code']);
    expect(task('t1').reviews.map((r) => [r.reviewer, r.blocking.length])).toEqual([['claude-code', 0]]);
    expect(task('t2').reviews.map((r) => [r.reviewer, r.blocking.length])).toEqual([['pi', 0]]);
    const served = new Set(
      run_()
        .server.requests.map((r) => r.session)
        .filter((s) => s !== null),
    );
    expect([...served].sort()).toEqual(['implement-clone-debug', 'implement-hash-fn', 'review-clone-debug', 'review-hash-fn']);
  });

  it('each PR branch on the origin is one commit changing lib.rs only: the ignored target/ and Cargo.lock stayed in the worktree', () => {
    const { initialMain } = run_();
    const expected = { t1: '#[derive(Clone, Debug)]\npub struct FnvHasher(u64);', t2: 'pub fn hash(bytes: &[u8]) -> u64 {' };
    for (const key of ['t1', 't2'] as const) {
      const t = task(key);
      // The worker's and Polly's cargo test built there: ignored output (the crate's .gitignore).
      expect(existsSync(join(t.worktree!, 'target')) && existsSync(join(t.worktree!, 'Cargo.lock'))).toBe(true);
      const tip = originGit(['rev-parse', `refs/heads/polly/${t.id}`]);
      expect(tip).toBe(t.headCommit);
      expect(originGit(['rev-list', '--count', `main..polly/${t.id}`])).toBe('1');
      expect(originGit(['rev-parse', `${tip}^`])).toBe(initialMain);
      expect(originGit(['log', '-1', '--format=%B', tip])).toContain(`Polly-Task: ${t.id}`);
      expect(originGit(['diff', '--name-status', initialMain, tip])).toBe('M\tlib.rs');
      expect(
        originGit(['ls-tree', '-r', '--name-only', tip])
          .split('\n')
          .filter((f) => f === 'Cargo.lock' || f.startsWith('target/')),
      ).toEqual([]);
      expect(originGit(['show', `${tip}:lib.rs`])).toContain(expected[key]);
    }
    expect(originGit(['rev-parse', 'refs/heads/main'])).toBe(initialMain);
  });

  it('the human merges both PRs with git; after each polly pr sync the task is done and its worktree removed after a backup; nothing is left running', async () => {
    const { repo, env, testRepo, root: dir } = run_();
    /** The PR's branch as the origin has it, fetched as a human would before merging. */
    const fetchPr = (t: { branch: string | null }) => {
      git(repo, ['fetch', '-q', 'origin', t.branch!]);
      return git(repo, ['rev-parse', 'FETCH_HEAD']);
    };
    const t1 = task('t1');
    const t2 = task('t2');
    expect(existsSync(t1.worktree!) && existsSync(t2.worktree!)).toBe(true);

    const merge1 = humanMerge(testRepo, fetchPr(t1), 'merge', { message: `Merge PR #${t1.pr!.number}: ${t1.title}` });
    const sync1 = await prSync(repo, env);
    expect(sync1.errors).toEqual([]);
    expect(sync1.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual([[t1.id, merge1]]);
    // Both PRs change lib.rs: the second, checked on its head merged with the moved main, is still green.
    expect(sync1.localChecks?.checked.map((c) => [c.number, c.conclusion, c.baseCommit])).toEqual([[t2.pr!.number, 'success', merge1]]);
    expect(task('t1')).toMatchObject({ status: 'done', pr: { state: 'merged' } });
    expect(task('t2')).toMatchObject({ status: 'ready', pr: { state: 'ready' } });
    expect(existsSync(t1.worktree!)).toBe(false);

    const merge2 = humanMerge(testRepo, fetchPr(t2), 'squash', { message: `${t2.title} (#${t2.pr!.number})` });
    const sync2 = await prSync(repo, env);
    expect(sync2.errors).toEqual([]);
    expect(sync2.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual([[t2.id, merge2]]);

    for (const t of [t1, t2]) {
      const after = task(t.id.endsWith('-t1') ? 't1' : 't2');
      expect(after).toMatchObject({ status: 'done', pr: { state: 'merged' } });
      expect(after.backupRefs).toHaveLength(1);
      expect(git(repo, ['merge-base', '--is-ancestor', t.headCommit!, after.backupRefs[0]!])).toBe('');
      expect(existsSync(t.worktree!)).toBe(false);
    }
    expect(git(repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)).toHaveLength(1);
    const worktreesDir = join(repo, '.worktrees');
    expect(existsSync(worktreesDir) ? readdirSync(worktreesDir) : []).toEqual([]);
    expect(originGit(['rev-list', '--first-parent', 'main']).split('\n')).toEqual([merge2, merge1, run_().initialMain]);
    const merged = await runAsync('cargo', ['test', '--offline'], repo, { ...gitTestEnv(), ...env }, 120_000);
    expect(merged.code, merged.stdout + merged.stderr).toBe(0);
    expect(passedCounts(merged.stdout + merged.stderr)).toEqual([3, 3]);

    const left = await waitForNoProcessesIn(dir, 15_000);
    expect([...left.values()], 'processes of the repository still running').toEqual([]);
  }, 240_000);
});
