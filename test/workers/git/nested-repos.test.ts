/**
 * workers/git/nested-repos.ts with real git: a repository a worker made inside its worktree, its
 * config naming a clean filter that would write a marker file, is never entered by Polly's own git
 * — not by staging (`stageWorktree`, twice, the second time with the repository already a gitlink),
 * nor by `status`/`diff`/`commit` through the runner's `-c diff.ignoreSubmodules=dirty`. A control
 * shows the same `git add --all` without them does run the filter, so the test can fail.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitRunner } from '../../../workers/git/git.js';
import { listNestedRepos, nestedRepoExcludes, stageWorktree } from '../../../workers/git/nested-repos.js';
import { createTestRepo, git, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';

let repo: TestRepo | undefined;
afterEach(() => {
  if (repo) rmSync(repo.root, { recursive: true, force: true });
  repo = undefined;
});

/** `<dir>/sub`: a repository with `f.txt` committed and a clean filter that touches `marker`. */
function plantNestedRepo(dir: string, marker: string): string {
  const sub = join(dir, 'sub');
  mkdirSync(sub);
  git(sub, ['init', '-q']);
  writeFileSync(join(sub, 'f.txt'), 'hi\n');
  writeFileSync(join(sub, '.gitattributes'), '* filter=x\n');
  git(sub, ['add', '-A']);
  git(sub, ['commit', '-q', '-m', 'nested']);
  git(sub, ['config', 'filter.x.clean', `sh -c 'touch ${marker}; cat'`]);
  return sub;
}

/** Same size, new mtime: git cannot tell from stat and must hash `f.txt`, through the filter. */
function dirty(sub: string, day: number): void {
  const t = new Date(Date.UTC(2001, 0, day)).getTime() / 1000;
  utimesSync(join(sub, 'f.txt'), t, t);
}

describe('nested repositories in a worktree', () => {
  it('Polly stages, diffs, checks and commits around a nested repository without running its config; plain `git add --all` would', async () => {
    repo = createTestRepo();
    const marker = join(repo.root, 'FILTER-RAN');
    const sub = plantNestedRepo(repo.dir, marker);
    writeFileSync(join(repo.dir, 'work.txt'), 'work\n');
    const runner = createGitRunner({ baseEnv: gitTestEnv() });

    expect(await listNestedRepos(runner, repo.dir)).toEqual({ gitlinks: [], untracked: ['sub'] });
    expect(await stageWorktree(runner, repo.dir)).toEqual({ gitlinks: [], untracked: ['sub'] });
    expect(git(repo.dir, ['diff', '--cached', '--name-only'])).toBe('work.txt');

    // An earlier Polly (or the base branch) committed it as a gitlink: the dangerous case.
    git(repo.dir, ['add', 'sub']);
    git(repo.dir, ['commit', '-q', '-m', 'gitlink']);
    expect(await listNestedRepos(runner, repo.dir)).toEqual({ gitlinks: ['sub'], untracked: [] });
    expect(nestedRepoExcludes({ gitlinks: ['sub'], untracked: [] })).toEqual([':(exclude,top,literal)sub']);

    dirty(sub, 2);
    await stageWorktree(runner, repo.dir);
    dirty(sub, 3);
    await runner.run(['status', '--porcelain'], { cwd: repo.dir });
    dirty(sub, 4);
    await runner.run(['diff', '--name-only', 'HEAD~1', '--'], { cwd: repo.dir });
    dirty(sub, 5);
    const identity = Object.fromEntries(Object.entries(gitTestEnv()).filter(([k]) => /^GIT_(AUTHOR|COMMITTER)_/.test(k))) as Record<string, string>;
    await runner.run(['commit', '--quiet', '--no-verify', '--allow-empty', '-m', 'x'], { cwd: repo.dir, env: identity });
    expect(existsSync(marker)).toBe(false);

    // The control: git's own `add --all` enters the gitlink and runs the worker's filter.
    dirty(sub, 6);
    git(repo.dir, ['add', '--all']);
    expect(existsSync(marker)).toBe(true);
  });
  it('thousands of nested repositories with long paths still stage: the excludes go on stdin, not the argument list', async () => {
    repo = createTestRepo();
    // 1,500 bare-bones repositories (a .git dir with HEAD, objects and refs) under ~1,500-character
    // paths: their excludes alone are longer than the argument list may be (ARG_MAX: E2BIG). Few,
    // long paths: git matches every path against every exclude, so the time grows with the square
    // of the count (4,500 paths of 480 characters took 62 s alone at load 10; 2,300 of 970, 31 s).
    const deep = join(repo.dir, ...['d', 'e', 'f', 'g', 'h'].map((c) => c.repeat(240)));
    for (let i = 0; i < 1500; i++) {
      const gitDir = join(deep, `r${String(i).padStart(5, '0')}${'x'.repeat(240)}`, '.git');
      mkdirSync(join(gitDir, 'objects'), { recursive: true });
      mkdirSync(join(gitDir, 'refs'));
      writeFileSync(join(gitDir, 'HEAD'), 'ref: refs/heads/main\n');
    }
    writeFileSync(join(repo.dir, 'work.txt'), 'work\n');
    const runner = createGitRunner({ baseEnv: gitTestEnv() });
    const nested = await stageWorktree(runner, repo.dir);
    expect(nested.untracked).toHaveLength(1500);
    const argMax = Number(execFileSync('getconf', ['ARG_MAX'], { encoding: 'utf8' }).trim());
    expect(nested.untracked.reduce((n, p) => n + p.length + ':(exclude,top,literal)'.length + 1, 0)).toBeGreaterThan(argMax);
    expect(git(repo.dir, ['diff', '--cached', '--name-only'])).toBe('work.txt');
  }, 60_000);
});
