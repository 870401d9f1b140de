/**
 * I/O faults of the file systems Polly writes (`.polly/`: the registry, the journal, logs; the
 * worktrees): a full disk (ENOSPC), a quota (EDQUOT), a failing device (EIO), a file system turned
 * read-only under it (EROFS). They must never take the Brain down (issue 27 item 6): the work order
 * whose write failed parks its task with the reason (brain/process/order-executor.ts), the Brain's
 * loop waits and goes on (brain/process/brain-process.ts), and `polly status` says which file
 * system is full and how much is free ({@link diskReport}).
 *
 * A full disk would also refuse the write that parks the task, so Polly keeps a **reserve**: a
 * file of {@link RESERVE_BYTES} in `.polly/logs/` ({@link ensureReserve}), removed on the first fault
 * ({@link releaseReserve}) to make room for the park, the journal and the sibling tasks' writes, and
 * made again once space is back.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** errno codes that are I/O faults of the file system, not of Polly's logic (errno(3)). */
export const IO_FAULT_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS']);

/** The errno code of an I/O fault in `error` or its `cause` chain (its `code`; for ENOSPC/EDQUOT also its message), or null. */
export function ioFaultCode(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && IO_FAULT_CODES.has(code)) return code;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string') {
      // Only the space faults by message (a git or tool error's text); EIO and EROFS by code only,
      // since Polly's own messages about the sandbox's read-only covers name EROFS.
      const m = /\b(ENOSPC|EDQUOT)\b|No space left on device|Disk quota exceeded/.exec(message);
      if (m) return m[1] ?? (m[0].startsWith('Disk') ? 'EDQUOT' : 'ENOSPC');
    }
  }
  return null;
}

/** One file system's free space, for `polly status` and a parked task's reason. */
export interface DiskInfo {
  /** The path asked about. */
  path: string;
  /** Its mount point (from /proc/self/mountinfo; the path itself where unknown). */
  mountPoint: string;
  /** Bytes available to Polly (statfs `bavail × bsize`). */
  freeBytes: number;
  /** The file system's size, bytes. */
  totalBytes: number;
}

function existing(path: string): string {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

/** The mount point holding `path`: the longest mount point of /proc/self/mountinfo (proc(5)) that is a prefix. */
function mountPointOf(path: string): string {
  let best = '/';
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return path;
  }
  for (const line of text.split('\n')) {
    const mp = line.split(' ')[4]?.replace(/\\040/g, ' ');
    if (mp && (path === mp || path.startsWith(mp.endsWith('/') ? mp : `${mp}/`)) && mp.length > best.length) best = mp;
  }
  return best;
}

/** Free and total space of the file system holding `path` (its nearest existing ancestor), or null when statfs fails. */
export function diskInfo(path: string): DiskInfo | null {
  const p = existing(path);
  try {
    const s = statfsSync(p);
    return { path, mountPoint: mountPointOf(p), freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  } catch {
    return null;
  }
}

const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(n < 10 * MiB ? 1 : 0)} MiB`;

/**
 * The reason a task is parked for an I/O fault: what failed, on which file system, how much is
 * free, and what to do. Pure but for {@link diskInfo}.
 */
export function ioFaultReason(code: string, what: string, path: string): string {
  const d = diskInfo(path);
  const where = d ? `the file system mounted at ${d.mountPoint} (${mib(d.freeBytes)} free of ${mib(d.totalBytes)})` : `the file system of ${path}`;
  const fix =
    code === 'EIO'
      ? 'check the device (dmesg) and the file system'
      : code === 'EROFS'
        ? 'remount it read-write'
        : `free space there (large files in the worktrees, old worktrees: polly clean; .polly/logs) or raise the quota`;
  return `I/O fault (${code}) while ${what}: ${where}. Polly parked this task and keeps the others running; ${fix}, then run it again: polly retry`;
}

/** The lines `polly status` shows for Polly's file systems: one per file system under `lowBytes` free, with what to free. */
export function diskReport(paths: readonly string[], lowBytes = 4 * RESERVE_BYTES): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of paths) {
    const d = diskInfo(p);
    if (!d || seen.has(d.mountPoint)) continue;
    seen.add(d.mountPoint);
    if (d.freeBytes >= lowBytes) continue;
    out.push(
      `disk: ${mib(d.freeBytes)} free of ${mib(d.totalBytes)} on ${d.mountPoint} (holds ${p}): free space there (large files in the worktrees, old worktrees: polly clean; .polly/logs), then polly retry the parked tasks`,
    );
  }
  return out;
}

/** Bytes of the reserve file (`.polly/reserve`). */
export const RESERVE_BYTES = 8 * MiB;

/** The reserve file of a `.polly/` directory (under `logs/`, which `.polly/.gitignore` has always ignored). */
export function reservePath(pollyDir: string): string {
  return join(pollyDir, 'logs', 'space-reserve');
}

/**
 * Make `.polly/reserve` ({@link RESERVE_BYTES}, allocated) when it is missing and there is room for
 * it and as much again. Never throws: a reserve that cannot be made is retried later.
 * @returns whether the reserve is in place.
 */
export function ensureReserve(pollyDir: string): boolean {
  const file = reservePath(pollyDir);
  if (existsSync(file)) return true;
  const d = diskInfo(pollyDir);
  if (!d || d.freeBytes < 2 * RESERVE_BYTES) return false;
  let fd: number | null = null;
  try {
    mkdirSync(dirname(file), { recursive: true });
    fd = openSync(file, 'w');
    // Written, not sparse: the blocks must really be held (a tmpfs or a copy-on-write file system would otherwise give them back).
    const chunk = Buffer.alloc(MiB, 0x70);
    for (let i = 0; i < RESERVE_BYTES / MiB; i++) writeSync(fd, chunk);
    return true;
  } catch {
    if (fd !== null) closeSync(fd);
    fd = null;
    rmSync(file, { force: true });
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** Remove `.polly/reserve` to make room after an I/O fault. @returns whether one was removed. */
export function releaseReserve(pollyDir: string): boolean {
  const file = reservePath(pollyDir);
  if (!existsSync(file)) return false;
  rmSync(file, { force: true });
  return true;
}
