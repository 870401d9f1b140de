/**
 * Orchestration cases 2, 3, 4, 5, 6 (worktree deleted), 9, 10, 12, 13 and concurrent creates
 * (/shared/cases/orchestration.md), against real git repositories and real processes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { isPortFree } from '../../../workers/ports.js';
import { LOG_MAX_BYTES } from '../../../workers/proc/capped-log.js';
import { createWorktreeManager, type WorktreeManagerOptions } from '../../../workers/git/worktree-manager.js';
import { createRepoWithSubmodule, createTestRepo, git, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';

const ISOLATED = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

function setup(repo: TestRepo, options: Partial<WorktreeManagerOptions> = {}) {
  const events: Array<{ kind: string; data: Record<string, unknown> }> = [];
  const manager = createWorktreeManager({
    repoRoot: repo.dir,
    git: createGitRunner({ env: ISOLATED }),
    journal: (kind, data) => events.push({ kind, data }),
    ...options,
  });
  return { manager, events, kinds: () => events.map((e) => e.kind) };
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('orchestration git cases', () => {
  it('case 2: leftovers (stale .git/worktrees entry + non-empty directory) — prunes, picks a fresh path, deletes nothing', async () => {
    const repo = createTestRepo();
    const { manager, events } = setup(repo);
    const first = await manager.create({ id: 't2' });
    expect(first.path).toBe(join(repo.dir, '.worktrees', 't2'));
    // A crash: the directory is gone but still registered, then something else fills the path.
    rmSync(first.path, { recursive: true, force: true });
    expect(existsSync(join(repo.dir, '.git', 'worktrees', 't2'))).toBe(true);
    mkdirSync(first.path);
    writeFileSync(join(first.path, 'precious.txt'), 'do not delete\n');

    const second = await manager.create({ id: 't2' });
    expect(second.path).toBe(join(repo.dir, '.worktrees', 't2-2'));
    expect(second.recovered.prunedEntries).toEqual([first.path]);
    expect(second.recovered.pathsInTheWay).toEqual([first.path]);
    expect(readFileSync(join(first.path, 'precious.txt'), 'utf8')).toBe('do not delete\n');
    expect(readFileSync(join(second.path, 'README.md'), 'utf8')).toBe('# test\n');
    expect(events.map((e) => e.kind)).toEqual(expect.arrayContaining(['worktree.pruned', 'worktree.path_in_use']));
    const paths = (await manager.list()).map((w) => w.path);
    expect(paths).toContain(second.path);
    expect(paths).not.toContain(first.path);
    // The main checkout does not see .worktrees/ as untracked.
    expect(repo.git(['status', '--porcelain'])).toBe('');
  });

  it('case 2: a worktree add interrupted by a crash (git left it locked "initializing") is backed up and replaced', async () => {
    const repo = createTestRepo({ 'README.md': '# test\n', 'b.txt': 'b\n' });
    const { manager, kinds } = setup(repo);
    const first = await manager.create({ id: 't2c' });
    // What a crash mid-checkout leaves: git's lock marker, files half written, something new.
    writeFileSync(join(repo.dir, '.git', 'worktrees', 't2c', 'locked'), 'initializing');
    rmSync(join(first.path, 'b.txt'));
    writeFileSync(join(first.path, 'partial.txt'), 'half\n');
    expect((await manager.list()).find((w) => w.taskId === 't2c')?.locked).toBe('initializing');

    const again = await manager.create({ id: 't2c' });
    expect(again.path).toBe(first.path);
    expect(again.recovered.interrupted?.path).toBe(first.path);
    const ref = again.recovered.interrupted!.backupRef!;
    expect(repo.git(['show', `${ref}:partial.txt`])).toBe('half');
    expect(readFileSync(join(again.path, 'b.txt'), 'utf8')).toBe('b\n');
    expect(existsSync(join(again.path, 'partial.txt'))).toBe(false);
    expect(kinds()).toContain('worktree.interrupted_recovered');
  });

  it("case 2: a create that died mid-checkout (Polly's lock marker, its pid gone) is recovered; a live creator is a conflict", async () => {
    const repo = createTestRepo({ 'README.md': '# test\n', 'b.txt': 'b\n' });
    const { manager } = setup(repo);
    const first = await manager.create({ id: 't2d' });
    expect((await manager.list()).find((w) => w.taskId === 't2d')?.locked).toBeNull(); // unlocked once set up
    const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid; // a pid that has exited
    repo.git(['worktree', 'lock', '--reason', `polly creating, pid ${dead}`, first.path]);
    rmSync(join(first.path, 'b.txt'));
    const again = await manager.create({ id: 't2d' });
    expect(again.recovered.interrupted?.path).toBe(first.path);
    expect(readFileSync(join(again.path, 'b.txt'), 'utf8')).toBe('b\n');

    // A creator that is still alive (here: a sleeping process standing in for another Polly) is left alone.
    const alive = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      repo.git(['worktree', 'lock', '--reason', `polly creating, pid ${alive.pid}`, again.path]);
      const error = await manager.create({ id: 't2d' }).catch((e: unknown) => e);
      expect(isPollyError(error, 'conflict')).toBe(true);
      expect((error as Error).message).toContain(`being created by pid ${alive.pid}`);
      expect(existsSync(join(again.path, 'b.txt'))).toBe(true);
    } finally {
      alive.kill('SIGKILL');
    }
    // Two creates of one id at once in this process: the second is refused, the first succeeds.
    const results = await Promise.allSettled([manager.create({ id: 't2e' }), manager.create({ id: 't2e' })]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('case 2: a stale registration of the path with no branch left (the direct add is refused) is pruned and the add retried', async () => {
    const repo = createTestRepo();
    const { manager, kinds } = setup(repo);
    const first = await manager.create({ id: 't2f' });
    rmSync(first.path, { recursive: true, force: true });
    repo.git(['update-ref', '-d', 'refs/heads/polly/t2f']);
    const again = await manager.create({ id: 't2f' });
    expect(again.path).toBe(first.path);
    expect(again.recovered.prunedEntries).toEqual([first.path]);
    expect(kinds()).toContain('worktree.add_retry');
    expect(git(again.path, ['status', '--porcelain'])).toBe('');
  });

  it('case 2: when every candidate path is in the way it fails with a clear conflict and deletes nothing', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo);
    for (let n = 1; n <= 20; n++) {
      const dir = join(repo.dir, '.worktrees', n === 1 ? 'full' : `full-${n}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'x'), `${n}`);
    }
    const error = await manager.create({ id: 'full' }).catch((e: unknown) => e);
    expect(isPollyError(error, 'conflict')).toBe(true);
    expect((error as Error).message).toMatch(/never deletes a directory it did not create/);
    expect(readFileSync(join(repo.dir, '.worktrees', 'full-20', 'x'), 'utf8')).toBe('20');
    // The branch was not left half-made and the port was given back.
    expect(spawnSync('git', ['rev-parse', '--verify', '--quiet', 'refs/heads/polly/full'], { cwd: repo.dir, env: gitTestEnv() }).status).toBe(1);
  });

  it('case 3: a respawn after the worktree was deleted by hand starts from the moved base and keeps the old branch under refs/polly/backup', async () => {
    const repo = createTestRepo();
    const { manager, events } = setup(repo);
    const first = await manager.create({ id: 't3', baseBranch: 'main' });
    writeFileSync(join(first.path, 'old-work.txt'), 'from the first run\n');
    git(first.path, ['add', '-A']);
    git(first.path, ['commit', '-q', '-m', 'old attempt']);
    const oldCommit = git(first.path, ['rev-parse', 'HEAD']);
    rmSync(first.path, { recursive: true, force: true });
    repo.write('moved.txt', 'base moved on\n');
    const newBase = repo.commitAll('base moves on');

    const again = await manager.create({ id: 't3', baseBranch: 'main' });
    expect(again.baseCommit).toBe(newBase);
    expect(git(again.path, ['rev-parse', 'HEAD'])).toBe(newBase);
    expect(repo.git(['rev-parse', 'polly/t3'])).toBe(newBase);
    expect(existsSync(join(again.path, 'old-work.txt'))).toBe(false);
    const stale = again.recovered.staleBranch;
    expect(stale).toMatchObject({ oldCommit, containedInBase: false });
    expect(stale?.backupRef).toMatch(/^refs\/polly\/backup\/t3\/\d{8}T\d{6}\.\d{3}Z$/);
    expect(repo.git(['rev-parse', stale!.backupRef!])).toBe(oldCommit);
    expect(events.find((e) => e.kind === 'worktree.stale_branch_backed_up')?.data).toMatchObject({ oldCommit, backupRef: stale!.backupRef });
  });

  it('case 3: an old branch with no commits of its own is simply restarted from the base (nothing to keep)', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo);
    const first = await manager.create({ id: 't3b' });
    rmSync(first.path, { recursive: true, force: true });
    repo.write('moved.txt', 'x\n');
    const newBase = repo.commitAll('base moves on');
    const again = await manager.create({ id: 't3b' });
    expect(again.recovered.staleBranch).toEqual({ oldCommit: first.baseCommit, containedInBase: true, backupRef: null });
    expect(git(again.path, ['rev-parse', 'HEAD'])).toBe(newBase);
    expect(repo.git(['for-each-ref', 'refs/polly/'])).toBe('');
  });

  it('case 3: a live worktree for the task is a conflict, not a silent reuse', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo);
    await manager.create({ id: 'live' });
    const error = await manager.create({ id: 'live' }).catch((e: unknown) => e);
    expect(isPollyError(error, 'conflict')).toBe(true);
    expect((error as Error).message).toContain('already has a worktree');
  });

  it('case 4: the base branch checked out in the main checkout — the worktree is based on its commit, the main checkout untouched', async () => {
    const repo = createTestRepo();
    repo.write('README.md', '# user is editing this\n'); // dirty main checkout on main
    const { manager } = setup(repo);
    expect(repo.git(['symbolic-ref', '--short', 'HEAD'])).toBe('main');
    // A plain checkout of the same branch is what git refuses:
    const plain = spawnSync('git', ['worktree', 'add', join(repo.root, 'plain'), 'main'], { cwd: repo.dir, env: gitTestEnv(), encoding: 'utf8' });
    expect(plain.status).not.toBe(0);
    expect(plain.stderr).toMatch(/already (checked out|used by worktree)/);

    const wt = await manager.create({ id: 't4', baseBranch: 'main' });
    expect(wt.baseBranch).toBe('main');
    expect(wt.baseCommit).toBe(repo.git(['rev-parse', 'main']));
    expect(git(wt.path, ['symbolic-ref', '--short', 'HEAD'])).toBe('polly/t4');
    expect(repo.git(['symbolic-ref', '--short', 'HEAD'])).toBe('main');
    expect(readFileSync(join(repo.dir, 'README.md'), 'utf8')).toBe('# user is editing this\n');
    expect(git(wt.path, ['status', '--porcelain'])).toBe('');
    // Default base: the branch checked out in the main checkout.
    const dflt = await manager.create({ id: 't4b' });
    expect(dflt.baseBranch).toBe('main');
  });

  it('case 5: cleanup backs up a modified file, a staged change, a new untracked file and an unpushed commit to refs/polly/backup, without touching the worktree', async () => {
    const repo = createTestRepo({ 'README.md': '# test\n', 'src/a.txt': 'a\n', '.gitignore': 'dist/\n' });
    const { manager } = setup(repo);
    const wt = await manager.create({ id: 't5' });
    writeFileSync(join(wt.path, 'src/a.txt'), 'unpushed change\n');
    git(wt.path, ['commit', '-q', '-am', 'unpushed commit']);
    const unpushed = git(wt.path, ['rev-parse', 'HEAD']);
    writeFileSync(join(wt.path, 'README.md'), '# modified, not committed\n');
    writeFileSync(join(wt.path, 'src/staged.txt'), 'staged version\n');
    git(wt.path, ['add', 'src/staged.txt']);
    writeFileSync(join(wt.path, 'src/staged.txt'), 'working version\n');
    mkdirSync(join(wt.path, 'notes'));
    writeFileSync(join(wt.path, 'notes/new.txt'), 'new untracked file\n');
    mkdirSync(join(wt.path, 'dist'));
    writeFileSync(join(wt.path, 'dist/out.js'), 'ignored build output\n');

    // backup() alone leaves the index and the status exactly as they were.
    const indexFile = join(repo.dir, '.git', 'worktrees', 't5', 'index');
    const statusBefore = git(wt.path, ['status', '--porcelain']);
    const before = { index: sha(indexFile), mtime: statSync(indexFile).mtimeMs };
    const b = await manager.backup({ id: 't5', reason: 'test' });
    expect({ index: sha(indexFile), mtime: statSync(indexFile).mtimeMs }).toEqual(before);
    expect(git(wt.path, ['status', '--porcelain'])).toBe(statusBefore);
    expect(existsSync(join(wt.path, 'notes/new.txt'))).toBe(true);
    expect(b.files).toBe(true);

    const removed = await manager.remove({ id: 't5', reason: 'cancelled' });
    expect(existsSync(wt.path)).toBe(false);
    expect(removed.ref).toMatch(/^refs\/polly\/backup\/t5\//);
    expect(removed.ref).not.toBe(b.ref);
    const ref = removed.ref;
    expect(repo.git(['show', `${ref}:README.md`])).toBe('# modified, not committed');
    expect(repo.git(['show', `${ref}:notes/new.txt`])).toBe('new untracked file');
    expect(repo.git(['show', `${ref}:src/staged.txt`])).toBe('working version');
    expect(repo.git(['show', `${ref}^2:src/staged.txt`])).toBe('staged version');
    expect(repo.git(['show', `${ref}:src/a.txt`])).toBe('unpushed change');
    expect(spawnSync('git', ['merge-base', '--is-ancestor', unpushed, ref], { cwd: repo.dir, env: gitTestEnv() }).status).toBe(0);
    expect(repo.git(['ls-tree', '-r', '--name-only', ref])).not.toContain('dist/out.js');
    // The branch is kept, the registration gone.
    expect(repo.git(['rev-parse', 'polly/t5'])).toBe(unpushed);
    expect((await manager.list()).some((w) => w.taskId === 't5')).toBe(false);
  });

  it('case 6 (worktree deleted under it): reconcile names missing, unregistered and orphan worktrees; remove still keeps the commits', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo);
    const a = await manager.create({ id: 't6a' });
    const b = await manager.create({ id: 't6b' });
    await manager.create({ id: 't6orphan' });
    writeFileSync(join(a.path, 'w.txt'), 'work\n');
    git(a.path, ['add', '-A']);
    git(a.path, ['commit', '-q', '-m', 'work in t6a']);
    const workCommit = git(a.path, ['rev-parse', 'HEAD']);
    rmSync(a.path, { recursive: true, force: true });
    mkdirSync(join(repo.dir, '.worktrees', 'stray'));

    const report = await manager.reconcile(['t6a', 't6b', 't6c']);
    expect(report.live).toEqual([{ id: 't6b', path: b.path }]);
    expect(report.missing).toEqual([
      { id: 't6a', path: a.path, cause: 'directory_missing', reason: `the worktree directory ${a.path} of task t6a was deleted` },
      expect.objectContaining({ id: 't6c', path: null, cause: 'not_registered' }),
    ]);
    expect(report.orphans.map((o) => o.id)).toEqual(['t6orphan']);
    expect(report.unregisteredDirs).toEqual([join(repo.dir, '.worktrees', 'stray')]);

    const removed = await manager.remove({ id: 't6a', reason: 'worktree deleted' });
    expect(removed.files).toBe(false);
    expect(repo.git(['rev-parse', removed.ref])).toBe(workCommit);
    expect((await manager.reconcile(['t6a'])).missing[0]?.cause).toBe('not_registered');
  });

  it('case 9: each worker gets its own free PORT, also in the setup command environment', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo, { setupCommand: 'echo "$PORT" > port.txt' });
    const [x, y] = await Promise.all([manager.create({ id: 't9a' }), manager.create({ id: 't9b' })]);
    expect(x.port).not.toBe(y.port);
    for (const wt of [x, y]) {
      expect(readFileSync(join(wt.path, 'port.txt'), 'utf8').trim()).toBe(String(wt.port));
      expect(await isPortFree(wt.port)).toBe(true);
    }
  });

  it('case 10: only ignored files listed in .worktreeinclude are copied; npm ci runs as the setup command with its output kept', async () => {
    const repo = createTestRepo({
      'README.md': '# app\n',
      '.gitignore': 'node_modules/\n.env\nsecrets/\nnotes-*.md\ncache/\n.polly/\n',
      // .polly/ is listed too: Polly's records are never copied, whatever the list says.
      '.worktreeinclude': '.env\nsecrets/\ntodo.txt\n.polly/\n',
      'package.json': '{"name":"app","version":"1.0.0","private":true,"dependencies":{"local-dep":"file:./vendor/local-dep"}}\n',
      'vendor/local-dep/package.json': '{"name":"local-dep","version":"1.0.0","main":"index.js"}\n',
      'vendor/local-dep/index.js': 'module.exports = 42;\n',
    });
    const lock = spawnSync('npm', ['install', '--package-lock-only', '--offline', '--no-audit', '--no-fund'], { cwd: repo.dir, encoding: 'utf8' });
    expect(lock.status, lock.stderr).toBe(0);
    repo.commitAll('lockfile');
    repo.write('.env', 'API_URL=http://localhost\n');
    repo.write('secrets/key.txt', 'k\n');
    repo.write('node_modules/stale/index.js', 'should not be copied\n');
    repo.write('cache/big.bin', 'ignored but not listed\n');
    repo.write('todo.txt', 'listed but not ignored: untracked, stays out\n');
    repo.write('.polly/journal.jsonl', '{"kind":"secret"}\n');
    const { manager } = setup(repo, { setupCommand: 'npm ci --offline --no-audit --no-fund && echo SETUP-DONE' });

    const wt = await manager.create({ id: 't10' });
    expect(wt.included).toEqual(['.env', 'secrets/key.txt']);
    expect(readFileSync(join(wt.path, '.env'), 'utf8')).toBe('API_URL=http://localhost\n');
    expect(existsSync(join(wt.path, 'node_modules/stale'))).toBe(false);
    expect(existsSync(join(wt.path, 'cache'))).toBe(false);
    expect(existsSync(join(wt.path, 'todo.txt'))).toBe(false);
    expect(existsSync(join(wt.path, '.polly'))).toBe(false);
    expect(wt.setup?.exitCode).toBe(0);
    expect(wt.setup?.output).toContain('SETUP-DONE');
    expect(readFileSync(wt.setup!.logPath, 'utf8')).toContain('added 1 package');
    const run = spawnSync(process.execPath, ['-e', 'console.log(require("local-dep"))'], { cwd: wt.path, encoding: 'utf8' });
    expect(run.stdout.trim()).toBe('42');
    expect(git(wt.path, ['status', '--porcelain'])).toBe('');
  });

  it('case 10: a failing setup command is a result with its output, not a thrown error', async () => {
    const repo = createTestRepo();
    const { manager, kinds } = setup(repo, { setupCommand: 'echo broken >&2; exit 3' });
    const wt = await manager.create({ id: 't10b' });
    expect(wt.setup).toMatchObject({ exitCode: 3, timedOut: false });
    expect(wt.setup?.output).toContain('broken');
    expect(kinds()).toContain('worktree.setup');
  });

  it("case 10: a setup's 100 MiB output line is not stored whole: the log keeps its first 16 MiB and says how much it left out, the result its end", async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo, { setupCommand: "head -c 104857600 /dev/zero | tr '\\0' x; echo ' the end'" });
    const wt = await manager.create({ id: 't10d' });
    expect(wt.setup).toMatchObject({ exitCode: 0, timedOut: false });
    expect(wt.setup!.output).toMatch(/^x{3900,} the end$/);
    expect(wt.setup!.output.length).toBeLessThanOrEqual(4000);
    const size = statSync(wt.setup!.logPath).size;
    expect(size).toBeGreaterThan(LOG_MAX_BYTES);
    expect(size).toBeLessThan(LOG_MAX_BYTES + 1024);
    expect(readFileSync(wt.setup!.logPath, 'utf8').slice(-300)).toMatch(
      new RegExp(
        `x\\n\\[polly: output cut at ${LOG_MAX_BYTES} bytes: this log keeps no more of this command\\]\\n\\[polly: ${100 * 1024 * 1024 + 9 - LOG_MAX_BYTES} bytes of output not kept\\]\\n\\[exit 0\\]\\n$`,
      ),
    );
  }, 120_000);

  it('case 10: a setup command that outlives its timeout is killed with everything it started', async () => {
    const repo = createTestRepo();
    const marker = `polly-setup-${process.pid}-${Date.now()}`;
    const { manager } = setup(repo, { setupCommand: `echo started; sh -c 'sleep 30; echo ${marker}' & wait`, setupTimeoutMs: 500 });
    const started = Date.now();
    const wt = await manager.create({ id: 't10c' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(wt.setup).toMatchObject({ timedOut: true, exitCode: null });
    expect(wt.setup?.output).toContain('started');
    const left = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
    expect(left.stdout.trim()).toBe('');
  });

  it('case 12: a submodule is initialised in the new worktree (and removal still works)', async () => {
    const { repo, globalConfig } = createRepoWithSubmodule();
    const { manager } = setup(repo, { git: createGitRunner({ env: { ...ISOLATED, GIT_CONFIG_GLOBAL: globalConfig } }) });
    const wt = await manager.create({ id: 't12' });
    expect(wt.submodules).toEqual(['vendor/lib']);
    expect(readFileSync(join(wt.path, 'vendor/lib/lib.txt'), 'utf8')).toBe('library\n');
    const removed = await manager.remove({ id: 't12', reason: 'done' });
    expect(existsSync(wt.path)).toBe(false);
    expect(repo.git(['ls-tree', removed.ref, 'vendor/lib'])).toMatch(/^160000 commit /);
  });

  // An editor that waits (`sleep 1000 <file>` alone would exit at once: sleep rejects the file name).
  const HANG = 'sleep 1000; true';

  it('case 13: merging with a hanging EDITOR, core.editor and pager in the parent environment completes', async () => {
    const repo = createTestRepo({ 'a.txt': 'base\n' });
    const hostile = { ...process.env, EDITOR: HANG, VISUAL: HANG, GIT_EDITOR: HANG, GIT_SEQUENCE_EDITOR: HANG, PAGER: HANG, GIT_PAGER: HANG };
    repo.git(['config', 'core.editor', HANG]);
    repo.git(['config', 'core.pager', HANG]);
    repo.git(['config', 'user.name', 'Merger']);
    repo.git(['config', 'user.email', 'merger@example.invalid']);
    const runner = createGitRunner({ baseEnv: hostile, env: ISOLATED, timeoutMs: 20_000 });
    const { manager } = setup(repo, { git: runner });
    const wt = await manager.create({ id: 't13' });
    writeFileSync(join(wt.path, 'a.txt'), 'task\n');
    expect(await manager.commitAll({ id: 't13', message: 'task change' })).toMatch(/^[0-9a-f]{40}$/);
    repo.write('a.txt', 'base moved\n');
    repo.commitAll('base change');

    // The path Polly uses to bring the base into a task branch: merge; on conflict resolve and commit.
    const started = Date.now();
    const merge = await runner.run(['merge', 'main'], { cwd: wt.path, okExitCodes: [1] });
    expect(merge.exitCode).toBe(1); // conflict on a.txt
    writeFileSync(join(wt.path, 'a.txt'), 'resolved\n');
    await runner.run(['add', 'a.txt'], { cwd: wt.path });
    await runner.run(['commit'], { cwd: wt.path }); // no -m, no --no-edit: takes MERGE_MSG, opens no editor
    await runner.run(['log', '-1'], { cwd: wt.path });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(git(wt.path, ['log', '-1', '--format=%s'])).toBe("Merge branch 'main' into polly/t13");
    expect(git(wt.path, ['rev-list', '--parents', '-n1', 'HEAD']).split(' ')).toHaveLength(3);

    // The same commit with the parent environment as it is would wait for the editor:
    writeFileSync(join(wt.path, 'a.txt'), 'again\n');
    git(wt.path, ['add', 'a.txt']);
    const raw = spawn('git', ['commit'], { cwd: wt.path, env: { ...gitTestEnv(hostile), GIT_EDITOR: HANG }, detached: true, stdio: 'ignore' });
    const exited = new Promise<string>((resolve) => raw.on('exit', () => resolve('exited')));
    const waited = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still waiting'), 1500))]);
    process.kill(-raw.pid!, 'SIGKILL'); // the whole group, editor included
    expect(waited).toBe('still waiting');
  });

  it('8 concurrent creates in one repository: no index.lock/config.lock errors, distinct ports, clean worktrees', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`src/d${i % 10}/f${i}.txt`] = `file ${i}\n`;
    const repo = createTestRepo(files);
    const { manager } = setup(repo);
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => manager.create({ id: `c${i}` })));
    expect(new Set(created.map((c) => c.port)).size).toBe(8);
    for (const c of created) {
      expect(git(c.path, ['status', '--porcelain'])).toBe('');
      expect(readFileSync(join(c.path, 'src/d7/f297.txt'), 'utf8')).toBe('file 297\n');
    }
    const listed = (await manager.list()).filter((w) => w.taskId !== null);
    expect(listed.map((w) => w.taskId).sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7']);
    const removed = await Promise.all(created.map((c) => manager.remove({ id: c.id, reason: 'done' })));
    expect(removed.every((r) => r.ref.startsWith(`refs/polly/backup/`))).toBe(true);
    expect((await manager.list()).length).toBe(1);
  });
});

describe('commitAll', () => {
  it('commitAll commits what the agent left even with a stale index.lock (case 8 kind), author Polly when unconfigured', async () => {
    const repo = createTestRepo();
    const { manager, kinds } = setup(repo);
    const wt = await manager.create({ id: 'k1' });
    expect(await manager.commitAll({ id: 'k1', message: 'nothing' })).toBeNull();
    writeFileSync(join(wt.path, 'new.txt'), 'agent output\n');
    writeFileSync(join(wt.path, 'README.md'), 'changed\n');
    const lockFile = join(repo.dir, '.git', 'worktrees', 'k1', 'index.lock');
    writeFileSync(lockFile, ''); // left by an agent killed mid-commit
    const commit = await manager.commitAll({ id: 'k1', message: 'Polly: task k1\n\nbody' });
    expect(commit).toBe(git(wt.path, ['rev-parse', 'HEAD']));
    expect(git(wt.path, ['log', '-1', '--format=%an <%ae>|%s'])).toBe('Polly <polly@localhost>|Polly: task k1');
    expect(git(wt.path, ['status', '--porcelain'])).toBe('');
    expect(kinds()).toContain('worktree.stale_index_lock');
    repo.git(['config', 'user.name', 'Configured Person']);
    repo.git(['config', 'user.email', 'person@example.invalid']);
    writeFileSync(join(wt.path, 'more.txt'), 'x\n');
    await manager.commitAll({ id: 'k1', message: 'second' });
    expect(git(wt.path, ['log', '-1', '--format=%an <%ae>'])).toBe('Configured Person <person@example.invalid>');
  });

  it('rejects ids that cannot name a branch and a directory, and unknown bases', async () => {
    const repo = createTestRepo();
    const { manager } = setup(repo);
    for (const id of ['../x', 'a/b', '', '-x', 'x.lock', 'a..b']) {
      expect(isPollyError(await manager.create({ id }).catch((e: unknown) => e), 'bad_input')).toBe(true);
    }
    const e = await manager.create({ id: 'ok', baseBranch: 'nope' }).catch((x: unknown) => x);
    expect(isPollyError(e, 'bad_input')).toBe(true);
    expect((e as Error).message).toContain('"nope"');
    expect(isPollyError(await manager.remove({ id: 'never', reason: 'x' }).catch((x: unknown) => x), 'not_found')).toBe(true);
  });
});
