/**
 * Copies the ignored files a project needs (`.env`, local config) from the main checkout into a new
 * worktree (case 10 in test/workers/git/orchestration-git.test.ts). The list is `.worktreeinclude` at the repository root, in
 * gitignore syntax (gitignore(5)). A file is copied only when it is untracked, matches a pattern in
 * `.worktreeinclude` AND is ignored by the project's own ignore rules — so nothing that git would
 * check out, and nothing ignored but unlisted (`node_modules`, build output), is copied.
 *
 * Matching is git's own: `git ls-files -o -i --exclude-from=.worktreeinclude` lists untracked files
 * matching the include patterns, and `git check-ignore --stdin` keeps those the standard rules
 * (.gitignore, .git/info/exclude, core.excludesFile) ignore.
 *
 * Never copied, whatever `.worktreeinclude` says ({@link NEVER_COPIED}): Polly's own state
 * (`.polly/`: the registry, journal, decision logs) and git's, nor anything under the worktrees
 * directory the caller names: a worker must not get another task's work or Polly's records.
 */
import { copyFile, lstat, mkdir, readlink, symlink } from 'node:fs/promises';
import { constants, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { GitRunner } from './git.js';

/** Repository-relative prefixes never copied into a worktree (see the module doc). */
export const NEVER_COPIED: readonly string[] = ['.polly/', '.git/'];

export interface WorktreeIncludeResult {
  /** Repository-relative paths copied (forward slashes). */
  copied: string[];
  /** Paths not copied because the worktree already had them (a symlink there counts, dangling or not). */
  skippedExisting: string[];
  /**
   * Paths not copied because a directory on the way inside the destination is a symlink or not a
   * directory: the destination may hold a checkout of a worker's commit (the local forge's CI,
   * brain/forge/local-pr-checks.ts), and a committed `config -> /elsewhere` would otherwise make
   * Polly write `/elsewhere/<file>` with the user's rights.
   */
  refusedLinks: string[];
}

export interface CopyWorktreeIncludesOptions {
  git: GitRunner;
  /** The main checkout (source of the files and of `.worktreeinclude`). */
  repoRoot: string;
  /** The new worktree (destination). */
  worktreePath: string;
  /** Repository-relative directory prefixes never copied from (e.g. `.worktrees/`). */
  excludePrefixes?: string[];
  /** Name of the include file at the repository root. Default `.worktreeinclude`. */
  includeFile?: string;
}

/**
 * Copy the listed ignored files; regular files keep their mode, symlinks are copied as symlinks,
 * existing destination files are never overwritten. Nothing is written through a symlink in the
 * destination: an existing entry (a link included) is skipped, a directory on the way that is a
 * link is refused ({@link WorktreeIncludeResult.refusedLinks}), and a file is created with
 * `COPYFILE_EXCL` (`O_CREAT | O_EXCL`, which does not follow a link; open(2)).
 * @returns what was copied; nothing when there is no include file.
 * @throws PollyError `git_failed` when git cannot list the files.
 */
export async function copyWorktreeIncludes(options: CopyWorktreeIncludesOptions): Promise<WorktreeIncludeResult> {
  const includeFile = join(options.repoRoot, options.includeFile ?? '.worktreeinclude');
  const result: WorktreeIncludeResult = { copied: [], skippedExisting: [], refusedLinks: [] };
  if (!existsSync(includeFile)) return result;
  const { git, repoRoot } = options;

  const listed = await git.run(['ls-files', '-z', '--others', '--ignored', `--exclude-from=${includeFile}`], { cwd: repoRoot });
  const prefixes = [...NEVER_COPIED, ...(options.excludePrefixes ?? [])];
  const candidates = splitZ(listed.stdout).filter((p) => !prefixes.some((x) => p.startsWith(x)));
  if (candidates.length === 0) return result;

  // check-ignore exits 1 when none of the paths is ignored.
  const ignored = await git.run(['check-ignore', '-z', '--stdin'], {
    cwd: repoRoot,
    input: `${candidates.join('\0')}\0`,
    okExitCodes: [1],
  });
  for (const rel of splitZ(ignored.stdout)) {
    const from = join(repoRoot, rel);
    const to = join(options.worktreePath, rel);
    if (!(await realDirsBelow(options.worktreePath, dirname(to)))) {
      result.refusedLinks.push(rel);
      continue;
    }
    if ((await lstat(to).catch(() => null)) !== null) {
      result.skippedExisting.push(rel);
      continue;
    }
    const stat = await lstat(from);
    if (stat.isSymbolicLink()) await symlink(await readlink(from), to);
    else if (stat.isFile()) await copyFile(from, to, constants.COPYFILE_EXCL);
    else continue;
    result.copied.push(rel);
  }
  result.copied.sort();
  return result;
}

/**
 * Make `dir` (at or below `root`) exist as real directories, creating what is missing one level at
 * a time. False when a component below `root` is a symlink or not a directory (nothing is created
 * past it, nothing is followed). `root` itself is trusted (Polly made it).
 */
async function realDirsBelow(root: string, dir: string): Promise<boolean> {
  const rel = relative(root, dir);
  if (rel.startsWith('..')) return false;
  let at = root;
  for (const part of rel.split(sep).filter(Boolean)) {
    at = join(at, part);
    const st = await lstat(at).catch(() => null);
    if (st === null) await mkdir(at);
    else if (!st.isDirectory()) return false;
  }
  return true;
}

function splitZ(text: string): string[] {
  return text.split('\0').filter((s) => s !== '');
}
