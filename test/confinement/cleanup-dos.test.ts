/**
 * Cleanup cannot be blocked by what a worker leaves in its worktree (an attacker's pass): the
 * worktree manager's `remove` ran `git submodule deinit --all --force` and then `git worktree
 * remove`, and a failure of either threw, so the worktree stayed forever (every later `pr sync`
 * tried again and failed again). A worker does it without touching git metadata: it only writes
 * files in its worktree (a broken `.gitmodules`, a nested repository, a populated submodule with
 * uncommitted work). Removal must always finish, after a backup that keeps the work, and say what it did.
 *
 * In-process worktree manager, real git in temp repositories (cheap: no agent CLI is needed, the
 * worker's files are written as the worker would write them).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../workers/git/git.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { createRepoWithSubmodule, createTestRepo, git } from '../helpers/git-repo.js';

describe('worktree removal cannot be blocked by a worker', () => {
  it('a broken .gitmodules over a populated submodule, a nested repository and uncommitted work: removed, backed up, and said', async () => {
    const { repo, globalConfig } = createRepoWithSubmodule();
    const events: Array<{ kind: string; data: Record<string, unknown> }> = [];
    const manager = createWorktreeManager({
      repoRoot: repo.dir,
      git: createGitRunner({ env: { GIT_CONFIG_GLOBAL: globalConfig, GIT_CONFIG_NOSYSTEM: '1' } }),
      journal: (kind, data) => events.push({ kind, data }),
    });
    const wt = await manager.create({ id: 'dos1' });
    expect(wt.submodules).toEqual(['vendor/lib']);

    // What the worker leaves: its work, uncommitted; work inside the submodule; a nested repository;
    // and a `.gitmodules` git cannot parse.
    writeFileSync(join(wt.path, 'work.txt'), 'the task work, not committed\n');
    writeFileSync(join(wt.path, 'vendor', 'lib', 'lib.txt'), 'changed inside the submodule\n');
    // A person's local commit inside the submodule, never pushed: its git dir is in the worktree's
    // admin dir, which goes with the worktree.
    const sub = join(wt.path, 'vendor', 'lib');
    writeFileSync(join(sub, 'local.txt'), 'committed inside the submodule\n');
    git(sub, ['add', 'local.txt']);
    git(sub, ['commit', '-q', '-m', 'local commit in the submodule']);
    mkdirSync(join(wt.path, 'nested'));
    git(join(wt.path, 'nested'), ['init', '-q']);
    writeFileSync(join(wt.path, 'nested', 'n.txt'), 'nested\n');
    git(join(wt.path, 'nested'), ['add', 'n.txt']);
    git(join(wt.path, 'nested'), ['commit', '-q', '-m', 'nested commit']);
    writeFileSync(join(wt.path, 'nested', 'wip.txt'), 'nested, not committed\n');
    // The nested repository's config names a clean filter: a backup that ran git inside it would run it.
    const marker = join(repo.root, 'NESTED-FILTER-RAN');
    writeFileSync(join(wt.path, 'nested', '.gitattributes'), '* filter=x\n');
    git(join(wt.path, 'nested'), ['config', 'filter.x.clean', `sh -c 'touch ${marker}; cat'`]);
    writeFileSync(join(wt.path, '.gitmodules'), '[submodule\n');

    const removed = await manager.remove({ id: 'dos1', reason: 'task done' });
    // Removed, and the registration is gone: the next create of the id starts clean.
    expect(existsSync(wt.path)).toBe(false);
    expect(repo.git(['worktree', 'list', '--porcelain'])).not.toContain(wt.path);
    // Nothing lost: the backup keeps the task's uncommitted work and the submodule's commit.
    expect(removed.files).toBe(true);
    expect(repo.git(['show', `${removed.ref}:work.txt`])).toBe('the task work, not committed');
    expect(repo.git(['ls-tree', removed.ref, 'vendor/lib'])).toMatch(/^160000 commit /);
    // The nested repository and the submodule, byte for byte, in the backup's last parent: restored
    // from it, each is a git repository again with its own commits and its uncommitted work.
    const nestedCommit = repo.git(['rev-list', '--parents', '-n', '1', removed.ref]).split(' ').at(-1)!;
    expect(repo.git(['log', '-1', '--format=%s', nestedCommit])).toMatch(/nested repositories of dos1/);
    const restored = join(repo.root, 'restored');
    mkdirSync(restored);
    execFileSync('sh', ['-c', `git archive ${nestedCommit} | tar -x -C ${restored}`], { cwd: repo.dir });
    for (const dir of ['nested', 'vendor/lib']) execFileSync('mv', [join(restored, dir, '.git.polly-backup'), join(restored, dir, '.git')]);
    // A submodule's git dir names the work tree it had (core.worktree): pointed here instead.
    git(restored, ['config', '--file', join(restored, 'vendor', 'lib', '.git', 'config'), '--unset', 'core.worktree']);
    expect(readFileSync(join(restored, 'nested', 'wip.txt'), 'utf8')).toBe('nested, not committed\n');
    expect(git(join(restored, 'nested'), ['log', '--format=%s'])).toBe('nested commit');
    expect(readFileSync(join(restored, 'vendor', 'lib', 'lib.txt'), 'utf8')).toBe('changed inside the submodule\n');
    expect(git(join(restored, 'vendor', 'lib'), ['log', '-1', '--format=%s'])).toBe('local commit in the submodule');
    expect(existsSync(marker)).toBe(false);
    // Said: what did not go as usual, and how it was finished.
    expect(removed.notes.join('\n')).toMatch(/submodule deinit failed/);
    const journaled = events.find((e) => e.kind === 'worktree.removed');
    expect(journaled?.data.notes).toEqual(removed.notes);
    // The main checkout's own submodule config is untouched.
    expect(readFileSync(join(repo.dir, '.gitmodules'), 'utf8')).toContain('vendor/lib');
    // A second remove of the same id finds no worktree: it backs up the branch tip and finishes.
    const again = await manager.remove({ id: 'dos1', reason: 'again' });
    expect(again).toMatchObject({ files: false, notes: [] });
  });

  it('a .gitattributes that makes git add fail (working-tree-encoding over bytes that are not UTF-16): the backup keeps the bytes, the removal finishes', async () => {
    const repo = createTestRepo();
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }) });
    const wt = await manager.create({ id: 'dos2' });
    writeFileSync(join(wt.path, '.gitattributes'), 'bad.txt working-tree-encoding=UTF-16\n');
    const bad = Buffer.from([0xff, 0xfe, 0x00, 0xd8]);
    writeFileSync(join(wt.path, 'bad.txt'), bad);
    writeFileSync(join(wt.path, 'work.txt'), 'the task work\n');
    symlinkSync('work.txt', join(wt.path, 'link'));
    // Polly's own commit of this worktree fails (the worker's own task), with git's reason.
    await expect(manager.commitAll({ id: 'dos2', message: 'x' })).rejects.toThrow(/failed to encode 'bad.txt'/);
    const removed = await manager.remove({ id: 'dos2', reason: 'task failed' });
    expect(existsSync(wt.path)).toBe(false);
    expect(removed.files).toBe(true);
    expect(repo.git(['show', `${removed.ref}:work.txt`])).toBe('the task work');
    expect(Buffer.from(execFileSync('git', ['cat-file', 'blob', `${removed.ref}:bad.txt`], { cwd: repo.dir }))).toEqual(bad);
    expect(repo.git(['ls-tree', removed.ref, 'link'])).toMatch(/^120000 blob /);
    expect(repo.git(['ls-tree', removed.ref, 'README.md'])).toMatch(/^100644 blob /);
  });
});
