/**
 * Locate the git repository a command runs in, and its `.polly` directory.
 *
 * Polly state belongs to the repository, not to one worktree: from a linked worktree (e.g. a
 * worker's `.worktrees/<id>`) the root is still the main worktree, found through
 * `git rev-parse --git-common-dir` (git-rev-parse(1)).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { SAFE_GIT_CONFIG_ARGS } from './git.js';

export interface RepoLocation {
  /** The main worktree's root: where `.polly/` and `.worktrees/` live. */
  root: string;
  /** The root of the worktree `cwd` is in (equals `root` outside linked worktrees). */
  worktreeRoot: string;
  /** The repository's common git directory (holds `info/exclude`, refs, objects). */
  gitCommonDir: string;
  /** `<root>/.polly`. */
  pollyDir: string;
}

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string; code: number | null; spawnError?: NodeJS.ErrnoException }> {
  return new Promise((resolvePromise) => {
    execFile('git', [...SAFE_GIT_CONFIG_ARGS, ...args], { cwd, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof (error as NodeJS.ErrnoException).code === 'string') {
        resolvePromise({ stdout, stderr, code: null, spawnError: error as NodeJS.ErrnoException });
      } else {
        resolvePromise({ stdout, stderr, code: error ? ((error as { code?: number }).code ?? 1) : 0 });
      }
    });
  });
}

/**
 * Find the repository containing `cwd`.
 *
 * @param cwd  any directory inside a working tree (the main one or a linked worktree).
 * @param env  the environment for git (GIT_DIR and friends are honoured).
 * @throws PollyError `not_a_git_repo` (exit 2) when `cwd` is not inside a git working tree (or
 *         is a bare repository); `git_failed` when git itself cannot run.
 */
export async function findRepo(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<RepoLocation> {
  if (!existsSync(cwd)) {
    throw new PollyError('not_a_git_repo', `the directory ${cwd} does not exist. Run polly inside a git repository.`, { details: { cwd } });
  }
  const r = await git(cwd, ['rev-parse', '--show-toplevel', '--git-common-dir'], env);
  if (r.spawnError) {
    const missing = r.spawnError.code === 'ENOENT';
    throw new PollyError('git_failed', missing ? 'git is not installed (or not on PATH). Install git, then retry.' : `git could not run in ${cwd}: ${r.spawnError.message}`, {
      cause: r.spawnError,
      details: { cwd },
    });
  }
  if (r.code !== 0) {
    const why = r.stderr.trim().split('\n')[0] ?? '';
    const bare = /must be run in a work tree/.test(r.stderr);
    throw new PollyError(
      'not_a_git_repo',
      bare
        ? `${cwd} is a bare repository or a .git directory (${why}). Run polly in a working tree of the repository.`
        : `${cwd} is not inside a git repository (${why}). Run polly inside a git repository, or create one with "git init".`,
      { details: { cwd, stderr: r.stderr.trim() } },
    );
  }
  const [top, common] = r.stdout.split('\n').map((l) => l.trim());
  if (!top || !common) throw new PollyError('git_failed', `git rev-parse gave unexpected output in ${cwd}: ${JSON.stringify(r.stdout)}`, { details: { cwd } });
  const worktreeRoot = resolve(top);
  const gitCommonDir = resolve(cwd, common);
  let root = worktreeRoot;
  if (basename(gitCommonDir) === '.git') {
    root = dirname(gitCommonDir);
  } else {
    // A separate git dir or a submodule: ask git for the main worktree (first entry).
    const list = await git(cwd, ['worktree', 'list', '--porcelain'], env);
    const first = /^worktree (.+)$/m.exec(list.stdout)?.[1];
    if (list.code === 0 && first && existsSync(first)) root = resolve(first);
  }
  return { root, worktreeRoot, gitCommonDir, pollyDir: join(root, '.polly') };
}
