/**
 * Copies the ignored files a project needs (`.env`, local config) from the main checkout into a new
 * worktree (case 10 in test/workers/orchestration-git.test.ts). The list is `.worktreeinclude` at the repository root, in
 * gitignore syntax (gitignore(5)). A file is copied only when it is untracked, matches a pattern in
 * `.worktreeinclude` AND is ignored by the project's own ignore rules — so nothing that git would
 * check out, and nothing ignored but unlisted (`node_modules`, build output), is copied.
 *
 * Matching is git's own: `git ls-files -o -i --exclude-from=.worktreeinclude` lists untracked files
 * matching the include patterns, and `git check-ignore --stdin` keeps those the standard rules
 * (.gitignore, .git/info/exclude, core.excludesFile) ignore.
 */
import { copyFile, lstat, mkdir, readlink, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { GitRunner } from './git.js';

export interface WorktreeIncludeResult {
  /** Repository-relative paths copied (forward slashes). */
  copied: string[];
  /** Paths not copied because the worktree already had them. */
  skippedExisting: string[];
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
 * existing destination files are never overwritten.
 * @returns what was copied; nothing when there is no include file.
 * @throws PollyError `git_failed` when git cannot list the files.
 */
export async function copyWorktreeIncludes(options: CopyWorktreeIncludesOptions): Promise<WorktreeIncludeResult> {
  const includeFile = join(options.repoRoot, options.includeFile ?? '.worktreeinclude');
  const result: WorktreeIncludeResult = { copied: [], skippedExisting: [] };
  if (!existsSync(includeFile)) return result;
  const { git, repoRoot } = options;

  const listed = await git.run(['ls-files', '-z', '--others', '--ignored', `--exclude-from=${includeFile}`], { cwd: repoRoot });
  const prefixes = options.excludePrefixes ?? [];
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
    if (existsSync(to)) {
      result.skippedExisting.push(rel);
      continue;
    }
    await mkdir(dirname(to), { recursive: true });
    const stat = await lstat(from);
    if (stat.isSymbolicLink()) await symlink(await readlink(from), to);
    else if (stat.isFile()) await copyFile(from, to);
    else continue;
    result.copied.push(rel);
  }
  result.copied.sort();
  return result;
}

function splitZ(text: string): string[] {
  return text.split('\0').filter((s) => s !== '');
}
