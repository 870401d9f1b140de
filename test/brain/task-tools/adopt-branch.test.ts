/**
 * Adopting a task branch found on origin that the registry never pushed (brain/task-tools/
 * adopt-branch.ts), with real git: a temp repository and a bare origin. This task's commits (its
 * content key in a `Polly-Task-Content` trailer) are built on; anyone else's are refused with the
 * way out, and nothing moves.
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { adoptRemoteBranch } from '../../../brain/task-tools/adopt-branch.js';
import { taskCommitMessage } from '../../../brain/task-tools/run-acceptance.js';
import { taskContentKey, type TaskContent } from '../../../brain/registry/task-record.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';

const testGit = () => createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });

const TASK: TaskContent = {
  id: 'p1-t1',
  title: 'Add X',
  purpose: 'implement',
  worker: 'claude-code',
  prompt: 'Add X to src/x.txt.',
  acceptance: { commands: ['npm test'], criteria: [] },
};

describe('adoptRemoteBranch', () => {
  test("this task's branch on origin is built on (new worktree: reset; kept one behind: fast-forward; kept one ahead: kept); another's, or a diverged one, is refused and nothing moves", async () => {
    const repo = createTestRepo({ 'README.md': '# demo\n' });
    const base = repo.git(['rev-parse', 'HEAD']);
    // An earlier run pushed polly/p1-t1 with one commit of this task, and polly/p1-t2 with a commit of another content under that id.
    const pushCommit = (branch: string, file: string, message: string): string => {
      repo.git(['checkout', '-q', '-b', 'tmp', base]);
      repo.write(file, `${file}\n`);
      const sha = repo.commitAll(message);
      repo.git(['push', '-q', 'origin', `tmp:refs/heads/${branch}`]);
      repo.git(['checkout', '-q', 'main']);
      repo.git(['branch', '-q', '-D', 'tmp']);
      return sha;
    };
    const ours = pushCommit('polly/p1-t1', 'src/x.txt', taskCommitMessage(TASK));
    expect(git(repo.dir, ['log', '-1', '--format=%B', ours])).toContain(`Polly-Task-Content: ${taskContentKey(TASK)}`);
    const other = { ...TASK, id: 'p1-t2' };
    pushCommit('polly/p1-t2', 'src/y.txt', taskCommitMessage({ ...other, prompt: 'Something else.' }));
    const worktree = (id: string, at: string) => {
      const path = join(repo.dir, '.worktrees', id);
      repo.git(['worktree', 'add', '-q', '-b', `polly/${id}`, path, at]);
      return path;
    };
    const adopt = (task: TaskContent, path: string, created: boolean) =>
      adoptRemoteBranch({ repoRoot: repo.dir, task, worktree: path, branch: `polly/${task.id}`, created, baseTip: base, git: testGit() });

    // New worktree from the base: moved to origin's tip; the base stays the task's base.
    const wt1 = worktree('p1-t1', base);
    expect(await adopt(TASK, wt1, true)).toEqual({ kind: 'adopted', remoteTip: ours, baseCommit: base, commits: 1, how: 'reset' });
    expect(git(wt1, ['rev-parse', 'HEAD'])).toBe(ours);
    // Run again on the same worktree (it contains the tip now): nothing to move.
    expect(await adopt(TASK, wt1, false)).toMatchObject({ kind: 'adopted', how: 'contained' });
    // A kept worktree behind origin: fast-forwarded.
    repo.git(['worktree', 'remove', '--force', wt1]);
    repo.git(['branch', '-q', '-f', 'polly/p1-t1', base]);
    repo.git(['worktree', 'add', '-q', wt1, 'polly/p1-t1']);
    expect(await adopt(TASK, wt1, false)).toMatchObject({ kind: 'adopted', how: 'fast_forward' });
    expect(git(wt1, ['rev-parse', 'HEAD'])).toBe(ours);

    // Another content under the same id: refused, the way out named, nothing moved.
    const wt2 = worktree('p1-t2', base);
    const refused = await adopt(other, wt2, true);
    expect(refused.kind).toBe('refused');
    const reason = refused.kind === 'refused' ? refused.reason : '';
    expect(reason).toContain(`origin has polly/p1-t2 at`);
    expect(reason).toContain(`Polly-Task-Content: ${taskContentKey(other)}`);
    expect(reason).toMatch(/never force-pushes.*polly retry p1-t2$/);
    expect(git(wt2, ['rev-parse', 'HEAD'])).toBe(base);

    // A kept worktree with its own commit while origin has another: diverged, refused.
    repo.git(['worktree', 'remove', '--force', wt1]);
    repo.git(['branch', '-q', '-f', 'polly/p1-t1', base]);
    repo.git(['worktree', 'add', '-q', wt1, 'polly/p1-t1']);
    git(wt1, ['commit', '-q', '--allow-empty', '-m', 'local only']);
    const local = git(wt1, ['rev-parse', 'HEAD']);
    const diverged = await adopt(TASK, wt1, false);
    expect(diverged).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/each has commits the other lacks.*merge refs\/remotes\/origin\/polly\/p1-t1/) });
    expect(git(wt1, ['rev-parse', 'HEAD'])).toBe(local);

    // No branch on origin: nothing to adopt.
    expect(await adopt({ ...TASK, id: 'p1-t9' }, wt2, true)).toEqual({ kind: 'none' });
  });
});
