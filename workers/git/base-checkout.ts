/**
 * A read-only process's checkout (issue 27; docs/read-view.md "Who gets which view"): `explore` and
 * `search` workers and `polly doctor`'s probes run in a detached linked worktree of the commit they
 * are about, never in the main checkout. So they see the tracked tree at that commit, and (being
 * in a linked worktree) the same git read view as an implementer (workers/sandbox/git-read-view.ts):
 * never the developer's untracked `.env`, uncommitted edit or ignored files, never the real git
 * dir's stash, other refs or config.
 *
 * The checkout lives in the worktrees directory as `polly-read-<label>-<random>` (detached: no
 * branch is made, so no ref of the repository changes), is made with Polly's git runner (no hooks:
 * ./git.ts) and removed with its read view when the work is done. A checkout left by a process that
 * died is removed by the next {@link withBaseCheckout} of the same label in the same repository.
 *
 * Sources: git-worktree(1) (`add --detach`, `remove --force`, `prune`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { removeGitReadView } from '../sandbox/git-read-view.js';
import { createGitRunner, type GitRunner } from './git.js';

/** The prefix of every read-only checkout's directory name in the worktrees directory. */
export const BASE_CHECKOUT_PREFIX = 'polly-read-';

export interface BaseCheckoutInput {
  /** The repository's main checkout. */
  repoRoot: string;
  /** The absolute worktrees directory (`worktrees.dir`). */
  worktreesDir: string;
  /** What the checkout is for (`t7` for a task, `doctor`): part of its directory name; `[A-Za-z0-9_-]`. */
  label: string;
  /** The commit (or rev) to check out: a task's base branch, or `HEAD` (the main checkout's commit). */
  rev: string;
  /** Default {@link createGitRunner}(). */
  git?: GitRunner;
  /** Where the read views live (workers/sandbox/git-read-view.ts); default there. */
  readViewDir?: string;
  /** Older than this, a leftover checkout of the same label is removed first (ms; default 10 minutes). */
  staleMs?: number;
}

/** A checkout ready to use. */
export interface BaseCheckout {
  /** Its directory (absolute). */
  path: string;
  /** The commit checked out. */
  commit: string;
}

async function removeCheckout(git: GitRunner, repoRoot: string, path: string, readViewDir: string | undefined): Promise<void> {
  removeGitReadView(repoRoot, path, ...(readViewDir ? [readViewDir] : []));
  await git.run(['worktree', 'remove', '--force', '--force', path], { cwd: repoRoot, okExitCodes: [128] });
  rmSync(path, { recursive: true, force: true });
  await git.run(['worktree', 'prune'], { cwd: repoRoot, okExitCodes: [128] });
}

/**
 * Make a detached checkout of `input.rev` (see the module doc), run `fn` in it, and remove it
 * (whatever `fn` does). Cost: one `git rev-parse` and one `git worktree add` (a checkout of the
 * tracked files), one `git worktree remove`.
 * @throws PollyError `worktree_failed` when the rev does not name a commit or the checkout cannot be made (git's words).
 */
export async function withBaseCheckout<T>(input: BaseCheckoutInput, fn: (checkout: BaseCheckout) => Promise<T>): Promise<T> {
  const git = input.git ?? createGitRunner();
  if (!/^[A-Za-z0-9_-]+$/.test(input.label)) throw new PollyError('internal', `withBaseCheckout: label ${JSON.stringify(input.label)} must be [A-Za-z0-9_-]`);
  const rev = await git.run(['rev-parse', '--verify', '-q', `${input.rev}^{commit}`], { cwd: input.repoRoot, okExitCodes: [1, 128] });
  if (rev.exitCode !== 0)
    throw new PollyError(
      'git_failed',
      `Polly could not make a read-only checkout: ${JSON.stringify(input.rev)} names no commit in ${input.repoRoot}. Commit something first, or name a base branch that exists.`,
    );
  const commit = rev.stdout.trim();
  mkdirSync(input.worktreesDir, { recursive: true });
  const prefix = `${BASE_CHECKOUT_PREFIX}${input.label}-`;
  const staleMs = input.staleMs ?? 10 * 60_000;
  for (const name of readdirSafe(input.worktreesDir)) {
    if (!name.startsWith(prefix)) continue;
    const p = join(input.worktreesDir, name);
    try {
      if (Date.now() - statSync(p).mtimeMs > staleMs) await removeCheckout(git, input.repoRoot, p, input.readViewDir);
    } catch {
      // gone meanwhile
    }
  }
  const path = join(input.worktreesDir, `${prefix}${randomBytes(4).toString('hex')}`);
  const add = await git.run(['worktree', 'add', '--detach', '-q', path, commit], { cwd: input.repoRoot, okExitCodes: [128] });
  if (add.exitCode !== 0 || !existsSync(path)) {
    rmSync(path, { recursive: true, force: true });
    throw new PollyError('git_failed', `Polly could not make a read-only checkout of ${commit} at ${path}: ${add.stderr.trim() || `exit ${add.exitCode}`}`);
  }
  try {
    return await fn({ path, commit });
  } finally {
    await removeCheckout(git, input.repoRoot, path, input.readViewDir);
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
