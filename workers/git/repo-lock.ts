/**
 * Serializes git admin operations (worktree add/remove/prune, branch moves, submodule init — all of
 * which write shared files in the common git dir such as `config`, `packed-refs` and
 * `worktrees/`) per repository, within this process (a promise queue) and across processes
 * (proper-lockfile on `<git-common-dir>/polly-admin.lock`, a directory created atomically by
 * mkdir, refreshed while held and considered stale after `staleMs`).
 */
import { lock } from 'proper-lockfile';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';

export interface RepoLock {
  /** The lock directory (`<git-common-dir>/polly-admin.lock`). */
  readonly path: string;
  /**
   * Run `fn` while holding the repository's admin lock; releases it however `fn` ends.
   * @throws PollyError `lock_timeout` when the lock is not had within `timeoutMs`.
   */
  withLock<T>(fn: () => Promise<T>): Promise<T>;
}

export interface RepoLockOptions {
  /** Absolute path of the repository's common git dir (`git rev-parse --git-common-dir`). */
  gitCommonDir: string;
  /** How long to wait for another process's lock, ms. Default 60 000. */
  timeoutMs?: number;
  /** A lock not refreshed for this long is taken over (its holder died), ms. Default 10 000. */
  staleMs?: number;
}

/** In-process tails of the queue, keyed by lock path, shared by every RepoLock of this process. */
const queues = new Map<string, Promise<unknown>>();

/** Create the lock for one repository. */
export function createRepoLock(options: RepoLockOptions): RepoLock {
  const path = join(options.gitCommonDir, 'polly-admin.lock');
  const timeoutMs = options.timeoutMs ?? 60_000;
  const staleMs = options.staleMs ?? 10_000;

  async function acquire(): Promise<() => Promise<void>> {
    const deadline = Date.now() + timeoutMs;
    let delay = 10;
    for (;;) {
      try {
        return await lock(options.gitCommonDir, {
          lockfilePath: path,
          realpath: false,
          stale: staleMs,
          update: Math.max(1000, Math.floor(staleMs / 4)),
          retries: 0,
          // Losing a lock we hold (e.g. the machine slept past `stale`) must not crash the process:
          // the operation under way finishes, and git's own ref/index locks still protect the files.
          onCompromised: () => undefined,
        });
      } catch (error) {
        if ((error as { code?: string }).code !== 'ELOCKED') {
          throw new PollyError('git_failed', `cannot take the repository admin lock ${path}: ${String(error)}`, { cause: error });
        }
        if (Date.now() >= deadline) {
          throw new PollyError(
            'lock_timeout',
            `the repository admin lock ${path} is held by another Polly process and was not released within ${timeoutMs} ms. ` +
              `Wait for it to finish, or remove the directory if no Polly process is running.`,
            { cause: error, details: { path, timeoutMs } },
          );
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(200, delay * 2);
      }
    }
  }

  return {
    path,
    withLock<T>(fn: () => Promise<T>): Promise<T> {
      const previous = queues.get(path) ?? Promise.resolve();
      const run = previous.then(async () => {
        const release = await acquire();
        try {
          return await fn();
        } finally {
          await release().catch(() => undefined);
        }
      });
      const tailPromise = run.catch(() => undefined);
      queues.set(path, tailPromise);
      void tailPromise.then(() => {
        if (queues.get(path) === tailPromise) queues.delete(path);
      });
      return run;
    },
  };
}
