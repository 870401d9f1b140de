/**
 * `.polly/journal.jsonl`: the append-only event log (one {@link JournalEntry} JSON object per
 * line, `seq` strictly increasing from 1). These are the file-level operations; the registry store
 * decides *when* to append (under the registry lock) and keeps appends exactly-once.
 */
import { closeSync, fsync, openSync, fstatSync, ftruncateSync, writeSync, type BigIntStats } from 'node:fs';
import { promisify } from 'node:util';
import { open, readFile, stat } from 'node:fs/promises';
import { PollyError } from '../core/errors.js';
import type { JournalEntry } from './registry-schema.js';

export interface JournalTail {
  /** The seq of the last complete line, 0 when the file is missing or empty. */
  lastSeq: number;
  /** Bytes up to and including the last newline: the complete lines. */
  completeSize: number;
  /** Total bytes in the file; larger than completeSize when a crash left a partial last line. */
  size: number;
}

/**
 * Read the journal's last complete line without reading the whole file (reads backwards in
 * growing windows from the end).
 *
 * @throws PollyError `registry_corrupt` when the last complete line is not a journal entry.
 */
export async function readJournalTail(path: string): Promise<JournalTail> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lastSeq: 0, completeSize: 0, size: 0 };
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return { lastSeq: 0, completeSize: 0, size: 0 };
    let window = 64 * 1024;
    for (;;) {
      const start = Math.max(0, size - window);
      const buf = Buffer.alloc(size - start);
      await handle.read(buf, 0, buf.length, start);
      const lastNl = buf.lastIndexOf(0x0a);
      if (lastNl === -1) {
        if (start === 0) return { lastSeq: 0, completeSize: 0, size }; // only a partial first line
        window *= 4;
        continue;
      }
      const prevNl = buf.lastIndexOf(0x0a, lastNl - 1);
      if (prevNl === -1 && start > 0) {
        window *= 4; // the last complete line starts before this window
        continue;
      }
      const line = buf.subarray(prevNl + 1, lastNl).toString('utf8');
      const entry = parseJournalLine(line, path, `the last complete line (byte ${start + prevNl + 1})`);
      return { lastSeq: entry.seq, completeSize: start + lastNl + 1, size };
    }
  } finally {
    await handle.close();
  }
}

/** Parse one journal line; `where` names it in the error. */
export function parseJournalLine(line: string, path: string, where: string): JournalEntry {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new PollyError(
      'registry_corrupt',
      `${path}: ${where} is not valid JSON (${(error as Error).message}): ${JSON.stringify(line.slice(0, 80))}. The journal is append-only; move the damaged line out by hand after keeping a copy of the file.`,
      {
        cause: error,
        details: { file: path },
      },
    );
  }
  const e = value as Partial<JournalEntry>;
  if (typeof e !== 'object' || e === null || typeof e.seq !== 'number' || typeof e.kind !== 'string' || typeof e.at !== 'string' || typeof e.data !== 'object') {
    throw new PollyError('registry_corrupt', `${path}: ${where} is not a journal entry {seq, at, kind, data}: ${JSON.stringify(line.slice(0, 80))}.`, {
      details: { file: path },
    });
  }
  return e as JournalEntry;
}

/** Serialise entries as journal lines (each ends in a newline). */
export function formatJournalLines(entries: readonly JournalEntry[]): string {
  return entries.map((e) => `${JSON.stringify(e)}\n`).join('');
}

/**
 * A file's identity and version for caches: inode, size and modification time in nanoseconds
 * (`ino:size:mtimeNs`). An append-only or atomically replaced file never returns to an earlier
 * signature (a replacement has a new inode; an append changes size and mtime).
 */
export function fileSignature(s: BigIntStats): string {
  return `${s.ino}:${s.size}:${s.mtimeNs}`;
}

const fsyncFd = promisify(fsync);

/** An append whose lines are written (in the page cache, visible to every reader) and whose fsync is under way. */
export interface StartedAppend {
  /** The file's tail after the append. */
  tail: JournalTail;
  /** The file's {@link fileSignature} after the append. */
  signature: string;
  /** Resolves when the lines are on disk (fsync done, fd closed); rejects when the fsync fails. */
  durable: Promise<void>;
}

/**
 * Write entries at the end of the file and start its fsync, returning before the fsync is done:
 * a caller holding the registry lock can let the next writer in as soon as the lines are written
 * (the next writer's own fsync of the same file flushes these lines too) and await `durable`
 * before it acknowledges. If the file ends in a partial line (a crash mid-append), that fragment
 * is cut first: it is a prefix of an entry the caller is re-appending from the registry's pending
 * journal. Call only under the registry lock.
 *
 * Open, write and close are synchronous calls (microseconds on a local file: cheaper than a trip
 * through libuv's thread pool, which under load costs more than the call); the fsync, which waits
 * for the disk, runs on the thread pool.
 * @returns null when there is nothing to write or cut.
 */
export function startAppend(path: string, entries: readonly JournalEntry[], tail: JournalTail): StartedAppend | null {
  if (entries.length === 0 && tail.size === tail.completeSize) return null;
  const fd = openSync(path, 'a');
  let size = tail.completeSize;
  let signature: string;
  try {
    if (tail.size > tail.completeSize) ftruncateSync(fd, tail.completeSize);
    if (entries.length > 0) {
      const bytes = Buffer.from(formatJournalLines(entries));
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
      size += bytes.length;
    }
    signature = fileSignature(fstatSync(fd, { bigint: true }));
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  const durable = fsyncFd(fd).finally(() => closeSync(fd));
  return { tail: { lastSeq: entries.length > 0 ? entries[entries.length - 1]!.seq : tail.lastSeq, completeSize: size, size }, signature, durable };
}

/**
 * Append entries and fsync ({@link startAppend}, then wait for its fsync). Call only under the
 * registry lock.
 * @returns the file's tail after the append and its {@link fileSignature}, or null when nothing was done.
 */
export async function appendJournal(path: string, entries: readonly JournalEntry[], tail: JournalTail): Promise<{ tail: JournalTail; signature: string } | null> {
  const started = startAppend(path, entries, tail);
  if (started === null) return null;
  await started.durable;
  return { tail: started.tail, signature: started.signature };
}

/** A position in the journal: the byte offset just after the line with `seq`. */
export interface JournalCursor {
  offset: number;
  seq: number;
}

export interface JournalRead {
  entries: JournalEntry[];
  /** Where the last complete line read ends (for the next incremental read). */
  cursor: JournalCursor;
}

/**
 * Read complete lines from byte `from.offset` and return those with seq > `afterSeq`
 * (at most `limit`). A partial last line (a write in progress or a crash) is not returned.
 *
 * @throws PollyError `registry_corrupt` naming the byte offset of a line that does not parse.
 */
export async function readJournalFrom(path: string, from: JournalCursor, afterSeq: number, limit: number): Promise<JournalRead> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], cursor: { offset: 0, seq: 0 } };
    throw error;
  }
  let start = from.offset;
  let cursorSeq = from.seq;
  if (size < start) {
    start = 0; // the file was replaced: read it from the start
    cursorSeq = 0;
  }
  if (size === start) return { entries: [], cursor: { offset: start, seq: cursorSeq } };
  let text: Buffer;
  if (start === 0) {
    text = await readFile(path);
  } else {
    const handle = await open(path, 'r');
    try {
      text = Buffer.alloc(size - start);
      await handle.read(text, 0, text.length, start);
    } finally {
      await handle.close();
    }
  }
  const entries: JournalEntry[] = [];
  let pos = 0;
  let offset = start;
  for (;;) {
    const nl = text.indexOf(0x0a, pos);
    if (nl === -1) break;
    const line = text.subarray(pos, nl).toString('utf8');
    if (line.trim() !== '') {
      const entry = parseJournalLine(line, path, `the line at byte ${start + pos}`);
      if (entry.seq > afterSeq && entries.length < limit) entries.push(entry);
      cursorSeq = entry.seq;
    }
    pos = nl + 1;
    offset = start + pos;
  }
  return { entries, cursor: { offset, seq: cursorSeq } };
}
