/**
 * The git policy inside the real bubblewrap sandbox (workers/git/git-policy.ts):
 * in a task's linked worktree, an acceptance-style sandbox lets git read (status, diff, log) and
 * refuses every write to git metadata (add, commit, update-ref, hooks, config, the worktree's
 * `.git` file), while the worktree's own files stay writable. Ground truth from the repository.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../../workers/git/git.js';
import { gitMountPolicy } from '../../../workers/git/git-policy.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { commandSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { bwrapArgs } from '../../../workers/sandbox/sandbox-spec.js';
import { createTestRepo, git, gitTestEnv } from '../../helpers/git-repo.js';

describe('git policy: Polly is the only writer of git metadata', () => {
  it('names the common git dir and the worktree .git file as read-only', () => {
    expect(gitMountPolicy({ commonDir: '/r/.git', worktree: '/r/.worktrees/t1' })).toEqual({ readOnly: ['/r/.git', '/r/.worktrees/t1/.git'] });
    expect(gitMountPolicy({ commonDir: '/r/.git', worktree: null })).toEqual({ readOnly: ['/r/.git'] });
  });

  it('inside the sandbox: status/diff/log work; add, commit, update-ref, hooks, config and the .git file are refused; worktree files are writable', async () => {
    const probe = probeSandbox();
    expect(probe, 'bubblewrap must be able to start here (the sandbox is what this test checks)').toMatchObject({ ok: true });
    if (!probe.ok) return;
    const repo = createTestRepo({ 'a.txt': 'a\n' });
    const wt = await createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }) }).create({
      id: 'gp1',
      baseBranch: 'main',
    });
    const state = realpathSync(mkdtempSync(join(tmpdir(), 'polly-gitpolicy-')));
    mkdirSync(join(state, 'home'));
    const spec = commandSandboxSpec({ repoRoot: repo.dir, worktree: wt.path, stateDir: state, network: false, realHome: join(state, 'no-home') });
    const main0 = git(repo.dir, ['rev-parse', 'main']);
    const gitFile0 = readFileSync(join(wt.path, '.git'), 'utf8');
    const step = (name: string, cmd: string) => `${cmd} >/dev/null 2>&1; echo "${name}=$?"`;
    const script = [
      'echo b >> a.txt && echo new > n.txt',
      step('status', 'git status --short'),
      step('diff', 'git diff --stat'),
      step('log', 'git log --oneline'),
      step('add', 'git add -A'),
      step('commit', 'git -c user.name=x -c user.email=x@example.invalid commit -qam x'),
      step('update_ref', `git update-ref refs/heads/main HEAD`),
      step('hook', `echo x > '${repo.dir}/.git/hooks/post-commit'`),
      step('config', 'git config core.sshCommand evil'),
      step('gitfile', "echo 'gitdir: /tmp/elsewhere' > .git"),
    ].join('\n');
    const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin' } as Record<string, string>;
    const r = spawnSync(probe.bwrap, [...bwrapArgs(spec, existsSync), '--', 'sh', '-c', script], { cwd: wt.path, env, encoding: 'utf8', timeout: 60_000 });
    const codes = Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('=') as [string, string]),
    );
    expect(codes, r.stderr).toEqual({ status: '0', diff: '0', log: '0', add: '128', commit: '128', update_ref: '128', hook: '2', config: '255', gitfile: '2' });
    // Ground truth: nothing moved, nothing written in git metadata; the worktree's files were.
    expect(git(repo.dir, ['rev-parse', 'main'])).toBe(main0);
    expect(existsSync(join(repo.dir, '.git', 'hooks', 'post-commit'))).toBe(false);
    expect(readFileSync(join(repo.dir, '.git', 'config'), 'utf8')).not.toContain('sshCommand');
    expect(readFileSync(join(wt.path, '.git'), 'utf8')).toBe(gitFile0);
    expect(readFileSync(join(wt.path, 'n.txt'), 'utf8')).toBe('new\n');
    expect(git(wt.path, ['status', '--porcelain']).split('\n').sort()).toEqual(['?? n.txt', 'M a.txt']); // (the helper trims the first line's leading space)
    rmSync(repo.root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  });
});
