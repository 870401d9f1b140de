/**
 * Files Polly itself writes, outside the sandbox, in an agent's state dir (`CLAUDE_CONFIG_DIR`,
 * pi's agent dir): a directory the sandboxed worker can write between turns, so anything below it
 * may be a symlink the worker planted, pointing at `.git/hooks/pre-commit`, `.git/refs/heads/main`
 * or `~/.bashrc`. A plain `writeFileSync` there would write through it with Polly's rights, outside
 * the sandbox (found by an attacker's pass: a pi config write rewrote a git hook).
 *
 * The rules here: the state dir itself (`root`, a bind mount inside the sandbox, which the worker
 * cannot replace) is trusted; every directory below it is checked with `lstat` and a symlink (or a
 * file) in its place is removed, not followed; a file is written to a fresh temp name opened with
 * `O_CREAT | O_EXCL | O_NOFOLLOW` and renamed over the target (a rename replaces a symlink, it never
 * writes through one); a file is read with `O_NOFOLLOW`, and a symlink reads as absent.
 * open(2): https://man7.org/linux/man-pages/man2/open.2.html
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, relative, sep } from 'node:path';

/** Whether `path` is `root` or below it (lexically). Pure. */
function isBelow(root: string, path: string): boolean {
  const rel = relative(root, path);
  return !rel.startsWith('..') && !isAbsolute(rel);
}

function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * Make `dir` (at or below `root`) a real directory, every component below `root` included: a
 * symlink or a file in the way is removed (never followed), a missing one is created.
 * @throws Error when `dir` is not at or below `root`, or a directory cannot be created.
 */
export function ensureDirBelow(root: string, dir: string): void {
  if (!isBelow(root, dir)) throw new Error(`${dir} is not inside the agent state dir ${root}`);
  mkdirSync(root, { recursive: true });
  let at = root;
  for (const part of relative(root, dir).split(sep).filter(Boolean)) {
    at = `${at}${sep}${part}`;
    const st = lstatOrNull(at);
    if (st?.isDirectory()) continue;
    if (st) rmSync(at, { force: true });
    mkdirSync(at);
  }
}

/**
 * Write `data` to `path` (below `root`) without following any symlink the worker planted: the
 * directories are checked ({@link ensureDirBelow}), the data goes to a fresh, unguessable temp name
 * opened `O_CREAT | O_EXCL | O_NOFOLLOW`, which is then renamed over `path`. `data`: text (UTF-8)
 * or bytes; `mode`: the file's permission bits (default 0o600), set on the open descriptor.
 * @throws Error when `path` is not below `root`, or the file system refuses the write.
 */
export function writeFileBelow(root: string, path: string, data: string | Uint8Array, mode = 0o600): void {
  ensureDirBelow(root, dirname(path));
  const tmp = `${path}.${process.pid}.${randomBytes(8).toString('hex')}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    if (typeof data === 'string') writeSync(fd, data);
    else writeSync(fd, data);
    // On the descriptor, before the rename: never a chmod through a path.
    if (mode !== 0o600) fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/**
 * The text of `path` (below `root`), or null when it is missing, is not a regular file, is a
 * symlink (never followed), is larger than {@link MAX_READ_BYTES}, or a directory on the way is
 * not a real one.
 */
export function readFileBelow(root: string, path: string): string | null {
  if (!isBelow(root, path)) return null;
  let at = root;
  for (const part of relative(root, path).split(sep).filter(Boolean).slice(0, -1)) {
    at = `${at}${sep}${part}`;
    if (!lstatOrNull(at)?.isDirectory()) return null;
  }
  if (!lstatOrNull(path)?.isFile()) return null;
  return readRegularFile(path)?.toString('utf8') ?? null;
}

/** Polly reads no worker-written file larger than this (64 MiB): a sparse 2 GB file would hold the Brain ~30 s and take 2 GB of memory. */
export const MAX_READ_BYTES = 64 * 1024 * 1024;

/**
 * The bytes of `path` when it is a regular file of at most `maxBytes` (default
 * {@link MAX_READ_BYTES}), else null: a symlink at `path` is not followed (`O_NOFOLLOW`), a FIFO or
 * device is not waited on (`O_NONBLOCK`) nor read (`fstat` must say regular file; open(2)), and a
 * larger file is not read. Directories above `path` are the caller's to check.
 */
export function readRegularFile(path: string, maxBytes = MAX_READ_BYTES): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const stat = fstatSync(fd);
    return stat.isFile() && stat.size <= maxBytes ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

/** Whether `path` (below `root`) is a regular file reached without a symlink. */
export function isFileBelow(root: string, path: string): boolean {
  return readFileBelow(root, path) !== null;
}
