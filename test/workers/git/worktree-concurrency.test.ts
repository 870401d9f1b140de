/**
 * Git admin operations under contention (issue 15, item 4): every worktree add/list/prune/remove
 * runs under the per-repository admin lock, and a git failure caused by another git process's
 * lock is retried with a bound instead of failing the task. Real git, real processes, a real CPU
 * hog.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isPollyError, PollyError } from '../../../brain/core/errors.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { isTransientGitError, isTransientGitStderr, retryTransientGit } from '../../../workers/git/git-retry.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const ISOLATED = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
const DIST_MANAGER = resolve('dist/workers/git/worktree-manager.js');
const DIST_GIT = resolve('dist/workers/git/git.js');

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.pid && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
});

/**
 * `n` processes spinning on the CPU until killed (the artificial load of the acceptance test). Each
 * also exits once orphaned (its parent pid changes): a killed test run must not leave the machine
 * loaded for hours (it did: two hogs outlived an interrupted run and skewed every later figure).
 */
const HOG = 'const p = process.ppid; for (let i = 0; ; i++) if ((i & 0xfffff) === 0 && process.ppid !== p) process.exit(0);';
function cpuHog(n: number): void {
  for (let i = 0; i < n; i++) children.push(spawn(process.execPath, ['-e', HOG], { stdio: 'ignore' }));
}

describe('transient git failures', () => {
  it('recognises the lock races git reports (captured stderr) and nothing else', () => {
    expect(isTransientGitStderr("fatal: failed to read '/r/.git/worktrees/t3/locked': No such file or directory")).toBe(true);
    expect(isTransientGitStderr("fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running")).toBe(true);
    expect(isTransientGitStderr("error: cannot lock ref 'refs/heads/polly/t1': Unable to create '/r/.git/refs/heads/polly/t1.lock': File exists.")).toBe(true);
    expect(isTransientGitStderr('error: could not lock config file .git/config: File exists')).toBe(true);
    expect(isTransientGitStderr("fatal: a branch named 'polly/t1' already exists")).toBe(false);
    expect(isTransientGitStderr('fatal: invalid reference: nope')).toBe(false);
    const timedOut = new PollyError('git_failed', 'x', { details: { stderr: "Unable to create '/r/.git/index.lock': File exists", timedOut: true } });
    expect(isTransientGitError(timedOut)).toBe(false);
  });

  it('retries a transient failure at most `attempts` times and a permanent one never', async () => {
    const transient = new PollyError('git_failed', 'x', { details: { stderr: "Unable to create '/r/.git/index.lock': File exists" } });
    let calls = 0;
    const error = await retryTransientGit(
      async () => {
        calls++;
        throw transient;
      },
      { attempts: 3, baseDelayMs: 1 },
    ).catch((e: unknown) => e);
    expect(error).toBe(transient);
    expect(calls).toBe(3);
    calls = 0;
    const permanent = new PollyError('git_failed', 'x', { details: { stderr: 'fatal: bad revision' } });
    await expect(
      retryTransientGit(
        async () => {
          calls++;
          throw permanent;
        },
        { baseDelayMs: 1 },
      ),
    ).rejects.toBe(permanent);
    expect(calls).toBe(1);
  });

  it('a worktree creation waits out a ref lock another git holds, instead of failing', async () => {
    const repo = createTestRepo();
    const lockFile = join(repo.dir, '.git', 'refs', 'heads', 'polly', 't1.lock');
    const events: string[] = [];
    // The other git finishes once Polly has been refused by its lock and retries.
    const journal = (kind: string) => {
      events.push(kind);
      if (kind === 'worktree.git_retry') rmSync(lockFile, { force: true });
    };
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: ISOLATED }), journal });
    // Another git (not Polly) is creating refs/heads/polly/t1 right now: its lock file exists.
    mkdirSync(dirname(lockFile), { recursive: true });
    writeFileSync(lockFile, '');
    const created = await manager.create({ id: 't1' });
    expect(existsSync(created.path)).toBe(true);
    expect(events).toContain('worktree.git_retry');
  });

  it('listing takes the admin lock: while another process holds it, list() waits and then gives up with lock_timeout', async () => {
    // The race the rounds under load below guard against (a list reading .git/worktrees/<x>/locked
    // while another process's add writes it) is rare on a given git: with list() unlocked and no
    // retries, 10 rounds of them passed on git 2.39.5. This check fails on such a list every time.
    const repo = createTestRepo();
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: ISOLATED }), lockTimeoutMs: 300 });
    expect(await manager.list()).toHaveLength(1); // the lock is free: the main checkout is listed
    // Another process holds the lock (proper-lockfile's lock directory, fresh, so not stale).
    mkdirSync(join(repo.dir, '.git', 'polly-admin.lock'));
    const error = await manager.list().catch((e: unknown) => e);
    expect(isPollyError(error, 'lock_timeout'), `list() under another's lock gave ${error instanceof Error ? error.message : JSON.stringify(error)}`).toBe(true);
  });

  it('a lock that stays is a failure after the bounded retries, naming the lock file', async () => {
    const repo = createTestRepo();
    const lockFile = join(repo.dir, '.git', 'refs', 'heads', 'polly', 't2.lock');
    mkdirSync(dirname(lockFile), { recursive: true });
    writeFileSync(lockFile, '');
    let retries = 0;
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: ISOLATED }), journal: (k) => void (k === 'worktree.git_retry' && retries++) });
    const error = await manager.create({ id: 't2' }).catch((e: unknown) => e);
    expect(isPollyError(error, 'git_failed')).toBe(true);
    expect(String((error as Error).message)).toContain('t2.lock');
    expect(retries).toBe(5);
  });
});

/**
 * A child process (the built manager in dist/) doing `n` dispatches at once, like
 * brain/task-tools/dispatch.ts ensureWorktree: list the worktrees, then create the task's.
 */
function dispatchInChild(repoDir: string, ids: string[]): Promise<{ code: number; stderr: string }> {
  const script = `
    const { createWorktreeManager } = await import(${JSON.stringify(DIST_MANAGER)});
    const { createGitRunner } = await import(${JSON.stringify(DIST_GIT)});
    const ids = ${JSON.stringify(ids)};
    const results = await Promise.allSettled(ids.map(async (id) => {
      const m = createWorktreeManager({ repoRoot: ${JSON.stringify(repoDir)}, git: createGitRunner({ env: ${JSON.stringify(ISOLATED)} }) });
      const listed = await m.list();
      if (listed.some((w) => w.taskId === id)) throw new Error('already there: ' + id);
      await m.create({ id });
    }));
    const failed = results.filter((r) => r.status === 'rejected');
    for (const f of failed) process.stderr.write(String(f.reason && f.reason.message || f.reason) + '\\n');
    process.exit(failed.length ? 1 : 0);`;
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: gitTestEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += String(d)));
    child.on('exit', (code) => done({ code: code ?? -1, stderr }));
  });
}

/**
 * Rounds of 8 concurrent creations. Each round's worktrees stay, so later lists read more admin
 * files. 3, not 10: the lock on list is proven deterministically above (10 rounds did not catch an
 * unlocked list on git 2.39.5 either), and the 2 CPU hogs also slow every other test file running
 * alongside in the suite (10 rounds: 153-210 s at load 11-14; 3 rounds: ~60-80 s).
 */
const ROUNDS = 3;

describe.skipIf(process.env.POLLY_SKIP_LOAD === '1')('eight concurrent dispatches under load', () => {
  it(`${ROUNDS} rounds of 8 worktree creations (4 here, 4 in another process) under a CPU hog: no failure from a git race`, { timeout: 600_000 }, async () => {
    expect(existsSync(DIST_MANAGER), 'run npm run build first: the other process uses dist/').toBe(true);
    const repo = createTestRepo({ 'README.md': '# load\n', 'src/a.txt': 'a\n'.repeat(200), 'src/b.txt': 'b\n'.repeat(200) });
    cpuHog(2);
    const failures: string[] = [];
    const started = Date.now();
    // Each round's worktrees stay: every later list reads more `.git/worktrees/<x>/locked` files while
    // other adds run (the race this guards against). Removing all 8 after every round (10 × 8
    // backups and removes) took ~60% of the time; concurrent removal is now exercised once, at the end.
    for (let round = 0; round < ROUNDS; round++) {
      const here = [0, 1, 2, 3].map((i) => `r${round}-a${i}`);
      const there = [0, 1, 2, 3].map((i) => `r${round}-b${i}`);
      const child = dispatchInChild(repo.dir, there);
      const local = await Promise.allSettled(
        here.map(async (id) => {
          const m = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: ISOLATED }) });
          const listed = await m.list();
          expect(listed.some((w) => w.taskId === id)).toBe(false);
          return m.create({ id });
        }),
      );
      for (const r of local) if (r.status === 'rejected') failures.push(`round ${round}: ${isPollyError(r.reason) ? r.reason.message : String(r.reason)}`);
      const c = await child;
      if (c.code !== 0) failures.push(`round ${round} (other process): ${c.stderr.trim()}`);
    }
    const m = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: ISOLATED }) });
    const all = Array.from({ length: ROUNDS }, (_, round) => [0, 1, 2, 3].flatMap((i) => [`r${round}-a${i}`, `r${round}-b${i}`])).flat();
    expect(
      (await m.list())
        .map((w) => w.taskId)
        .filter((id) => id !== null)
        .sort(),
    ).toEqual([...all].sort());
    // Tear one round down concurrently, still under the hogs: remove is an admin operation too (backup, then worktree remove).
    const last = all.slice(-8);
    const removed = await Promise.allSettled(last.map((id) => m.remove({ id, reason: 'test round done' })));
    for (const r of removed) if (r.status === 'rejected') failures.push(`remove: ${String((r.reason as Error).message)}`);
    console.log(`[worktree-concurrency] ${ROUNDS} rounds × 8 creations, then 8 concurrent removals, under 2 CPU hogs: ${Date.now() - started} ms`);
    expect(failures).toEqual([]);
    expect(
      (await m.list())
        .map((w) => w.taskId)
        .filter((id) => id !== null)
        .sort(),
    ).toEqual(all.slice(0, -8).sort());
  });
});
