/**
 * Where task worktrees live: `worktrees.dir` in `.polly/config.yaml`, relative to the repository
 * root or absolute. The default `.worktrees` is inside the repository (hidden from git by
 * `.git/info/exclude`); a directory beside it (e.g. `../<repo>.polly-worktrees`) keeps the
 * worktrees out of every tool that crawls the repository. Pure path arithmetic.
 */
import { isAbsolute, relative, resolve } from 'node:path';

/** The default `worktrees.dir`. */
export const DEFAULT_WORKTREES_DIR = '.worktrees';

/**
 * The absolute worktrees directory.
 * @param repoRoot the main checkout (absolute).
 * @param dir `worktrees.dir` as configured (relative to `repoRoot`, or absolute); empty or missing → `.worktrees`.
 */
export function resolveWorktreesDir(repoRoot: string, dir?: string | null): string {
  return resolve(repoRoot, dir || DEFAULT_WORKTREES_DIR);
}

/**
 * The worktrees directory relative to the repository root (`.worktrees`, `build/wt`) when it lies
 * inside the working tree, or null when it lies outside (beside the repository, or elsewhere).
 */
export function worktreesDirInRepo(repoRoot: string, absDir: string): string | null {
  const rel = relative(repoRoot, absDir);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split('\\').join('/') : null;
}

/**
 * Why `absDir` cannot hold worktrees, or null when it can: it must not be the repository root nor
 * contain it (the sandbox hides the worktrees directory), nor lie inside the repository's `.git`
 * or `.polly` directories (git or Polly own those).
 */
export function worktreesDirProblem(repoRoot: string, absDir: string): string | null {
  const rel = relative(repoRoot, absDir);
  if (rel === '') return 'it is the repository root itself';
  const up = relative(absDir, repoRoot);
  if (!up.startsWith('..') && !isAbsolute(up)) return 'it contains the repository';
  const top = rel.split(/[\\/]/)[0];
  if (top === '.git' || top === '.polly') return `it lies inside ${top}/, which ${top === '.git' ? 'git' : 'Polly'} owns`;
  return null;
}
