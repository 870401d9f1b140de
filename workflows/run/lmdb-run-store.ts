/**
 * The run store on LMDB (the `lmdb` package, lmdb-js: https://github.com/kriszyp/lmdb-js, whose
 * README documents the transaction, batching and sync semantics relied on here).
 *
 * Files: `<dir>/runs.mdb` and `<dir>/runs.mdb-lock` (LMDB's data file and its reader/writer lock
 * table). Named databases inside it (layout {@link LMDB_RUN_STORE_FORMAT}, 3):
 * - `run-ids`: run id → the run's ordinal (1, 2, 3, … in the order run ids were first written),
 *   for all but the most recently created runs;
 * - `recent-run-ids`: run id → ordinal for runs created since their ids were last moved to
 *   `run-ids` (at most about `recentIdsLimit`; a run id is in exactly one of the two);
 * - `run-records`: ordinal → {@link RunRecord} as JSON text;
 * - `live-runs`: ordinal → true, for each run with status `running` (so listing live runs is O(live));
 * - `journal`: seq → {@link RunJournalEntry};
 * - `run-journal`: [ordinal, seq] → true (so one run's journal is O(its entries));
 * - `meta`: `journalSeq` (the last seq), `runSeq` (the last ordinal), `recentIds` (entries in
 *   `recent-run-ids`), `indexCursor` (the last run id moved to `run-ids`) and `format` (3).
 *
 * Why ordinals: run ids are hashes (run-identity.ts), so keyed by id every step's writes landed
 * on a random page of each B-tree. LMDB copies every page a commit touches (copy-on-write) and
 * writes each one back, so with 32 steps per commit at 100,000 live runs a commit wrote twice
 * the pages it wrote at 100 (measured: 320-350 KiB → 673-688 KiB written per commit, 3,600 →
 * 9,700 write calls, system CPU per step 25-34 → 79-101 µs). Keyed by ordinal, the runs a
 * process is working on sit together at the right edge of each tree and share pages; only
 * the id index takes one random write per new run.
 *
 * Why two id indexes: that one random write grew with history. With 32 steps per commit about 11
 * runs are new, and at 100,000 runs each landed on its own leaf of a 3-level `run-ids` tree (1,419
 * leaves, 17 branch pages), so a commit copied ~20 index pages where it copied ~10 at 100 runs
 * (measured: 127 KiB written per commit at 100 runs, 172 KiB at 100 live runs with 100,000 finished
 * ones, 180 KiB at 100,000 live: the cost follows the number of run ids, not of live runs). New
 * ids now go to the small `recent-run-ids` tree, whose few leaves many new ids share. Once it holds
 * `recentIdsLimit` ids, each commit also moves the next `recentIdsLimit / 16` of them, plus as many
 * as it created (in key order from `indexCursor`, wrapping) to `run-ids`: those ids fall in one sixteenth of the key
 * space, so they share leaves there too and an id costs a fraction of a page instead of a leaf and
 * a branch page. This is a two-level log-structured merge in miniature (O'Neil et al., "The
 * Log-Structured Merge-Tree", Acta Informatica 33, 1996), inside LMDB's own transactions, so it
 * keeps every guarantee below.
 * Layout 1 (`runs`: id → JSON, `live`: id → true, `journal-by-run`: [id, seq]) is migrated in
 * place when a store is opened, in one write transaction (all or nothing, see {@link migrateLayout1}).
 * Layout 2 (no `recent-run-ids`) is layout 3 with an empty recent index: opening one only raises
 * `meta.format`, so that an older Polly, which would not look up recent ids, refuses it.
 *
 * Why it is safe and fast (see docs/storage.md):
 * - One update = one lmdb-js asynchronous `transaction()` callback: it runs inside LMDB's single
 *   write transaction, which holds LMDB's writer lock (shared by every process that opens the
 *   file), so read-modify-write of one run is atomic across processes; the run, its `live` mark
 *   and its journal lines commit together or not at all.
 * - Group commit: updates wait in this process's queue (one per file) and are applied together in
 *   one lmdb-js `transaction()`, committed and fsynced on lmdb-js's own thread (not the JS thread);
 *   the updates that arrive while a commit is on its way to disk form the next one, handed to
 *   lmdb-js at once (two groups in flight) so the writer goes on without waiting for the JS thread. With
 *   `overlappingSync: false` the transaction's promise resolves only after that commit is flushed
 *   to disk, so a step is durable before it is acknowledged.
 * - Bounded commits: one group carries at most `maxUpdatesPerCommit` updates (default
 *   {@link DEFAULT_MAX_UPDATES_PER_COMMIT}), one LMDB commit at most two groups. Why: every page a commit copies (copy-on-write) is
 *   freed, and LMDB keeps those page numbers in its free list, which it searches and rewrites on
 *   every later commit and which does not shrink. One huge commit (e.g. 2,000 runs written in one
 *   event turn, or `expireLeases` over 100,000 live runs) left a free list of ~7,000 pages (14
 *   overflow pages of its own) and made every later single step 3-4× as expensive in CPU; with
 *   commits of at most 64 updates the free list stays within one page and a step costs the same at
 *   100 and at 100,000 live runs (measured with `npm run bench -- runtime`, see docs/storage.md).
 * - Crash safety: LMDB is copy-on-write with two meta pages; a process killed at any point leaves
 *   the last committed transaction (lmdb.tech/doc, "Caveats": robust mutexes recover a writer
 *   lock held by a dead process).
 * - A shared transaction id set back by another process's open (an LMDB bug, ITS#9496, in the
 *   LMDB lmdb-js 3.5.6 bundles) would make the next commit overwrite the last one: every write
 *   transaction first checks that it began on the newest snapshot, and if not, repairs the lock
 *   file and goes again, having written nothing (see {@link onLatestSnapshot}).
 * - An update function that throws writes nothing: it runs on a private copy, and the store writes
 *   only after it returned.
 */
import { closeSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { PollyError } from '../../brain/core/errors.js';
import type { RunRecord } from './run-records.js';
import type { RunDraft, RunJournalEntry, RunListFilter, RunStore, RunStoreTx } from './run-store.js';
import { applyRunUpdate, type AppliedRunUpdate } from './run-update.js';

/** This store's layout version, kept in `meta.format`. */
export const LMDB_RUN_STORE_FORMAT = 3;

/** Default cap on the updates one LMDB commit carries (see the header: it bounds LMDB's free list). */
export const DEFAULT_MAX_UPDATES_PER_COMMIT = 64;

/** Default number of run ids `recent-run-ids` holds before commits start moving them to `run-ids` (see the header). */
export const DEFAULT_RECENT_IDS_LIMIT = 4096;

export interface LmdbRunStoreOptions {
  /** Clock for journal timestamps (default: the system clock). */
  now?: () => Date;
  /**
   * Most updates one commit carries (an integer ≥ 1; default {@link DEFAULT_MAX_UPDATES_PER_COMMIT}).
   * Applies to the process's queue for this file: the first store opened on a file sets it.
   */
  maxUpdatesPerCommit?: number;
  /**
   * How many run ids the recent index holds before each commit moves `ceil(limit / 16)` of them to
   * the main index (an integer ≥ 1; default {@link DEFAULT_RECENT_IDS_LIMIT}). Larger: cheaper per
   * new run at large histories, more pages in the recent index. Like `maxUpdatesPerCommit`, the
   * first store opened on a file in a process sets it; processes may differ (any value is safe).
   */
  recentIdsLimit?: number;
}

export interface LmdbRunStore extends RunStore {
  /** The LMDB data file. */
  readonly path: string;
  /** How many commit groups (of up to `maxUpdatesPerCommit` updates) this process has had committed on the file; lmdb-js may write two queued groups in one LMDB commit. */
  readonly commits: number;
  /** How many commits this process found begun on a stale snapshot and sent again after repairing LMDB's lock file (LMDB ITS#9496; see the header). */
  readonly staleRepairs: number;
}

/** One queued update: applied inside a commit, settled after that commit is durable. */
interface QueuedUpdate {
  runId: string;
  fn: (draft: RunDraft, tx: RunStoreTx) => unknown;
  now: () => Date;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** How many commits this update was put back from because they began on a stale snapshot (see {@link onLatestSnapshot}). */
  staleRetries?: number;
}

interface Env {
  root: RootDatabase;
  /** LMDB's lock file (`runs.mdb-lock`), whose shared last-transaction id {@link onLatestSnapshot} repairs. */
  lockPath: string;
  /** How many times this process found the shared transaction id behind the data file and repaired it. */
  staleRepairs: number;
  /** Run id → ordinal, for ids moved out of `recent`. */
  ids: Database<number, string>;
  /** Run id → ordinal, for recently created runs. */
  recent: Database<number, string>;
  /** Ordinal → run record as JSON text (encoded and compared by this store, not by lmdb-js). */
  records: Database<string, number>;
  live: Database<boolean, number>;
  journal: Database<RunJournalEntry, number>;
  /** [ordinal, seq] → true. */
  byRun: Database<boolean, [number, number]>;
  meta: Database<number | string, string>;
  users: number;
  /** Updates waiting for the next commit, oldest first. */
  queue: QueuedUpdate[];
  /** Commits handed to lmdb-js and not yet settled (at most {@link COMMITS_IN_FLIGHT}). */
  inFlight: number;
  /** A submit is scheduled for the end of this event turn. */
  scheduled: boolean;
  /** Called once the queue is empty and no commit is in flight (`close` waits for it). */
  idle: Array<() => void>;
  maxUpdatesPerCommit: number;
  recentIdsLimit: number;
  commits: number;
}

/**
 * Returned by a commit's callback that found its snapshot stale (see {@link onLatestSnapshot}):
 * it wrote nothing, and its updates go again.
 */
const STALE_BASE = Symbol('stale-base');

/** How many times one update is put back for a stale snapshot before it fails (a repair that does not hold). */
const MAX_STALE_RETRIES = 3;

/** LMDB's lock file: its magic number (offset 0, uint32) and the shared last-committed transaction id (offset 8, uint64), both little-endian on x86-64/arm64. */
const LOCK_MAGIC = 0xbeefc0de;
const LOCK_TXNID_OFFSET = 8;

/** What lmdb-js exposes (not in its typings) that {@link onLatestSnapshot} needs: `mdb_env_info`'s last committed txn id. */
interface EnvInfo {
  env: { info(): { lastTxnId: number } };
}

/**
 * Inside a write transaction: true if it began on the newest committed snapshot; else repair and
 * return false (the caller must then write nothing, so the transaction commits empty, and try again).
 *
 * Why: the LMDB inside lmdb-js 3.5.6 (its mdb.master3 branch, dependencies/lmdb/libraries/liblmdb/
 * mdb.c, `mdb_env_open2`) sets the lock file's shared "last committed transaction id" from the
 * data file's meta page whenever any process opens the environment, without the writer lock. A
 * process opening the store while another commits can thus set it back one transaction, and the
 * next write transaction in any process then begins on the snapshot before the last commit: that
 * commit, already acknowledged, is silently overwritten (or LMDB stops with MDB_PROBLEM
 * "mdb_page_touch no parent", as one CI-like run of the 4-process run-store test did). Upstream
 * LMDB fixed this as ITS#9496 in 0.9.29 (bugs.openldap.org/show_bug.cgi?id=9496; the same fix
 * in monero-project/monero#7656); lmdb-js's branch predates it.
 *
 * How: a write transaction's id is the shared id + 1, and `mdb_env_info` reads the newest meta
 * page of the data file itself. If this transaction's id is not past it, the shared id was set
 * back: under the writer lock (held here, so no commit can move it), the lock file's id at
 * offset {@link LOCK_TXNID_OFFSET} is set to the data file's, after checking the magic number (else
 * a `registry_corrupt` error, nothing written) and that the offset holds the id this transaction
 * began from (else another opener set it again meanwhile: nothing is written, and the caller's next
 * try repairs it). Callers try at most {@link MAX_STALE_RETRIES} times more. Costs one
 * `mdb_env_info` per commit when all is well.
 */
function onLatestSnapshot(root: RootDatabase, lockPath: string): boolean {
  const txnId = root.getWriteTxnId();
  const newest = (root as unknown as EnvInfo).env.info().lastTxnId;
  if (txnId > newest) return true;
  const fd = openSync(lockPath, 'r+');
  try {
    const head = Buffer.alloc(16);
    readSync(fd, head, 0, 16, 0);
    if (head.readUInt32LE(0) !== LOCK_MAGIC) throw staleBaseError(lockPath);
    if (head.readBigUInt64LE(LOCK_TXNID_OFFSET) !== BigInt(txnId - 1)) return false; // set back again meanwhile (another opener): the next try repairs it
    const fixed = Buffer.alloc(8);
    fixed.writeBigUInt64LE(BigInt(newest));
    writeSync(fd, fixed, 0, 8, LOCK_TXNID_OFFSET);
  } finally {
    closeSync(fd);
  }
  process.stderr.write(
    `polly: run store ${lockPath}: a write began on a stale snapshot (transaction ${txnId}, newest committed ${newest}; another process opened the store during a commit, LMDB ITS#9496); the shared transaction id is repaired and the write goes again, nothing was lost\n`,
  );
  return false;
}

/** Run `fn` in a synchronous write transaction that began on the newest snapshot (see {@link onLatestSnapshot}), trying again after a repair. */
function writeSyncOnLatest<T>(root: RootDatabase, lockPath: string, fn: () => T): T {
  for (let attempt = 0; attempt <= MAX_STALE_RETRIES; attempt++) {
    let ran = false;
    const result = root.transactionSync(() => {
      if (!onLatestSnapshot(root, lockPath)) return undefined;
      ran = true;
      return fn();
    });
    if (ran) return result as T;
  }
  throw staleBaseError(lockPath);
}

/** The error when the shared transaction id of `lockPath` cannot be repaired (an LMDB lock file of another layout, or a repair that does not hold). */
function staleBaseError(lockPath: string): PollyError {
  const dataPath = lockPath.replace(/-lock$/, '');
  return new PollyError(
    'registry_corrupt',
    `the run store ${dataPath}: its lock file ${lockPath} says an older transaction is the newest, and it could not be repaired (LMDB ITS#9496). Nothing was written. Stop every Polly process using this repository, then start again: the first process to open the store rewrites the lock file.`,
    { details: { file: dataPath, lockFile: lockPath } },
  );
}

/** One environment per file per process: LMDB must not be opened twice by one process (lmdb.tech/doc, "Caveats"). */
const envs = new Map<string, Env>();

function openEnv(path: string, maxUpdatesPerCommit: number, recentIdsLimit: number): Env {
  const existing = envs.get(path);
  if (existing) {
    existing.users++;
    return existing;
  }
  let root: RootDatabase;
  try {
    root = open({ path, noSubdir: true, maxDbs: 12, overlappingSync: false, encoding: 'json' });
  } catch (error) {
    throw new PollyError(
      'registry_corrupt',
      `cannot open the run store ${path}: ${(error as Error).message}. If the file is damaged, move it aside (runs and their journal are lost; the registry is untouched) and restart.`,
      { cause: error, details: { file: path } },
    );
  }
  // All named databases are opened (and, in a new file, created) in one write transaction: lmdb-js
  // otherwise runs one per openDB, and processes opening a new store at once would interleave seven.
  const lockPath = `${path}-lock`;
  const dbs = writeSyncOnLatest(root, lockPath, () => ({
    ids: root.openDB<number, string>({ name: 'run-ids', encoding: 'json' }),
    recent: root.openDB<number, string>({ name: 'recent-run-ids', encoding: 'json' }),
    records: root.openDB<string, number>({ name: 'run-records', encoding: 'string' }),
    live: root.openDB<boolean, number>({ name: 'live-runs', encoding: 'json' }),
    journal: root.openDB<RunJournalEntry, number>({ name: 'journal', encoding: 'json' }),
    byRun: root.openDB<boolean, [number, number]>({ name: 'run-journal', encoding: 'json' }),
    meta: root.openDB<number | string, string>({ name: 'meta', encoding: 'json' }),
  }));
  const env: Env = {
    root,
    lockPath,
    staleRepairs: 0,
    ...dbs,
    users: 1,
    queue: [],
    inFlight: 0,
    scheduled: false,
    idle: [],
    maxUpdatesPerCommit,
    recentIdsLimit,
    commits: 0,
  };
  const format = metaNumber(env, 'format');
  if (format !== undefined && format > LMDB_RUN_STORE_FORMAT) {
    void root.close();
    throw new PollyError(
      'registry_newer',
      `the run store ${path} has format ${format}, but this Polly understands up to ${LMDB_RUN_STORE_FORMAT}. It was written by a newer Polly: upgrade Polly instead of letting an older one write it.`,
      { details: { file: path, format } },
    );
  }
  try {
    migrateLayout1(env);
  } catch (error) {
    void root.close();
    throw new PollyError(
      'registry_corrupt',
      `cannot migrate the run store ${path} from layout 1 to ${LMDB_RUN_STORE_FORMAT}: ${(error as Error).message}. Nothing was changed (the migration is one transaction); if the file is damaged, move it aside (runs and their journal are lost; the registry is untouched) and restart.`,
      { cause: error, details: { file: path } },
    );
  }
  if (format === 2) writeSyncOnLatest(root, lockPath, () => void env.meta.put('format', LMDB_RUN_STORE_FORMAT)); // see the header: layout 2 is layout 3 with no recent ids
  envs.set(path, env);
  return env;
}

/** A numeric `meta` entry (`journalSeq`, `runSeq`, `recentIds`, `format`) in the current transaction, or undefined. */
function metaNumber(e: Env, key: string): number | undefined {
  const value = e.meta.get(key);
  return typeof value === 'number' ? value : undefined;
}

/** Names of the named databases of layout 1 (run id keys), migrated by {@link migrateLayout1}. */
const LAYOUT_1_DBS = ['runs', 'live', 'journal-by-run'] as const;

/**
 * Move a layout-1 store (Polly before run ordinals: `runs` id → JSON, `live` id → true,
 * `journal-by-run` [id, seq] → true) to this layout, in one synchronous write transaction under
 * LMDB's writer lock: every run gets an ordinal (in id order), its record, live mark and journal
 * index move, the old databases are dropped and `meta.format` becomes 2, or, if the process dies
 * or anything throws, nothing changed. Another process that migrated first leaves nothing to do.
 * The journal (`journal`, seq → entry) and `meta.journalSeq` are the same in both layouts.
 * Costs one pass over the old databases, once; a store without them is not written to.
 */
function migrateLayout1(e: Env): void {
  const present = (): string[] => {
    const names = new Set<string>();
    for (const key of e.root.getKeys()) if (typeof key === 'string') names.add(key);
    return LAYOUT_1_DBS.filter((name) => names.has(name));
  };
  if (present().length === 0) return;
  writeSyncOnLatest(e.root, e.lockPath, () => {
    const names = present(); // again under the writer lock: another process may have migrated meanwhile
    if (names.length === 0) return;
    const runs = e.root.openDB<string, string>({ name: 'runs', encoding: 'string' });
    const live = e.root.openDB<boolean, string>({ name: 'live', encoding: 'json' });
    const byRun = e.root.openDB<boolean, [string, number]>({ name: 'journal-by-run', encoding: 'json' });
    let ord = metaNumber(e, 'runSeq') ?? 0;
    const migratedOrdinal = (id: string): number => {
      const have = e.ids.get(id);
      if (have !== undefined) return have;
      ord += 1;
      void e.ids.put(id, ord);
      return ord;
    };
    for (const { key, value } of runs.getRange()) {
      const o = migratedOrdinal(key);
      void e.records.put(o, value);
    }
    for (const key of live.getKeys()) void e.live.put(migratedOrdinal(key), true);
    for (const [id, seq] of byRun.getKeys()) void e.byRun.put([migratedOrdinal(String(id)), seq], true);
    void e.meta.put('runSeq', ord);
    void e.meta.put('format', LMDB_RUN_STORE_FORMAT);
    runs.dropSync();
    live.dropSync();
    byRun.dropSync();
  });
}

/** The ordinal of `runId` in the current (read or write) transaction, from either id index, or undefined. */
function ordinalOf(e: Env, runId: string): number | undefined {
  return e.recent.get(runId) ?? e.ids.get(runId);
}

/** The ordinal of `runId`, assigned now (next `meta.runSeq`, in the recent index) when it has none. Inside the write transaction only. */
function ordinalFor(e: Env, runId: string): number {
  const have = ordinalOf(e, runId);
  if (have !== undefined) return have;
  const ord = (metaNumber(e, 'runSeq') ?? 0) + 1;
  void e.meta.put('runSeq', ord);
  void e.recent.put(runId, ord);
  void e.meta.put('recentIds', (metaNumber(e, 'recentIds') ?? 0) + 1);
  if (metaNumber(e, 'format') === undefined) void e.meta.put('format', LMDB_RUN_STORE_FORMAT);
  return ord;
}

/**
 * Once the recent index holds `recentIdsLimit` ids, move the next `ceil(recentIdsLimit / 16)`
 * of them plus as many as this commit added (`added`), in key order after `meta.indexCursor`
 * (wrapping to the first key), to `run-ids`. Inside the write transaction only; called once per
 * commit group, so the recent index stays within its limit plus one commit's new ids, however
 * fast runs are created, and a commit moves at most `ceil(recentIdsLimit / 16)` + `added` ids.
 */
function moveRecentIds(e: Env, added: number): void {
  const count = metaNumber(e, 'recentIds') ?? 0;
  if (count < e.recentIdsLimit) return;
  const chunk = Math.ceil(e.recentIdsLimit / 16) + added;
  const cursor = e.meta.get('indexCursor');
  const moving: Array<{ key: string; value: number }> = [];
  const take = (range: { start?: string; end?: string }): void => {
    for (const entry of e.recent.getRange(range)) {
      if (moving.length >= chunk) break;
      moving.push(entry);
    }
  };
  if (typeof cursor === 'string') {
    take({ start: cursor }); // the ids after the last one moved …
    take({ end: cursor }); // … then from the first id, wrapping (`end` is exclusive: nothing is taken twice)
  } else take({});
  for (const { key, value } of moving) {
    void e.ids.put(key, value);
    void e.recent.remove(key);
  }
  void e.meta.put('recentIds', count - moving.length);
  if (moving.length > 0) void e.meta.put('indexCursor', moving[moving.length - 1]!.key);
}

/** The stored JSON text of `runId` in the current (read or write) transaction, or undefined. */
function recordText(e: Env, runId: string): string | undefined {
  const ord = ordinalOf(e, runId);
  return ord === undefined ? undefined : e.records.get(ord);
}

interface Outcome {
  ok: boolean;
  result?: unknown;
  error?: unknown;
}

/**
 * Apply one update inside the open write transaction: the run, its `live` mark and its journal
 * lines. An update function that throws writes nothing (its outcome carries the error).
 */
function applyQueued(e: Env, u: QueuedUpdate): Outcome {
  let applied: AppliedRunUpdate<unknown>;
  try {
    applied = applyRunUpdate(u.runId, recordText(e, u.runId) ?? null, u.fn);
  } catch (error) {
    return { ok: false, error }; // nothing was written for this update
  }
  const { result, text, status, events } = applied;
  if (text !== null) {
    const ord = ordinalFor(e, u.runId);
    void e.records.put(ord, text);
    if (status === 'running') void e.live.put(ord, true);
    else void e.live.remove(ord);
  }
  if (events.length > 0) {
    let seq = metaNumber(e, 'journalSeq') ?? 0;
    const at = u.now().toISOString();
    for (const ev of events) {
      seq += 1;
      void e.journal.put(seq, { seq, at, kind: ev.kind, data: ev.data });
      void e.byRun.put([ordinalFor(e, String(ev.data.run ?? '')), seq], true);
    }
    void e.meta.put('journalSeq', seq);
  }
  return { ok: true, result };
}

/**
 * Commits handed to lmdb-js at once: while one is being written and fsynced on lmdb-js's thread,
 * the next is already queued there, so the writer does not wait for a trip through the JS event
 * loop between commits. lmdb-js may merge queued transactions into one LMDB commit, so a commit
 * carries at most this many times `maxUpdatesPerCommit` updates: still a bound on the free list.
 */
const COMMITS_IN_FLIGHT = 2;

/** Submit at the end of this event turn (so the turn's updates share a commit), unless the pipeline is full. */
function kick(e: Env): void {
  if (e.scheduled || e.inFlight >= COMMITS_IN_FLIGHT) return;
  if (e.queue.length === 0) {
    if (e.inFlight === 0) for (const done of e.idle.splice(0)) done();
    return;
  }
  e.scheduled = true;
  setImmediate(() => {
    e.scheduled = false;
    submit(e);
  });
}

/**
 * Hand the queue to lmdb-js in groups of at most `maxUpdatesPerCommit` while the pipeline has
 * room; each update settles once its commit is durable (or the commit failed: then every update
 * of that commit rejects, and none of it was written).
 */
function submit(e: Env): void {
  while (e.inFlight < COMMITS_IN_FLIGHT && e.queue.length > 0) {
    const group = e.queue.splice(0, e.maxUpdatesPerCommit);
    e.inFlight++;
    e.root
      .transaction((): Outcome[] | typeof STALE_BASE => {
        if (!onLatestSnapshot(e.root, e.lockPath)) return STALE_BASE; // nothing written: the group goes again
        const before = metaNumber(e, 'recentIds') ?? 0;
        const outcomes = group.map((u) => applyQueued(e, u));
        moveRecentIds(e, (metaNumber(e, 'recentIds') ?? 0) - before);
        return outcomes;
      })
      .then(
        (outcomes: Outcome[] | typeof STALE_BASE) => {
          if (outcomes === STALE_BASE) {
            e.staleRepairs++;
            const tries = (group[0]!.staleRetries ?? 0) + 1;
            if (tries > MAX_STALE_RETRIES) {
              for (const u of group) u.reject(staleBaseError(e.lockPath));
              return;
            }
            for (const u of group) u.staleRetries = tries;
            e.queue.unshift(...group); // first again, in the same order
            return;
          }
          e.commits++;
          group.forEach((u, i) => {
            const o = outcomes[i]!;
            if (o.ok) u.resolve(o.result);
            else u.reject(o.error);
          });
        },
        (error: unknown) => {
          for (const u of group) u.reject(error);
        },
      )
      .finally(() => {
        e.inFlight--;
        kick(e);
      });
  }
}

/**
 * The LMDB run store in `dir` (created if missing): `<dir>/runs.mdb`. Several processes may open
 * the same directory; one process shares one LMDB environment between store instances.
 * @throws PollyError `registry_corrupt` when the file cannot be opened, `registry_newer` for a newer layout.
 */
export function createLmdbRunStore(dir: string, options: LmdbRunStoreOptions = {}): LmdbRunStore {
  const now = options.now ?? (() => new Date());
  mkdirSync(resolve(dir), { recursive: true });
  const path = join(resolve(dir), 'runs.mdb');
  const maxUpdatesPerCommit = options.maxUpdatesPerCommit ?? DEFAULT_MAX_UPDATES_PER_COMMIT;
  if (!Number.isInteger(maxUpdatesPerCommit) || maxUpdatesPerCommit < 1)
    throw new PollyError(
      'bad_input',
      `maxUpdatesPerCommit must be an integer ≥ 1, got ${JSON.stringify(maxUpdatesPerCommit)}; leave it unset for the default ${DEFAULT_MAX_UPDATES_PER_COMMIT}.`,
    );
  const recentIdsLimit = options.recentIdsLimit ?? DEFAULT_RECENT_IDS_LIMIT;
  if (!Number.isInteger(recentIdsLimit) || recentIdsLimit < 1)
    throw new PollyError('bad_input', `recentIdsLimit must be an integer ≥ 1, got ${JSON.stringify(recentIdsLimit)}; leave it unset for the default ${DEFAULT_RECENT_IDS_LIMIT}.`);
  const env = openEnv(path, maxUpdatesPerCommit, recentIdsLimit);
  let closed = false;

  function live(): Env {
    if (closed) throw new PollyError('internal', `the run store ${path} was closed; open a new one.`);
    return env;
  }

  const store: LmdbRunStore = {
    path,
    get commits() {
      return env.commits;
    },
    get staleRepairs() {
      return env.staleRepairs;
    },

    async getRun(runId) {
      const e = live();
      e.root.resetReadTxn();
      const text = recordText(e, runId);
      return text === undefined ? null : (JSON.parse(text) as RunRecord);
    },

    updateRun<T>(runId: string, fn: (draft: RunDraft, tx: RunStoreTx) => T): Promise<T> {
      const e = live();
      return new Promise<T>((resolve, reject) => {
        e.queue.push({ runId, fn, now, resolve: resolve as (value: unknown) => void, reject });
        kick(e);
      });
    },

    async listRuns(filter: RunListFilter = {}) {
      const e = live();
      e.root.resetReadTxn();
      if (filter.status === 'running') {
        const out: RunRecord[] = [];
        for (const ord of e.live.getKeys()) {
          const text = e.records.get(ord);
          const run = text === undefined ? null : (JSON.parse(text) as RunRecord);
          if (run && run.status === 'running') out.push(run);
        }
        return out;
      }
      const out: RunRecord[] = [];
      for (const { value } of e.records.getRange()) {
        const run = JSON.parse(value) as RunRecord;
        if (!filter.status || run.status === filter.status) out.push(run);
      }
      return out;
    },

    async journal(afterSeq = 0, opts = {}) {
      const e = live();
      e.root.resetReadTxn();
      const limit = opts.limit ?? Number.POSITIVE_INFINITY;
      const out: RunJournalEntry[] = [];
      if (opts.run !== undefined) {
        const ord = ordinalOf(e, opts.run);
        if (ord === undefined) return out;
        for (const key of e.byRun.getKeys({ start: [ord, afterSeq + 1], end: [ord, Number.MAX_SAFE_INTEGER] })) {
          if (out.length >= limit) break;
          const entry = e.journal.get(key[1]);
          if (entry) out.push(entry);
        }
        return out;
      }
      for (const { value } of e.journal.getRange({ start: afterSeq + 1 })) {
        if (out.length >= limit) break;
        out.push(value);
      }
      return out;
    },

    async close() {
      if (closed) return;
      closed = true;
      env.users--;
      if (env.users === 0 && (env.inFlight > 0 || env.queue.length > 0)) await new Promise<void>((done) => env.idle.push(done)); // updates already queued still commit
      if (env.users === 0 && envs.get(path) === env) {
        envs.delete(path);
        await env.root.close();
      }
    },
  };
  return store;
}
