/**
 * integrate_base merges the moved base into a task's branch with the identity Polly's commits use
 * (workers/git/commit-identity.ts). git merge wants a committer identity even with --no-commit, so
 * on a machine with no user.email anywhere (a fresh CI runner, a new container) the merge failed
 * ("Committer identity unknown") and every conflict or moved-base round ended in failure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../../brain/registry/registry-schema.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { createIntegrateBaseTool } from '../../../brain/task-tools/integrate-base.js';
import type { TaskToolContext } from '../../../brain/task-tools/types.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';

let repo: TestRepo | undefined;
afterEach(() => {
  if (repo) rmSync(repo.root, { recursive: true, force: true });
  repo = undefined;
});

describe('integrate_base on a machine with no git identity configured', () => {
  it("merges origin's moved main into the task branch with Polly's fallback identity", async () => {
    repo = createTestRepo({ 'README.md': '# r\n' });
    git(repo.dir, ['checkout', '-q', '-b', 'polly/t1']);
    writeFileSync(join(repo.dir, 'a.txt'), 'task\n');
    git(repo.dir, ['add', 'a.txt']);
    git(repo.dir, ['commit', '-q', '-m', 'task work']);
    git(repo.dir, ['checkout', '-q', 'main']);
    writeFileSync(join(repo.dir, 'b.txt'), 'base moved\n');
    git(repo.dir, ['add', 'b.txt']);
    git(repo.dir, ['commit', '-q', '-m', 'base moves']);
    git(repo.dir, ['push', '-q', 'origin', 'main']);
    git(repo.dir, ['checkout', '-q', 'polly/t1']);

    // No identity anywhere: an empty HOME, no global or system config, no GIT_* identity variables.
    const home = mkdtempSync(join(tmpdir(), 'polly-no-identity-home-'));
    const bare = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), EMAIL: '' };
    const gitRunner = createGitRunner({ baseEnv: bare, env: { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } });
    const noIdentity = await gitRunner.run(['-c', 'user.useConfigOnly=true', 'var', 'GIT_COMMITTER_IDENT'], { cwd: repo.dir, okExitCodes: [128] });
    expect(noIdentity.exitCode, 'the test machine must have no identity for this test').toBe(128);

    const tool = createIntegrateBaseTool({ git: gitRunner, identityEnv: bare });
    const pollyDir = mkdtempSync(join(tmpdir(), 'polly-integrate-'));
    const task = { id: 't1', branch: 'polly/t1', worktree: repo.dir, baseBranch: 'main' } as unknown as TaskRecord;
    const ctx = {
      repoRoot: repo.dir,
      store: createFileRegistryStore(pollyDir),
      task,
      order: { id: 'o1', kind: 'action', tool: 'integrate_base', attempt: 1 },
      progress: () => {},
      clock: () => new Date(),
    } as unknown as TaskToolContext;
    const out = await tool(ctx);
    expect(out.outcome, out.note).toBe('ok');
    expect(git(repo.dir, ['rev-parse', '--verify', 'MERGE_HEAD'])).toBe(git(repo.dir, ['rev-parse', 'origin/main']));
    expect(git(repo.dir, ['show', ':b.txt'])).toBe('base moved');
  });
});
