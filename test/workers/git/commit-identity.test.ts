// Commit identity with real git: the user's GIT_AUTHOR_*/GIT_COMMITTER_* win, then git config,
// then Polly's named fallback; commitAll uses it; uncommitted changes of the main checkout are listed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeIdentity, resolveCommitIdentity, uncommittedChanges } from '../../../workers/git/commit-identity.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo } from '../../helpers/git-repo.js';

// No global or system config (the machine's identity must not leak in); the repo's own config is read.
const git = createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });
const userEnv = { GIT_AUTHOR_NAME: 'Ada Author', GIT_AUTHOR_EMAIL: 'ada@example.org', GIT_COMMITTER_NAME: 'Cy Committer', GIT_COMMITTER_EMAIL: 'cy@example.org' };

describe('resolveCommitIdentity', () => {
  it('honours the GIT_AUTHOR_* / GIT_COMMITTER_* the user set, over git config', async () => {
    const repo = createTestRepo();
    repo.git(['config', 'user.name', 'Repo User']);
    repo.git(['config', 'user.email', 'repo@example.org']);
    const id = await resolveCommitIdentity(git, repo.dir, userEnv);
    expect(id.author).toEqual({ name: 'Ada Author', email: 'ada@example.org', source: 'environment' });
    expect(id.committer).toEqual({ name: 'Cy Committer', email: 'cy@example.org', source: 'environment' });
    expect(describeIdentity(id)).toBe('author Ada Author <ada@example.org> (from environment), committer Cy Committer <cy@example.org> (from environment)');
  });

  it("uses the repository's git config, then Polly's fallback, and says which", async () => {
    const repo = createTestRepo();
    expect(describeIdentity(await resolveCommitIdentity(git, repo.dir, {}))).toBe("Polly <polly@localhost> (Polly's fallback: set user.name and user.email with git config)");
    repo.git(['config', 'user.name', 'Repo User']);
    repo.git(['config', 'user.email', 'repo@example.org']);
    const id = await resolveCommitIdentity(git, repo.dir, {});
    expect(id.author).toEqual({ name: 'Repo User', email: 'repo@example.org', source: 'git config' });
    expect(describeIdentity(id)).toBe('Repo User <repo@example.org> (from git config)');
  });

  it("commitAll commits with the user's identity variables (all other GIT_* stay dropped)", async () => {
    const repo = createTestRepo();
    const journal: Array<[string, Record<string, unknown>]> = [];
    const manager = createWorktreeManager({ repoRoot: repo.dir, git, identityEnv: { ...userEnv, GIT_DIR: '/nonexistent' }, journal: (k, d) => journal.push([k, d]) });
    const created = await manager.create({ id: 'ident1' });
    repo.write('.worktrees/ident1/new.txt', 'x\n');
    const commit = await manager.commitAll({ id: 'ident1', message: 'add new.txt' });
    expect(commit).not.toBeNull();
    expect(repo.git(['log', '-1', '--format=%an <%ae>|%cn <%ce>', 'polly/ident1'])).toBe('Ada Author <ada@example.org>|Cy Committer <cy@example.org>');
    expect(journal.find(([k]) => k === 'worktree.committed')?.[1].identity).toContain('Ada Author');
    expect(readFileSync(join(created.path, 'new.txt'), 'utf8')).toBe('x\n');
  });
});

describe('uncommittedChanges', () => {
  it("lists staged, unstaged and untracked paths of the main checkout, not Polly's own", async () => {
    const repo = createTestRepo({ 'README.md': '# t\n', 'a.txt': 'a\n' });
    expect(await uncommittedChanges(git, repo.dir)).toEqual([]);
    repo.write('README.md', '# changed\n');
    repo.write('new file.txt', 'n\n');
    repo.write('.polly/registry.json', '{}');
    repo.git(['mv', 'a.txt', 'b.txt']);
    expect((await uncommittedChanges(git, repo.dir)).sort()).toEqual(['README.md', 'b.txt', 'new file.txt']);
  });
});
