/**
 * Bounded retries of git commands that failed because another git process was in the middle of
 * writing shared metadata. Such a failure says nothing about the command itself, so it must never
 * be permanent on the first try; every other failure is returned at once.
 *
 * The transient failures recognised (git's own messages under `LC_ALL=C`, which ./git.ts sets):
 * - `Unable to create '<path>.lock': File exists.` — another git holds a lock file (index, a ref,
 *   `config`, `packed-refs`, `shallow`); lockfile.c `unable_to_lock_message`.
 * - `failed to read '<git-dir>/worktrees/<name>/locked'` (and `gitdir`, `commondir`, `HEAD`) — a
 *   `git worktree list`/`prune` read a worktree's admin files while `git worktree add` was still
 *   writing them; worktree.c / builtin/worktree.c.
 * - `could not lock config file <path>: File exists` — config.c, another writer of the config.
 * - `cannot lock ref '<ref>': Unable to create '<path>.lock': File exists` — refs/files-backend.c.
 */
import { isPollyError } from '../../brain/core/errors.js';

/** Patterns of git stderr that mean "another git process was writing; try again". */
export const TRANSIENT_GIT_STDERR: readonly RegExp[] = [
  /Unable to create '[^']*\.lock': File exists/i,
  /failed to read '[^']*\/worktrees\/[^']*\/(locked|gitdir|commondir|HEAD)'/i,
  /could not lock config file .*: File exists/i,
  /unable to read '?[^']*\/worktrees\/[^'\s]*\/(gitdir|commondir|HEAD)'?/i,
];

/** True when `stderr` of a failed git call matches one of {@link TRANSIENT_GIT_STDERR}. Pure. */
export function isTransientGitStderr(stderr: string): boolean {
  return TRANSIENT_GIT_STDERR.some((re) => re.test(stderr));
}

/**
 * True when `error` is a PollyError `git_failed` from ./git.ts whose stderr is transient (a timeout
 * is not: the command may have done its work).
 */
export function isTransientGitError(error: unknown): boolean {
  if (!isPollyError(error) || error.code !== 'git_failed') return false;
  const details = (error.details ?? {}) as { stderr?: unknown; timedOut?: unknown };
  return details.timedOut !== true && typeof details.stderr === 'string' && isTransientGitStderr(details.stderr);
}

export interface GitRetryOptions {
  /** Tries in all, including the first. Default 6. */
  attempts?: number;
  /** Delay before the second try, ms; doubled each time with ±50 % jitter, capped at 2 000. Default 50. */
  baseDelayMs?: number;
  /** Told about each retry (attempt number starting at 2, the error's stderr). */
  onRetry?: (attempt: number, stderr: string) => void;
}

/**
 * Run `fn` (one git call, or a few that are safe to repeat) and repeat it while it fails with a
 * transient git error, at most `attempts` times in all.
 * @throws the last error when every try failed, or the first non-transient error at once.
 */
export async function retryTransientGit<T>(fn: () => Promise<T>, options: GitRetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 6);
  let delay = options.baseDelayMs ?? 50;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || !isTransientGitError(error)) throw error;
      const stderr = String(((error as { details?: { stderr?: unknown } }).details?.stderr as string | undefined) ?? '');
      options.onRetry?.(attempt + 1, stderr.trim().slice(0, 500));
      await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random())));
      delay = Math.min(2000, delay * 2);
    }
  }
}
