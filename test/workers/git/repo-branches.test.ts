/**
 * The one rule for "which branch is the default" (workers/git/repo.ts `readRepoBranchContext`),
 * on real repositories: origin/HEAD wins; without it init.defaultBranch, then main/master/trunk,
 * then the main worktree's branch — and a linked worktree's own branch never counts.
 */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRepoBranchContext } from '../../../workers/git/repo.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

describe('readRepoBranchContext: one default-branch rule for the Brain, the gate CLI and the LLM brain', () => {
  it('takes origin/HEAD when a clone recorded it', () => {
    const repo = createTestRepo();
    repo.git(['branch', '-m', 'develop']);
    repo.git(['push', '-q', 'origin', 'develop']);
    repo.git(['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/develop']);
    const where = readRepoBranchContext(repo.dir, gitTestEnv());
    expect(where).toMatchObject({ repoRoot: realpathSync(repo.dir), branch: 'develop', defaultBranch: 'develop' });
  });

  it('without origin/HEAD: an existing master is the default, even when the main checkout is on a feature branch', () => {
    const repo = createTestRepo();
    repo.git(['branch', '-m', 'master']);
    repo.git(['checkout', '-q', '-b', 'feature']);
    expect(readRepoBranchContext(repo.dir, gitTestEnv())).toMatchObject({ branch: 'feature', defaultBranch: 'master' });
  });

  it('without origin/HEAD: init.defaultBranch names the default when that branch exists, before main, master or trunk', () => {
    const repo = createTestRepo();
    repo.git(['branch', 'develop']);
    repo.git(['branch', '-m', 'master']);
    repo.git(['config', 'init.defaultBranch', 'develop']);
    repo.git(['checkout', '-q', '-b', 'feature']);
    expect(readRepoBranchContext(repo.dir, gitTestEnv())).toMatchObject({ branch: 'feature', defaultBranch: 'develop' });
    // Configured but missing: the conventional names next.
    repo.git(['config', 'init.defaultBranch', 'gone']);
    expect(readRepoBranchContext(repo.dir, gitTestEnv())).toMatchObject({ defaultBranch: 'master' });
    // None of them: the main worktree's branch.
    repo.git(['branch', '-m', 'master', 'stable']);
    expect(readRepoBranchContext(repo.dir, gitTestEnv())).toMatchObject({ defaultBranch: 'feature' });
  });

  it('from a linked worktree: the repository root is the main worktree, and the worktree branch is not the default', () => {
    const repo = createTestRepo();
    repo.git(['branch', '-m', 'work']);
    const wt = join(repo.dir, '.worktrees', 't1');
    repo.git(['worktree', 'add', '-q', '-b', 'polly/t1', wt]);
    const where = readRepoBranchContext(wt, gitTestEnv());
    expect(where).toMatchObject({ repoRoot: realpathSync(repo.dir), worktree: realpathSync(wt), branch: 'polly/t1', defaultBranch: 'work' });
  });

  it('outside a repository: null', () => {
    const dir = execFileSync('mktemp', ['-d'], { encoding: 'utf8' }).trim();
    expect(readRepoBranchContext(dir, gitTestEnv())).toBeNull();
  });
});
