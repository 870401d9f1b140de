/**
 * What Polly does, outside the sandbox, in a directory holding a checkout of a worker's commit (the
 * local forge's CI scratch dir, brain/forge/local-pr-checks.ts): a worker commits symlinks there
 * through Polly's own commit, so `config -> /elsewhere`, `.env -> /elsewhere/file` (dangling) or
 * `package-lock.json -> <a FIFO>` arrive in the scratch dir before Polly copies the
 * `.worktreeinclude` files and compares lockfiles for dependency reuse.
 *
 * Ground truth: the files outside the scratch dir, and whether Polly's process came back at all
 * (the lockfile read runs in a child process bounded by a timeout: a blocking read of a FIFO would
 * otherwise freeze this test's own event loop). Needs `npm run build` for the child.
 */
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitRunner } from '../../workers/git/git.js';
import { copyWorktreeIncludes } from '../../workers/git/worktree-include.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';

let repo: TestRepo | undefined;
afterEach(() => {
  if (repo) rmSync(repo.root, { recursive: true, force: true });
  repo = undefined;
});

describe("links a worker committed, in a scratch checkout Polly fills", () => {
  it('the .worktreeinclude copy writes nothing through a linked directory or a dangling link', async () => {
    repo = createTestRepo({ 'README.md': '# r\n', '.gitignore': '.env\nconfig/local.json\n', '.worktreeinclude': '.env\nconfig/local.json\n' });
    writeFileSync(join(repo.dir, '.env'), 'API_KEY=user-secret\n');
    mkdirSync(join(repo.dir, 'config'));
    writeFileSync(join(repo.dir, 'config', 'local.json'), '{"user": true}\n');
    const outside = join(repo.root, 'outside');
    mkdirSync(outside);
    const scratch = join(repo.root, 'scratch');
    mkdirSync(scratch);
    symlinkSync(outside, join(scratch, 'config'));
    symlinkSync(join(outside, 'planted.env'), join(scratch, '.env'));

    const r = await copyWorktreeIncludes({ git: createGitRunner({ baseEnv: gitTestEnv() }), repoRoot: repo.dir, worktreePath: scratch });
    expect(readdirSync(outside)).toEqual([]);
    expect(r).toEqual({ copied: [], skippedExisting: ['.env'], refusedLinks: ['config/local.json'] });
  });
});
