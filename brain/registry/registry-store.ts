/**
 * Storage of the registry (`.polly/registry.json`) and its journal (`.polly/journal.jsonl`).
 *
 * Two implementations of one {@link RegistryStore} interface:
 * - {@link createFileRegistryStore}: the real one. Every update is a read-modify-write under a
 *   proper-lockfile lock (`registry.json.lock`, a directory; stale after `lockStaleMs` without a
 *   heartbeat), written to `registry.json.tmp` and fsynced (meanwhile the previous good file is
 *   hard-linked to `registry.json.bak`), renamed over `registry.json` (the commit point), and the
 *   transaction's events written to the journal. Then the lock is released while the directory's
 *   fsync and the journal's run (all three follow the commit point), and the update resolves after
 *   both fsyncs: the next writer reads what this one wrote, and its own fsyncs cover it. A crash
 *   leaves the old or the new registry, never half of one.
 * - {@link createMemoryRegistryStore}: the same semantics in memory, for tests.
 *
 * Archive: `registry.archived` events (finished goal trees leaving the registry, see
 * `registry-archive.ts`) are also appended to `archive.jsonl` after the journal, exactly once by
 * seq; a crash between the two is repaired from the journal by {@link repairArchive}. Nothing on
 * the hot path (read, update, journal) reads the archive.
 *
 * Journal exactly-once: the events of a transaction are written into the registry file itself
 * (`pendingJournal`) in the same atomic rename that commits the transaction. The next read, update
 * or journal read compares them with the journal's last seq and appends any that a crash between
 * the rename and the append left out; seqs make the append idempotent.
 */
import { closeSync, existsSync, fsync, linkSync, openSync, fstatSync, readFileSync, renameSync, statSync, unlinkSync, watch, writeSync, type FSWatcher } from 'node:fs';
import { promisify } from 'node:util';
import { copyFile, mkdir, readFile, stat } from 'node:fs/promises';
import { EventEmitter } from 'node:events';
import { join, resolve } from 'node:path';
import lockfile from 'proper-lockfile';
import { PollyError, isPollyError } from '../core/errors.js';
import { appendJournal, fileSignature, readJournalFrom, readJournalTail, startAppend, type JournalCursor, type JournalTail } from './journal.js';
import { migrateRegistry, registryVersionOf, type RawRegistry } from './registry-migrations.js';
import { emptyRegistry, type JournalEntry, type Registry } from './registry-schema.js';
import { ARCHIVE_EVENT } from './registry-archive.js';
import { registryProblem } from './registry-validate.js';

/** Handed to an update function: records journal events committed with the transaction. */
export interface RegistryTx {
  /**
   * Record an event. It gets the next `seq` and the commit time, and is appended to the journal
   * only if the transaction commits. `data` must be JSON-serialisable and hold no secrets.
   * @throws PollyError `internal` if called after the update function returned.
   */
  emit(kind: string, data: Record<string, unknown>): void;
}

export interface RegistryStore {
  /**
   * The current registry, migrated to the current schema and validated (a fresh copy: mutating it
   * changes nothing). A missing file is an empty registry.
   * @throws PollyError `registry_corrupt` (names the file and whether the backup loads),
   *         `registry_newer`, `lock_timeout` (only when a crashed writer's journal must be repaired).
   */
  read(): Promise<Registry>;
  /**
   * Read-modify-write under the lock: `fn` gets a draft to mutate in place and a tx to emit journal
   * events; its result is returned after the commit. If `fn` throws (or rejects), nothing is
   * written and the error propagates. If the draft is unchanged and nothing was emitted, the file
   * is not rewritten. Do not call `update` (or `journal`) from inside `fn`: updates are serialised,
   * so a nested one waits for the outer one forever.
   * @throws PollyError `lock_timeout` (names the lock file), `registry_corrupt`, `registry_newer`,
   *         `internal` when `fn` leaves the registry in an invalid shape (nothing is written).
   */
  update<T>(fn: (draft: Registry, tx: RegistryTx) => T | Promise<T>): Promise<T>;
  /** Journal entries with seq > `afterSeq` (default 0), oldest first, at most `limit`. */
  journal(afterSeq?: number, limit?: number): Promise<JournalEntry[]>;
  /**
   * Wait until the journal holds an entry with seq > `afterSeq`, then return all such entries
   * (oldest first). Returns `[]` when `timeoutMs` passes (a read under way then still returns what it finds) or `signal` aborts first. Wakes on
   * file-system change events, with a slow poll as a fallback (`pollIntervalMs`).
   */
  waitForJournal(afterSeq: number, timeoutMs: number, signal?: AbortSignal): Promise<JournalEntry[]>;
}

export interface RegistryPaths {
  /** The `.polly` directory. */
  dir: string;
  registry: string;
  backup: string;
  journal: string;
  /** `archive.jsonl`: the `registry.archived` journal lines, the registry's finished history. */
  archive: string;
  /** The lock directory proper-lockfile creates while an update runs. */
  lock: string;
}

export interface FileRegistryStore extends RegistryStore {
  paths: RegistryPaths;
}

export interface RegistryStoreOptions {
  /** Clock for journal timestamps (default: the system clock). Lock timing always uses real time. */
  now?: () => Date;
  /**
   * Give up taking the lock after this many milliseconds (default 15 000) — unless the holder's
   * heartbeat has stopped (a dead writer): then the wait extends until its lock goes stale and is
   * taken over, so a writer killed inside its write can never make a live process time out.
   */
  lockTimeoutMs?: number;
  /**
   * A lock whose heartbeat (the lock directory's mtime, refreshed every `lockStaleMs / 2` by its
   * holder) is older than this is stale and taken over (ms, min 2000; default 4000, shorter than
   * the default wait).
   */
  lockStaleMs?: number;
  /** Fallback poll period of {@link RegistryStore.waitForJournal} (ms, default 1000). */
  pollIntervalMs?: number;
}

function closedTxError(): PollyError {
  return new PollyError('internal', 'tx.emit() was called after the update function returned; emit inside the update.');
}

/** Collects emitted events during one update. */
function createTx(): { tx: RegistryTx; events: Array<{ kind: string; data: Record<string, unknown> }>; close(): void } {
  const events: Array<{ kind: string; data: Record<string, unknown> }> = [];
  let open = true;
  return {
    events,
    tx: {
      emit(kind, data) {
        if (!open) throw closedTxError();
        if (typeof kind !== 'string' || kind === '') throw new PollyError('internal', `journal event kind must be a non-empty string, got ${JSON.stringify(kind)}`);
        events.push({ kind, data: JSON.parse(JSON.stringify(data)) as Record<string, unknown> });
      },
    },
    close() {
      open = false;
    },
  };
}

/** Check a draft after an update function ran; nothing is written when it is malformed. */
function assertValidDraft(draft: Registry): void {
  const problem = registryProblem(draft);
  if (problem) throw new PollyError('internal', `a registry update left an invalid registry (${problem}); nothing was written.`, { details: { problem } });
}

function stripPending(reg: Registry): Registry {
  delete reg.pendingJournal;
  delete reg.pendingArchive;
  return reg;
}

// ---------------------------------------------------------------------------------------------
// File store

/** Per registry path: serialises updates of all store instances inside this process. */
const processQueues = new Map<string, Promise<unknown>>();

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const fsyncFd = promisify(fsync);

/** A registry file up to this size (bytes) is read with one synchronous call; a larger one (an unarchived old registry) asynchronously. */
const SYNC_READ_MAX_BYTES = 1024 * 1024;

async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic.
  } finally {
    closeSync(fd);
  }
}

/** The registry lock as {@link createFileRegistryStore}'s `withLock` hands it to its body. */
interface HeldLock {
  /** The error that compromised the lock (its directory was taken over or removed), or null while it is held. */
  compromised(): Error | null;
  /** Release the lock and the in-process queue now (idempotent); settles when the lock directory is gone. */
  release(): Promise<void>;
}

interface LoadedFile {
  /** The migrated, validated registry (with pendingJournal if the file had one). */
  registry: Registry;
  /** The file's text, or null when it does not exist. */
  text: string | null;
  /** The version found on disk (before migration). */
  fileVersion: number;
}

/** Parse + migrate + validate registry text. Returns a problem string instead of throwing for corruption. */
function parseRegistryText(text: string, file: string): { registry: Registry; fileVersion: number } | { problem: string } {
  if (text.trim() === '') return { problem: `the file is empty (${text.length} bytes; a truncated write?)` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { problem: `it is not valid JSON (${(error as Error).message}; the file is ${Buffer.byteLength(text)} bytes)` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { problem: 'the top level is not a JSON object' };
  const fileVersion = registryVersionOf(raw as RawRegistry);
  const { registry } = migrateRegistry(raw as RawRegistry, file); // registry_newer / bad version throw
  const problem = registryProblem(registry);
  if (problem) return { problem: `it does not have the registry's shape (${problem})` };
  return { registry: registry as unknown as Registry, fileVersion };
}

/** Describe the backup for a corruption message: does it exist, does it load? */
async function describeBackup(backup: string): Promise<{ exists: boolean; loads: boolean; summary: string }> {
  let text: string;
  try {
    text = await readFile(backup, 'utf8');
  } catch {
    return { exists: false, loads: false, summary: `No backup exists at ${backup}.` };
  }
  let parsed: ReturnType<typeof parseRegistryText> | { problem: string };
  try {
    parsed = parseRegistryText(text, backup);
  } catch (error) {
    parsed = { problem: (error as Error).message };
  }
  if ('problem' in parsed) return { exists: true, loads: false, summary: `The backup ${backup} exists but does not load either: ${parsed.problem}.` };
  const r = parsed.registry;
  const mtime = (await stat(backup)).mtime.toISOString();
  return {
    exists: true,
    loads: true,
    summary: `The backup ${backup} exists and loads (schema v${parsed.fileVersion}, ${Object.keys(r.tasks).length} tasks, ${Object.keys(r.plans).length} plans, written ${mtime}).`,
  };
}

/** The `registry_corrupt` error: what is wrong, the backup's state, and the exact commands to restore. */
async function corruptError(file: string, backup: string, problem: string): Promise<PollyError> {
  const b = await describeBackup(backup);
  const keep = `cp '${file}' '${file}.corrupt'`;
  const next = b.loads
    ? `Polly will not reset it. Restore the previous good copy with:\n  ${keep} && cp '${backup}' '${file}'\n(this loses only the last update before the damage).`
    : b.exists
      ? `Polly will not reset it. Inspect both files; to start over with an empty registry (git branches and worktrees are untouched), move the damaged file aside:\n  mv '${file}' '${file}.corrupt'`
      : `Polly will not reset it. To start over with an empty registry (git branches and worktrees are untouched), move the damaged file aside:\n  mv '${file}' '${file}.corrupt'`;
  return new PollyError('registry_corrupt', `${file} is corrupt: ${problem}. ${b.summary} ${next}`, {
    details: { file, backup, backupExists: b.exists, backupLoads: b.loads, problem },
  });
}

/**
 * The file-backed store over `dir` (the repository's `.polly` directory; created on first update).
 *
 * Files: `registry.json`, `registry.json.bak` (the previous good file), `registry.json.tmp` (a
 * write in progress), `registry.json.lock/` (the lock), `registry.json.v<N>.bak` (the original of a
 * file migrated from schema v<N>, kept once), `journal.jsonl`.
 */
export function createFileRegistryStore(pollyDir: string, options: RegistryStoreOptions = {}): FileRegistryStore {
  const dir = resolve(pollyDir);
  const now = options.now ?? (() => new Date());
  const lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
  const lockStaleMs = Math.max(options.lockStaleMs ?? 4000, 2000);
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const paths: RegistryPaths = {
    dir,
    registry: join(dir, 'registry.json'),
    backup: join(dir, 'registry.json.bak'),
    journal: join(dir, 'journal.jsonl'),
    archive: join(dir, 'archive.jsonl'),
    lock: join(dir, 'registry.json.lock'),
  };
  const tmpPath = join(dir, 'registry.json.tmp');
  let cursor: JournalCursor = { offset: 0, seq: 0 };
  /** stat signature of a registry file whose pending journal is known to be in the journal. */
  let flushedSignature: string | null = null;
  /** The journal's and the archive's tails as this store last saw them, under their signatures. */
  const knownTails = new Map<string, { signature: string; tail: JournalTail }>();

  /**
   * The tail of `path` (the journal or the archive): from {@link knownTails} while the file keeps
   * the signature it had when this store last read or appended it, else read from the file. Only
   * Polly writes these files, always under the lock, and an append always changes their size.
   */
  async function tailOf(path: string): Promise<JournalTail> {
    const st = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (st === undefined) return readJournalTail(path); // absent: the empty tail (or created since)
    const signature = fileSignature(st);
    const known = knownTails.get(path);
    if (known?.signature === signature) return known.tail;
    const tail = await readJournalTail(path);
    knownTails.set(path, { signature, tail });
    return tail;
  }

  /** Append under the lock, remembering the new tail. */
  async function append(path: string, entries: readonly JournalEntry[], tail: JournalTail): Promise<void> {
    const appended = await appendJournal(path, entries, tail);
    if (appended) knownTails.set(path, appended);
  }

  /** Write under the lock and remember the new tail; the returned promise settles when the lines are on disk. */
  function startAppendKnown(path: string, entries: readonly JournalEntry[], tail: JournalTail): Promise<void> {
    const started = startAppend(path, entries, tail);
    if (started === null) return Promise.resolve();
    knownTails.set(path, { signature: started.signature, tail: started.tail });
    return started.durable;
  }

  /**
   * The identity of the registry this store works on: the `.polly` directory's dev+ino+birth time (the file
   * itself gets a new inode on every atomic write, so its own inode is no identity) and whether a
   * registry file has been seen there. A registry that was there and is gone, or a `.polly`
   * directory replaced under a running process, is a lost registry, never an empty one.
   */
  let identity: { dirId: string | null; seen: boolean } = { dirId: null, seen: false };

  async function dirIdentity(): Promise<string | null> {
    try {
      // An inode number is reused at once after a delete; with the birth time (statx, where the file
      // system records it) a recreated directory differs.
      const s = statSync(dir, { bigint: true }); // metadata only: a synchronous call costs less than a thread-pool trip
      return `${s.dev}:${s.ino}:${s.birthtimeNs}`;
    } catch {
      return null;
    }
  }

  /** The `registry_corrupt` error for a registry that disappeared, with the restore command. */
  async function lostError(why: string): Promise<PollyError> {
    const b = await describeBackup(paths.backup);
    const next = b.loads
      ? `Stop every Polly process of this repository, then restore the last good copy:\n  cp '${paths.backup}' '${paths.registry}'\nand start again (the next start reconciles tasks with git and live processes).`
      : `No loadable backup is left. Stop every Polly process of this repository; to start over with an empty registry (git branches, worktrees and backup refs are untouched) remove ${paths.dir}/registry.json.bak if present and run polly init.`;
    return new PollyError('registry_corrupt', `${paths.registry} ${why}. Polly will not treat it as empty. ${b.summary} ${next}`, {
      details: { file: paths.registry, backup: paths.backup, backupExists: b.exists, backupLoads: b.loads, missing: true },
    });
  }

  async function loadFile(): Promise<LoadedFile> {
    const dirId = await dirIdentity();
    if (identity.dirId !== null && dirId !== identity.dirId) {
      throw await lostError(`is gone: its directory ${dir} was ${dirId === null ? 'deleted' : 'replaced'} while this process used it`);
    }
    identity.dirId ??= dirId;
    let text: string;
    try {
      // Always read: a file edited in place within the file system's timestamp tick keeps its
      // signature, so a cached copy could hide a human's edit. A registry kept small by archiving
      // is read synchronously (tens of microseconds, less than a thread-pool trip under load).
      const st = statSync(paths.registry);
      text = st.size <= SYNC_READ_MAX_BYTES ? readFileSync(paths.registry, 'utf8') : await readFile(paths.registry, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        // A write renames over the file, so it is never absent once written: absent after it was
        // seen, or beside a backup (written from the second update on), it was deleted.
        if (identity.seen) throw await lostError('was deleted while this process used it');
        if (existsSync(paths.backup)) throw await lostError(`is missing while its backup ${paths.backup} exists (it was deleted)`);
        return { registry: emptyRegistry(), text: null, fileVersion: emptyRegistry().schemaVersion };
      }
      throw error;
    }
    identity.seen = true;
    const parsed = parseRegistryText(text, paths.registry);
    if ('problem' in parsed) throw await corruptError(paths.registry, paths.backup, parsed.problem);
    return { registry: parsed.registry, text, fileVersion: parsed.fileVersion };
  }

  /**
   * Take the cross-process lock with proper-lockfile's synchronous calls (mkdir, then utimes + stat
   * for the heartbeat's mtime): metadata calls of microseconds, which through libuv's thread pool
   * cost two thread hops each, and under load a hop waits for a core (timing spans around one
   * update at load 9 on 2 cores: taking and releasing the lock were 1.8 ms of 8.5). Waiting for a
   * held lock stays asynchronous, and so does the release (proper-lockfile's `unlock`): removing
   * the lock directory frees an inode, which waits for the file system's journal (0.3-2 ms measured
   * under load), and the release overlaps the update's last fsyncs ({@link withLock}).
   */
  async function takeLock(): Promise<{ release(): Promise<void>; compromised(): Error | null }> {
    if (!existsSync(dir)) await mkdir(dir, { recursive: true });
    let deadline = Date.now() + lockTimeoutMs;
    let extended = false;
    let delay = 2;
    let lost: Error | null = null;
    for (;;) {
      try {
        // Its returned release is synchronous; the lock is released with unlock() below instead.
        lockfile.lockSync(paths.registry, {
          realpath: false,
          stale: lockStaleMs,
          retries: 0,
          onCompromised: (err) => {
            lost = err;
          },
        });
        return {
          // proper-lockfile's asynchronous unlock of the lock lockSync took (the one per path in this process).
          release: () =>
            lockfile.unlock(paths.registry, { realpath: false }).catch(() => {
              // Already released or compromised: another process owns the lock now.
            }),
          compromised: () => lost,
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
        if (Date.now() >= deadline && !extended) {
          // A live holder refreshes the lock's mtime every lockStaleMs / 2. One that missed that
          // heartbeat (plus a second of slack) is dead or frozen: wait (once) until its lock is
          // stale and take it over, instead of timing out on a corpse.
          extended = true;
          const mtime = await stat(paths.lock).then(
            (s) => s.mtimeMs,
            () => null,
          );
          if (mtime !== null && Date.now() - mtime > lockStaleMs / 2 + 1000) deadline = Math.max(deadline, mtime + lockStaleMs + 1000);
        }
        if (Date.now() >= deadline) {
          throw new PollyError(
            'lock_timeout',
            `could not take the registry lock ${paths.lock} within ${lockTimeoutMs} ms: another Polly process is updating the registry. Retry; if no Polly process is running, the lock is released as stale after ${lockStaleMs} ms (or remove the directory ${paths.lock} yourself).`,
            { cause: error, details: { lock: paths.lock, timeoutMs: lockTimeoutMs } },
          );
        }
        await sleep(delay / 2 + Math.random() * delay);
        delay = Math.min(delay * 2, 50);
      }
    }
  }

  /**
   * Run `body` holding both the in-process queue and the cross-process lock. `body` may release
   * both early with `lock.release()` (idempotent; the next writer, in this process or another, may
   * start at once) and go on with work that needs no lock, such as waiting for fsyncs of what it
   * wrote; otherwise they are released when `body` settles.
   */
  async function withLock<T>(body: (lock: HeldLock) => Promise<T>): Promise<T> {
    const previous = processQueues.get(paths.registry) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => {
      done = resolve;
    });
    const chained = previous.then(() => mine);
    processQueues.set(paths.registry, chained);
    await previous;
    try {
      const lock = await takeLock();
      let released: Promise<void> | null = null;
      const release = (): Promise<void> => {
        released ??= lock.release().finally(done);
        return released;
      };
      try {
        return await body({ compromised: lock.compromised, release });
      } finally {
        await release();
      }
    } finally {
      done();
      if (processQueues.get(paths.registry) === chained) processQueues.delete(paths.registry);
    }
  }

  /** Append the registry's pending entries the journal lacks. Call under the lock. Returns the journal's last seq. */
  async function flushPending(pending: readonly JournalEntry[] | undefined): Promise<number> {
    const tail = await tailOf(paths.journal);
    const missing = (pending ?? []).filter((e) => e.seq > tail.lastSeq);
    if (missing.length > 0 || tail.size > tail.completeSize) await append(paths.journal, missing, tail);
    return Math.max(tail.lastSeq, ...missing.map((e) => e.seq));
  }

  async function signature(): Promise<string | null> {
    const st = statSync(paths.registry, { bigint: true, throwIfNoEntry: false });
    return st === undefined ? null : fileSignature(st);
  }

  /**
   * Outside the lock: if the registry (loaded after `sig` was taken) has pending events the journal
   * lacks — a writer crashed between its rename and its append — repair under the lock.
   */
  async function checkPending(sig: string | null, reg: Registry): Promise<void> {
    if (sig === null || sig === flushedSignature) return;
    const last = reg.pendingJournal?.[reg.pendingJournal.length - 1];
    if (last !== undefined && (await tailOf(paths.journal)).lastSeq < last.seq) {
      await withLock(async () => {
        await flushPending((await loadFile()).registry.pendingJournal);
      });
    }
    flushedSignature = sig;
  }

  async function ensureFlushed(): Promise<void> {
    const sig = await signature();
    if (sig === null || sig === flushedSignature) return;
    await checkPending(sig, (await loadFile()).registry);
  }

  /**
   * Keep the current registry file as `registry.json.bak` (a hard link, renamed into place; a copy
   * on file systems without hard links) and, on the first write after a migration from schema
   * v<N>, as `registry.json.v<N>.bak` once. The link and renames are synchronous (no thread-pool
   * trips); {@link writeRegistry} calls this while the new file's fsync runs on the thread pool, so
   * the rename, which frees the previous backup's inode and so may wait for the file system's
   * journal, overlaps that fsync instead of following it.
   */
  async function keepBackup(fileVersion: number): Promise<void> {
    if (fileVersion < emptyRegistry().schemaVersion) {
      try {
        await copyFile(paths.registry, join(dir, `registry.json.v${fileVersion}.bak`), 1 /* COPYFILE_EXCL */);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    const bakTmp = `${paths.backup}.tmp`;
    try {
      unlinkSync(bakTmp);
    } catch {
      // not there: the usual case
    }
    try {
      linkSync(paths.registry, bakTmp);
    } catch {
      await copyFile(paths.registry, bakTmp); // file systems without hard links
    }
    renameSync(bakTmp, paths.backup);
  }

  /**
   * Write `text` as the registry (temp file, fsync, rename: the commit point) and return the new
   * file's {@link fileSignature}. The `.bak` of the current file is made while the temp file's
   * fsync waits for the disk (it does not depend on the new file; a crash before the rename
   * leaves `.bak` equal to the registry, both the old state). The temp file's open, write (into
   * the page cache) and close and the final rename are synchronous: microseconds each, less than a
   * trip through libuv's thread pool, which under load costs more than the call. The fsync, which
   * waits for the disk, is not.
   */
  async function writeRegistry(text: string, existed: boolean, fileVersion: number, lost: () => Error | null): Promise<string> {
    const fd = openSync(tmpPath, 'w');
    let signature: string;
    try {
      const bytes = Buffer.from(text);
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
      // The backup does not depend on the new file: it runs beside the fsync. Both settle before
      // the fd is closed.
      const [synced, backedUp] = await Promise.allSettled([fsyncFd(fd), existed ? keepBackup(fileVersion) : undefined]);
      if (synced.status === 'rejected') throw synced.reason;
      if (backedUp.status === 'rejected') throw backedUp.reason;
      signature = fileSignature(fstatSync(fd, { bigint: true })); // a rename keeps inode, size and mtime
    } finally {
      closeSync(fd);
    }
    const compromised = lost();
    if (compromised) {
      throw new PollyError('lock_timeout', `lost the registry lock ${paths.lock} before committing (${compromised.message}); nothing was written. Retry the operation.`, {
        cause: compromised,
        details: { lock: paths.lock },
      });
    }
    renameSync(tmpPath, paths.registry);
    identity = { dirId: identity.dirId ?? (await dirIdentity()), seen: true }; // loadFile checked the directory in this update
    return signature;
  }

  const store: FileRegistryStore = {
    paths,

    async read() {
      const sig = await signature();
      const loaded = await loadFile();
      await checkPending(sig, loaded.registry);
      return stripPending(loaded.registry);
    },

    async update<T>(fn: (draft: Registry, tx: RegistryTx) => T | Promise<T>): Promise<T> {
      return withLock(async (lock) => {
        const loaded = await loadFile();
        const journalLast = await flushPending(loaded.registry.pendingJournal);
        const previousPending = loaded.registry.pendingJournal;
        const migratedArchive = loaded.registry.pendingArchive ?? [];
        const draft = stripPending(loaded.registry);
        const t = createTx();
        let result: T;
        try {
          result = await fn(draft, t.tx);
        } finally {
          t.close();
        }
        assertValidDraft(draft);
        // Trees a migration took out (v1 → v2) are journaled with the first write, the journal being the archive's source.
        for (const unit of migratedArchive) t.events.push({ kind: ARCHIVE_EVENT, data: JSON.parse(JSON.stringify(unit)) as Record<string, unknown> });
        const base = Math.max(draft.counters.journalSeq, journalLast);
        const at = now().toISOString();
        const entries: JournalEntry[] = t.events.map((e, i) => ({ seq: base + i + 1, at, kind: e.kind, data: e.data }));
        draft.counters.journalSeq = base + entries.length;
        // Without new events the previous (already journaled) ones stay, so a no-op stays byte-identical.
        const pending = entries.length > 0 ? entries : previousPending;
        if (pending !== undefined) draft.pendingJournal = pending;
        const text = `${JSON.stringify(draft, null, 2)}\n`;
        if (text === loaded.text) return result; // nothing changed, nothing emitted
        const written = await writeRegistry(text, loaded.text !== null, loaded.fileVersion, lock.compromised);
        // The rename was the commit point. If the append fails now (e.g. a full disk), the events are
        // safe in the registry's pendingJournal and the next read, update or journal read appends them.
        // The directory's fsync (which makes the rename durable), the journal's (and the archive's)
        // and the lock's release run at the same time: all come after the commit point, and the
        // update returns only when all are done.
        const settled = (p: Promise<unknown>): Promise<boolean> =>
          p.then(
            () => true,
            () => false,
          );
        const durable: Array<Promise<boolean>> = [settled(fsyncDir(dir))];
        try {
          if (entries.length > 0) durable.push(settled(startAppendKnown(paths.journal, entries, await tailOf(paths.journal))));
          const archived = entries.filter((e) => e.kind === ARCHIVE_EVENT);
          if (archived.length > 0) {
            const tail = await tailOf(paths.archive);
            durable.push(
              settled(
                startAppendKnown(
                  paths.archive,
                  archived.filter((e) => e.seq > tail.lastSeq),
                  tail,
                ),
              ),
            );
          }
        } catch {
          durable.push(Promise.resolve(false));
        }
        // Everything is written: the next writer may read it while the fsyncs run. Its own fsyncs
        // cover what it read from here (its registry holds this state, and an fsync of the journal
        // flushes every line written before it), so no writer is acknowledged on state that could
        // be lost; this update is acknowledged when its own fsyncs are done.
        const [, ...flags] = await Promise.all([lock.release(), ...durable]);
        // Another update of this process may have committed since: a stale signature here only
        // costs the next read a check of the journal's tail.
        flushedSignature = flags.every(Boolean) ? written : null;
        return result;
      });
    },

    async journal(afterSeq = 0, limit = Number.POSITIVE_INFINITY) {
      await ensureFlushed();
      const from = afterSeq >= cursor.seq ? cursor : { offset: 0, seq: 0 };
      const read = await readJournalFrom(paths.journal, from, afterSeq, limit);
      if (read.cursor.seq >= cursor.seq) cursor = read.cursor;
      return read.entries;
    },

    waitForJournal(afterSeq, timeoutMs, signal) {
      return waitUsing(
        () => store.journal(afterSeq),
        (wake) => {
          let watcher: FSWatcher | null = null;
          try {
            watcher = watch(dir, { persistent: false }, (_event, name) => {
              if (name === null || name === 'journal.jsonl' || name === 'registry.json') wake();
            });
            watcher.on('error', () => undefined);
          } catch {
            watcher = null; // no .polly yet, or no watch support: the poll still runs
          }
          const poll = setInterval(wake, pollIntervalMs);
          return () => {
            clearInterval(poll);
            watcher?.close();
          };
        },
        timeoutMs,
        signal,
      );
    },
  };
  return store;
}

/**
 * The shared wait loop: subscribe first (so nothing slips between check and subscribe), check,
 * then re-check on every wake until entries arrive, the timeout passes or the signal aborts.
 */
function waitUsing(check: () => Promise<JournalEntry[]>, subscribe: (wake: () => void) => () => void, timeoutMs: number, signal: AbortSignal | undefined): Promise<JournalEntry[]> {
  return new Promise<JournalEntry[]>((resolve, reject) => {
    if (signal?.aborted) return resolve([]);
    let finished = false;
    let running = false;
    let again = false;
    let timedOut = false;
    const finish = (value: JournalEntry[] | Error): void => {
      if (finished) return;
      finished = true;
      unsubscribe();
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    const onAbort = (): void => finish([]);
    const wake = (): void => {
      if (finished) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      check().then(
        (entries) => {
          running = false;
          if (entries.length > 0) finish(entries);
          else if (timedOut) finish([]);
          else if (again) {
            again = false;
            wake();
          }
        },
        (error: unknown) => {
          running = false;
          finish(isPollyError(error) || error instanceof Error ? error : new Error(String(error)));
        },
      );
    };
    const unsubscribe = subscribe(wake);
    // A check still reading when the time is up decides: entries already in the journal are
    // returned even when reading them took longer than the timeout.
    const timer = setTimeout(
      () => {
        if (running) timedOut = true;
        else finish([]);
      },
      Math.max(0, timeoutMs),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    wake();
  });
}

// ---------------------------------------------------------------------------------------------
// Memory store

export interface MemoryRegistryStore extends RegistryStore {
  /** Replace the whole state (validated), e.g. to seed a test. */
  seed(registry: Registry, journal?: JournalEntry[]): void;
}

/** An in-memory store with the file store's semantics (validation, tx, seqs, waiting), for tests. */
export function createMemoryRegistryStore(options: Pick<RegistryStoreOptions, 'now'> & { initial?: Registry } = {}): MemoryRegistryStore {
  const now = options.now ?? (() => new Date());
  let state: Registry = structuredClone(options.initial ?? emptyRegistry());
  let entries: JournalEntry[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  let queue: Promise<unknown> = Promise.resolve();

  const store: MemoryRegistryStore = {
    seed(registry, journal = []) {
      assertValidDraft(registry);
      state = structuredClone(registry);
      entries = structuredClone(journal);
      events.emit('append');
    },
    async read() {
      return stripPending(structuredClone(state));
    },
    update<T>(fn: (draft: Registry, tx: RegistryTx) => T | Promise<T>): Promise<T> {
      const run = async (): Promise<T> => {
        const draft = stripPending(structuredClone(state));
        const t = createTx();
        let result: T;
        try {
          result = await fn(draft, t.tx);
        } finally {
          t.close();
        }
        assertValidDraft(draft);
        const last = entries[entries.length - 1]?.seq ?? 0;
        const base = Math.max(draft.counters.journalSeq, last);
        const at = now().toISOString();
        const added = t.events.map((e, i) => ({ seq: base + i + 1, at, kind: e.kind, data: e.data }));
        draft.counters.journalSeq = base + added.length;
        state = draft;
        if (added.length > 0) {
          entries.push(...added);
          events.emit('append');
        }
        return result;
      };
      const p = queue.then(run, run);
      queue = p.catch(() => undefined);
      return p;
    },
    async journal(afterSeq = 0, limit = Number.POSITIVE_INFINITY) {
      return structuredClone(entries.filter((e) => e.seq > afterSeq).slice(0, limit));
    },
    waitForJournal(afterSeq, timeoutMs, signal) {
      return waitUsing(
        () => store.journal(afterSeq),
        (wake) => {
          events.on('append', wake);
          return () => events.off('append', wake);
        },
        timeoutMs,
        signal,
      );
    },
  };
  return store;
}

/**
 * Bring `archive.jsonl` up to date with the journal: append the `registry.archived` entries the
 * journal has beyond the archive's last seq (a crash between the journal append and the archive
 * append leaves such a gap; deleting the archive rebuilds it whole). Reads the whole journal: for
 * history commands and repair, never the hot path.
 * @returns how many lines were appended.
 * @throws PollyError `registry_corrupt` when a journal or archive line does not parse.
 */
export async function repairArchive(store: FileRegistryStore): Promise<number> {
  const tail = await readJournalTail(store.paths.archive);
  const missing = (await store.journal(tail.lastSeq)).filter((e) => e.kind === ARCHIVE_EVENT);
  if (missing.length > 0 || tail.size > tail.completeSize) await appendJournal(store.paths.archive, missing, tail);
  return missing.length;
}
