/**
 * One Brain per repository, enforced outside the registry it protects: `.polly/brain.lock`, a
 * pid file naming the Brain that holds it (`{pid, startTime, startedAt}`). The file survives a
 * deleted or corrupt registry, so a second Brain is refused even then. A holder that died (SIGKILL,
 * a crash) leaves the file behind; the next Brain sees the pid is gone (or now names another
 * process: the start time from `/proc/<pid>/stat` differs) and takes the lock over. Taking and
 * taking over run inside a short proper-lockfile section on the same path, so two Brains starting
 * at once cannot both win.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { PollyError } from '../core/errors.js';

/** What `.polly/brain.lock` holds. */
export interface BrainLockHolder {
  pid: number;
  /** Field 22 of `/proc/<pid>/stat` (clock ticks since boot), or null where there is no /proc. */
  startTime: string | null;
  /** ISO time the lock was taken. */
  startedAt: string;
}

export interface BrainLock {
  /** The lock file. */
  readonly path: string;
  /** The previous holder when it was a dead Brain's lock taken over, else null. */
  readonly previous: BrainLockHolder | null;
  /** Remove the lock file if this process still holds it. Idempotent. */
  release(): Promise<void>;
}

/** The start time of `pid` (`/proc/<pid>/stat` field 22, proc(5)), or null without /proc. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** True when `holder` names a live process that is the one that took the lock. */
export function holderAlive(holder: BrainLockHolder): boolean {
  if (!pidAlive(holder.pid)) return false;
  if (holder.startTime === null) return true;
  const now = processStartTime(holder.pid);
  return now === null || now === holder.startTime;
}

function parseHolder(text: string): BrainLockHolder | null {
  try {
    const v = JSON.parse(text) as Partial<BrainLockHolder>;
    if (typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0) {
      return { pid: v.pid, startTime: typeof v.startTime === 'string' ? v.startTime : null, startedAt: String(v.startedAt ?? '') };
    }
  } catch {
    // unreadable: treated as no holder (a crash mid-write of this small file)
  }
  return null;
}

/**
 * Take `.polly/brain.lock` for this process.
 * @param pollyDir the repository's `.polly` directory (created if missing).
 * @throws PollyError `already_running` naming the live holder's pid and how to stop it;
 *   `lock_timeout` when another process keeps the short take-over section for over 10 s.
 */
export async function acquireBrainLock(pollyDir: string, options: { pid?: number; now?: () => Date } = {}): Promise<BrainLock> {
  const pid = options.pid ?? process.pid;
  const path = join(pollyDir, 'brain.lock');
  await mkdir(pollyDir, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(path, { realpath: false, lockfilePath: `${path}.take`, stale: 10_000, retries: { retries: 50, minTimeout: 20, maxTimeout: 200 } });
  } catch (error) {
    throw new PollyError(
      'lock_timeout',
      `could not take ${path}.take (another Polly is starting a Brain for this repository); retry in a moment, or remove ${path}.take if no Polly process runs.`,
      {
        cause: error,
        details: { path },
      },
    );
  }
  try {
    const text = await readFile(path, 'utf8').catch(() => null);
    const holder = text === null ? null : parseHolder(text);
    if (holder && holder.pid !== pid && holderAlive(holder)) {
      throw new PollyError(
        'already_running',
        `a Brain already runs for this repository (pid ${holder.pid}, since ${holder.startedAt}; ${path}). Stop it first (kill ${holder.pid}: it stops gracefully and leaves its workers running) or let it finish; one Brain per repository.`,
        { details: { pid: holder.pid, lock: path } },
      );
    }
    const mine: BrainLockHolder = { pid, startTime: processStartTime(pid), startedAt: (options.now?.() ?? new Date()).toISOString() };
    await writeFile(path, `${JSON.stringify(mine)}\n`);
    const previous = holder && holder.pid !== pid ? holder : null;
    return {
      path,
      previous,
      async release() {
        const current = parseHolder(await readFile(path, 'utf8').catch(() => ''));
        if (current?.pid === pid && current.startTime === mine.startTime) await rm(path, { force: true });
      },
    };
  } finally {
    await release().catch(() => undefined);
  }
}
