/**
 * A real Go module through `polly run`, two vendors, and a human who merges (issue 35 item 8).
 *
 * The project: **github.com/google/go-cmp 0.5.9** (BSD-3-Clause, by the Go authors; the
 * comparison library of countless Go test suites), as Debian ships its sources in the binary
 * package **golang-github-google-go-cmp-dev 0.5.9-1** (bookworm, `all`; source package
 * golang-github-google-go-cmp; .deb SHA-256
 * b68bd919daa7c1bdf02abfb68894e29e532f19b03b68c8615f50626c48f553b6), fetched at test time through
 * test/helpers/real-projects.ts (Debian's archive via apt's own downloader, cached outside the
 * repository; no network is a failure, not a skip). Why this one:
 * - real and small: 5 packages, ~8,000 lines, with its own test suite shipped (the `-dev` package
 *   keeps every _test.go and cmp/testdata/);
 * - no dependencies at all (its go.mod requires nothing), so `go test ./...` runs offline in
 *   Polly's sandbox with Debian's Go (1.19), in ~10 s with a cold build cache;
 * - a package layout (cmp/, cmp/cmpopts/, internal/) where two tasks naturally touch different files.
 *
 * The plan (test/fixtures/real-go-project/): Claude Code backports upstream's
 * EquateComparable (go-cmp 0.6.0) into cmp/cmpopts/equate.go, reviewed by Codex; Codex adds
 * EquateFold in a new file, reviewed by Claude Code; acceptance is the module's `go test ./...`.
 * Then the human merges the first PR with a merge commit and squashes the second, `polly pr sync`
 * marks both tasks done and removes their worktrees after a backup; nothing of the repository is
 * left running.
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
import { prSync, requireSystemTool, runWithSystemToolchain, type ToolchainProjectRun } from '../helpers/real-project-toolchain.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { hasSystemPackages } from '../helpers/system-packages.js';

// Runs a Go module's tests in Polly's sandbox: skipped and listed without bubblewrap, golang-go, a failure under CI=true (test/helpers/system-packages.ts).
const READY = hasSystemPackages(['bubblewrap', 'golang-go'], import.meta.url);

const PIN = {
  package: 'golang-github-google-go-cmp-dev',
  source: 'golang-github-google-go-cmp',
  version: '0.5.9-1',
  architecture: 'all',
  sha256: 'b68bd919daa7c1bdf02abfb68894e29e532f19b03b68c8615f50626c48f553b6',
};
/** Where the .deb puts the module's sources. */
const MODULE_DIR = 'usr/share/gocode/src/github.com/google/go-cmp';
const ACCEPTANCE = 'go test ./...';
const FIXTURES = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'test', 'fixtures', 'real-go-project');

describe.skipIf(!READY)(`polly run on a real Go module (go-cmp from ${PIN.package} ${PIN.version}), two vendors, a human merge`, () => {
  let p: ToolchainProjectRun | null = null;

  beforeAll(async () => {
    await requireSystemTool('go', ['version'], 'golang-go');
    const deb = await fetchDebianBinary(PIN);
    p = await runWithSystemToolchain({
      prefix: 'polly-real-go-',
      populate: async (dir) => {
        const unpacked = join(dir, '..', 'unpacked');
        await unpackDebianBinary(deb, unpacked);
        for (const name of readdirSync(join(unpacked, MODULE_DIR))) renameSync(join(unpacked, MODULE_DIR, name), join(dir, name));
      },
      message: `go-cmp 0.5.9 as Debian ships it (${PIN.package} ${PIN.version})`,
      fixtures: FIXTURES,
      pristineTest: ['go', 'test', './...'],
    });
    process.stderr.write(`[real-go-project] polly run took ${(p.runMs / 1000).toFixed(1)} s\n`);
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

  it('polly init proposes go test ./... and no setup for a Go module', () => {
    const { init, repo } = run_();
    expect(init.stderr).toContain('detected go (go.mod)');
    expect(init.stderr).not.toMatch(/warning/i);
    const config = parse(readFileSync(join(repo, '.polly', 'config.yaml'), 'utf8')) as { acceptance: { commands: string[] }; worktrees: { setup: string | null } };
    expect(config.acceptance.commands).toEqual([ACCEPTANCE]);
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

  it("ran the module's own go test ./... as each task's acceptance, green, with the new tests in it", () => {
    for (const [key, test] of [
      ['t1', 'TestEquateComparable'],
      ['t2', 'TestEquateFold'],
    ] as const) {
      const t = task(key);
      expect(t.acceptance.commands).toEqual([ACCEPTANCE]);
      expect(t.checks.map((c) => [c.command, c.exitCode, c.timedOut])).toEqual([[ACCEPTANCE, 0, false]]);
      for (const pkg of ['cmp', 'cmp/cmpopts', 'cmp/internal/diff', 'cmp/internal/value'])
        expect(t.checks[0]!.output).toMatch(new RegExp(`^ok\\s+github\\.com/google/go-cmp/${pkg}\\s`, 'm'));
      expect(readFileSync(join(t.worktree!, 'cmp', 'cmpopts', key === 't1' ? 'equate_comparable_test.go' : 'fold_test.go'), 'utf8')).toContain(`func ${test}(`);
    }
  });

  it('two vendors implemented, another vendor reviewed each: the real CLIs played the scripted sessions', () => {
    expect([task('t1').worker, task('t2').worker]).toEqual(['claude-code', 'codex']);
    expect(task('t1').reviews.map((r) => [r.reviewer, r.blocking.length])).toEqual([['codex', 0]]);
    expect(task('t2').reviews.map((r) => [r.reviewer, r.blocking.length])).toEqual([['claude-code', 0]]);
    const served = new Set(
      run_()
        .server.requests.map((r) => r.session)
        .filter((s) => s !== null),
    );
    expect([...served].sort()).toEqual(['implement-equate-comparable', 'implement-equate-fold', 'review-equate-comparable', 'review-equate-fold']);
  });

  it('each PR branch on the origin is one commit on the published main carrying its change', () => {
    const { initialMain } = run_();
    const expected = {
      t1: {
        files: ['A\tcmp/cmpopts/equate_comparable_test.go', 'M\tcmp/cmpopts/equate.go'],
        path: 'cmp/cmpopts/equate.go',
        text: 'func EquateComparable(typs ...interface{}) cmp.Option {',
      },
      t2: { files: ['A\tcmp/cmpopts/fold.go', 'A\tcmp/cmpopts/fold_test.go'], path: 'cmp/cmpopts/fold.go', text: 'return cmp.Comparer(strings.EqualFold)' },
    };
    for (const key of ['t1', 't2'] as const) {
      const t = task(key);
      const tip = originGit(['rev-parse', `refs/heads/polly/${t.id}`]);
      expect(tip).toBe(t.headCommit);
      expect(originGit(['rev-list', '--count', `main..polly/${t.id}`])).toBe('1');
      expect(originGit(['rev-parse', `${tip}^`])).toBe(initialMain);
      expect(originGit(['log', '-1', '--format=%B', tip])).toContain(`Polly-Task: ${t.id}`);
      expect(originGit(['diff', '--name-status', initialMain, tip]).split('\n').sort()).toEqual(expected[key].files);
      expect(originGit(['show', `${tip}:${expected[key].path}`])).toContain(expected[key].text);
    }
    // Polly never merges: main on the origin is the published commit alone.
    expect(originGit(['rev-parse', 'refs/heads/main'])).toBe(initialMain);
  });

  it('the human merges one PR with a merge commit and squashes the other; one polly pr sync marks both done and removes their worktrees after a backup; nothing is left running', async () => {
    const { repo, env, testRepo, root: dir } = run_();
    /** The PR's branch as the origin has it, fetched as a human would before merging. */
    const fetchPr = (t: { branch: string | null }) => {
      git(repo, ['fetch', '-q', 'origin', t.branch!]);
      return git(repo, ['rev-parse', 'FETCH_HEAD']);
    };
    const t1 = task('t1');
    const t2 = task('t2');
    expect(existsSync(t1.worktree!) && existsSync(t2.worktree!)).toBe(true);

    // (The second PR's check on a base moved by the first merge is real-rust-project's, where both PRs change one file.)
    const merge1 = humanMerge(testRepo, fetchPr(t1), 'merge', { message: `Merge PR #${t1.pr!.number}: ${t1.title}` });
    const merge2 = humanMerge(testRepo, fetchPr(t2), 'squash', { message: `${t2.title} (#${t2.pr!.number})` });
    const sync = await prSync(repo, env);
    expect(sync.errors).toEqual([]);
    expect(sync.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual([
      [t1.id, merge1],
      [t2.id, merge2],
    ]);
    expect(sync.localChecks?.checked).toEqual([]);

    for (const t of [t1, t2]) {
      const after = task(t.id.endsWith('-t1') ? 't1' : 't2');
      expect(after).toMatchObject({ status: 'done', pr: { state: 'merged' } });
      expect(after.backupRefs).toHaveLength(1);
      expect(git(repo, ['merge-base', '--is-ancestor', t.headCommit!, after.backupRefs[0]!])).toBe('');
      expect(existsSync(t.worktree!)).toBe(false);
    }
    // Only the main checkout is a worktree now, and the worktrees directory holds nothing.
    expect(git(repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)).toHaveLength(1);
    const worktreesDir = join(repo, '.worktrees');
    expect(existsSync(worktreesDir) ? readdirSync(worktreesDir) : []).toEqual([]);
    // main on the origin: the human's two commits on the published one, and green.
    expect(originGit(['rev-list', '--first-parent', 'main']).split('\n')).toEqual([merge2, merge1, run_().initialMain]);
    const merged = await runAsync('go', ['test', './cmp/cmpopts/'], repo, { ...gitTestEnv(), ...env }, 120_000);
    expect(merged.code, merged.stdout + merged.stderr).toBe(0);

    const left = await waitForNoProcessesIn(dir, 15_000);
    expect([...left.values()], 'processes of the repository still running').toEqual([]);
  }, 240_000);
});
