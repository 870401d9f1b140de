/**
 * Concurrent creates share one fetch of their base (workers/git/worktree-manager.ts
 * `fetchRemoteBase`, issue 33 item 6): eight dispatches at once queued eight fetches of the same
 * branch behind the admin lock, one network round trip each. Real git, a bare origin.
 */
import { describe, expect, it } from 'vitest';
import { createGitRunner, type GitRunner } from '../../../workers/git/git.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

function countingGit(): { git: GitRunner; calls: string[] } {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(gitTestEnv({}))) if (v !== undefined) env[k] = v;
  const real = createGitRunner({ env });
  const calls: string[] = [];
  return {
    calls,
    git: {
      env: real.env,
      run(args, options) {
        calls.push(args.join(' '));
        return real.run(args, options);
      },
    },
  };
}

describe('the base fetch of concurrent creates', () => {
  it('is made once for creates of the same base at once, each worktree starting from the fetched tip', async () => {
    const repo = createTestRepo();
    // origin moves ahead of the local main: every worktree must start from origin's tip
    repo.write('ahead.txt', 'ahead\n');
    const ahead = repo.commitAll('ahead on origin');
    repo.git(['push', '-q', 'origin', 'main']);
    repo.git(['reset', '-q', '--hard', 'HEAD~1']);
    const counted = countingGit();
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: counted.git });
    const created = await Promise.all(['c1', 'c2', 'c3', 'c4'].map((id) => manager.create({ id, baseBranch: 'main' })));
    expect(created.map((c) => c.baseCommit)).toEqual([ahead, ahead, ahead, ahead]);
    expect(counted.calls.filter((c) => c.startsWith('fetch '))).toHaveLength(1);
    // one after the others: a fetch of its own
    await manager.create({ id: 'c5', baseBranch: 'main' });
    expect(counted.calls.filter((c) => c.startsWith('fetch '))).toHaveLength(2);
  });
});
