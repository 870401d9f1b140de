/**
 * Locate the git repository a command runs in, and its `.polly` directory.
 *
 * Polly state belongs to the repository, not to one worktree: from a linked worktree (e.g. a
 * worker's `.worktrees/<id>`) the root is still the main worktree, found through
 * `git rev-parse --git-common-dir` (git-rev-parse(1)).
 */
import { execFile, execFileSync } from 'node:child_process';
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

/** Where `cwd` is, as the gate and the Brain need it: the main worktree, this worktree, its branch and the default branch. */
export interface RepoBranchContext {
  /** The main worktree's root (where `.polly/` lives). */
  repoRoot: string;
  /** The root of the worktree `cwd` is in. */
  worktree: string;
  /** The branch checked out in `cwd`'s worktree, or `HEAD` when detached. */
  branch: string;
  /** The repository's default branch, by {@link readRepoBranchContext}'s rule. */
  defaultBranch: string;
}

/** The lines `git <args>` prints in `cwd` (empty lines dropped), or null when it fails. */
function gitLines(cwd: string, args: string[], env: NodeJS.ProcessEnv): string[] | null {
  try {
    const out = execFileSync('git', [...SAFE_GIT_CONFIG_ARGS, ...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\n').filter((l) => l.trim() !== '');
  } catch {
    return null;
  }
}

function gitLine(cwd: string, args: string[], env: NodeJS.ProcessEnv): string | null {
  return gitLines(cwd, args, env)?.[0]?.trim() ?? null;
}

/** The conventional default branch names, in the order rule 3 of {@link readRepoBranchContext} tries them. */
const CONVENTIONAL_DEFAULTS = ['main', 'master', 'trunk'];

/**
 * The one answer to "which repository, worktree, branch and default branch am I in" (synchronous:
 * it runs at start-up and in the gate's CLI). The default branch is, in order:
 * 1. `origin/HEAD` (what a clone records), without the `origin/` prefix;
 * 2. `init.defaultBranch` from git config, when that local branch exists;
 * 3. the first of `main`, `master`, `trunk` that exists as a local branch;
 * 4. the branch checked out in the main worktree (a linked worktree's own branch never counts);
 * 5. `main`.
 * Rules 2–4 matter for a repository whose remote was added after `git init`: `git push` does not set `origin/HEAD`.
 *
 * @returns null when `cwd` is not inside a git working tree (or git cannot run).
 */
export function readRepoBranchContext(cwd: string, env: NodeJS.ProcessEnv = process.env): RepoBranchContext | null {
  // Synchronous calls block the caller's event loop (the Brain's, during a dispatch): as few as the
  // rule allows, 3 when origin/HEAD is set. One for where (the worktree's top, the common git dir)…
  const where = gitLines(cwd, ['rev-parse', '--show-toplevel', '--path-format=absolute', '--git-common-dir'], env);
  const top = where?.[0];
  if (!top) return null;
  const worktree = resolve(top);
  const common = where?.[1] ?? null;
  let repoRoot = worktree;
  if (common && basename(common) === '.git') repoRoot = dirname(common);
  else {
    const list = gitLines(cwd, ['worktree', 'list', '--porcelain'], env) ?? [];
    const first = list.map((l) => /^worktree (.+)$/.exec(l)?.[1]).find((p) => p !== undefined);
    if (first && existsSync(first)) repoRoot = resolve(first);
  }
  const branch = gitLine(cwd, ['symbolic-ref', '--short', '-q', 'HEAD'], env) ?? 'HEAD';
  // …and one for the candidates: origin/HEAD (a symbolic ref: its target) and the conventional
  // names (`for-each-ref` with exact names lists those refs only; a missing one is not listed).
  const listed = new Map<string, string>();
  for (const line of gitLines(cwd, ['for-each-ref', '--format=%(refname) %(symref)', 'refs/remotes/origin/HEAD', ...CONVENTIONAL_DEFAULTS.map((n) => `refs/heads/${n}`)], env) ??
    []) {
    const [ref, target = ''] = line.trim().split(' ');
    if (ref) listed.set(ref, target);
  }
  const hasLocal = (name: string): boolean =>
    CONVENTIONAL_DEFAULTS.includes(name) ? listed.has(`refs/heads/${name}`) : gitLine(cwd, ['rev-parse', '--verify', '--quiet', `refs/heads/${name}`], env) !== null;
  const originHead = listed.get('refs/remotes/origin/HEAD') || null;
  let defaultBranch: string | null = originHead ? originHead.replace(/^refs\/remotes\/origin\//, '').replace(/^refs\/(heads|remotes)\//, '') : null;
  if (defaultBranch === null) {
    const configured = gitLine(cwd, ['config', '--get', 'init.defaultBranch'], env);
    if (configured && hasLocal(configured)) defaultBranch = configured;
  }
  defaultBranch ??= CONVENTIONAL_DEFAULTS.find(hasLocal) ?? null;
  defaultBranch ??= gitLine(repoRoot, ['symbolic-ref', '--short', '-q', 'HEAD'], env) ?? 'main';
  return { repoRoot, worktree, branch, defaultBranch };
}

/** The default branch of the repository at `repoRoot` by {@link readRepoBranchContext}'s rule (`main` when git cannot tell). */
export function repositoryDefaultBranch(repoRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  return readRepoBranchContext(repoRoot, env)?.defaultBranch ?? 'main';
}
