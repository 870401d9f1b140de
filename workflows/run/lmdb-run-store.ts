/**
 * The run store on LMDB (the `lmdb` package, lmdb-js: https://github.com/kriszyp/lmdb-js, whose
 * README documents the transaction, batching and sync semantics relied on here).
 *
 * Files: `<dir>/runs.mdb` and `<dir>/runs.mdb-lock` (LMDB's data file and its reader/writer lock
 * table). Named databases inside it:
 * - `runs`: run id → {@link RunRecord} as JSON text;
 * - `live`: run id → true, for each run with status `running` (so listing live runs is O(live));
 * - `journal`: seq → {@link RunJournalEntry};
 * - `journal-by-run`: [run id, seq] → true (so one run's journal is O(its entries));
 * - `meta`: `journalSeq` (the last seq) and `format` (this layout's version, 1).
 *
 * Why it is safe and fast (see README "Storage"):
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
 *   100 and at 100,000 live runs (measured with `npm run bench -- runtime`, see README "Storage").
 * - Crash safety: LMDB is copy-on-write with two meta pages; a process killed at any point leaves
 *   the last committed transaction (lmdb.tech/doc, "Caveats": robust mutexes recover a writer
 *   lock held by a dead process).
 * - An update function that throws writes nothing: it runs on a private copy, and the store writes
 *   only after it returned.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { PollyError } from '../../brain/core/errors.js';
import type { RunRecord } from './run-records.js';
import type { RunDraft, RunJournalEntry, RunListFilter, RunStore, RunStoreTx } from './run-store.js';
import { applyRunUpdate, type AppliedRunUpdate } from './run-update.js';

/** This store's layout version, kept in `meta.format`. */
export const LMDB_RUN_STORE_FORMAT = 1;

/** Default cap on the updates one LMDB commit carries (see the header: it bounds LMDB's free list). */
export const DEFAULT_MAX_UPDATES_PER_COMMIT = 64;

export interface LmdbRunStoreOptions {
  /** Clock for journal timestamps (default: the system clock). */
  now?: () => Date;
  /**
   * Most updates one commit carries (an integer ≥ 1; default {@link DEFAULT_MAX_UPDATES_PER_COMMIT}).
   * Applies to the process's queue for this file: the first store opened on a file sets it.
   */
  maxUpdatesPerCommit?: number;
}

export interface LmdbRunStore extends RunStore {
  /** The LMDB data file. */
  readonly path: string;
  /** How many commit groups (of up to `maxUpdatesPerCommit` updates) this process has had committed on the file; lmdb-js may write two queued groups in one LMDB commit. */
  readonly commits: number;
}

/** One queued update: applied inside a commit, settled after that commit is durable. */
interface QueuedUpdate {
  runId: string;
  fn: (draft: RunDraft, tx: RunStoreTx) => unknown;
  now: () => Date;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Env {
  root: RootDatabase;
  /** Run records as JSON text (encoded and compared by this store, not by lmdb-js). */
  runs: Database<string, string>;
  live: Database<boolean, string>;
  journal: Database<RunJournalEntry, number>;
  byRun: Database<boolean, [string, number]>;
  meta: Database<number, string>;
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
  commits: number;
}

/** One environment per file per process: LMDB must not be opened twice by one process (lmdb.tech/doc, "Caveats"). */
const envs = new Map<string, Env>();

function openEnv(path: string, maxUpdatesPerCommit: number): Env {
  const existing = envs.get(path);
  if (existing) {
    existing.users++;
    return existing;
  }
  let root: RootDatabase;
  try {
    root = open({ path, noSubdir: true, maxDbs: 8, overlappingSync: false, encoding: 'json' });
  } catch (error) {
    throw new PollyError(
      'registry_corrupt',
      `cannot open the run store ${path}: ${(error as Error).message}. If the file is damaged, move it aside (runs and their journal are lost; the registry is untouched) and restart.`,
      { cause: error, details: { file: path } },
    );
  }
  const env: Env = {
    root,
    runs: root.openDB<string, string>({ name: 'runs', encoding: 'string' }),
    live: root.openDB<boolean, string>({ name: 'live', encoding: 'json' }),
    journal: root.openDB<RunJournalEntry, number>({ name: 'journal', encoding: 'json' }),
    byRun: root.openDB<boolean, [string, number]>({ name: 'journal-by-run', encoding: 'json' }),
    meta: root.openDB<number, string>({ name: 'meta', encoding: 'json' }),
    users: 1,
    queue: [],
    inFlight: 0,
    scheduled: false,
    idle: [],
    maxUpdatesPerCommit,
    commits: 0,
  };
  const format = env.meta.get('format');
  if (format !== undefined && format > LMDB_RUN_STORE_FORMAT) {
    void root.close();
    throw new PollyError(
      'registry_newer',
      `the run store ${path} has format ${format}, but this Polly understands up to ${LMDB_RUN_STORE_FORMAT}. It was written by a newer Polly: upgrade Polly instead of letting an older one write it.`,
      { details: { file: path, format } },
    );
  }
  envs.set(path, env);
  return env;
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
    applied = applyRunUpdate(u.runId, e.runs.get(u.runId) ?? null, u.fn);
  } catch (error) {
    return { ok: false, error }; // nothing was written for this update
  }
  const { result, text, status, events } = applied;
  if (text !== null) {
    void e.runs.put(u.runId, text);
    if (status === 'running') void e.live.put(u.runId, true);
    else void e.live.remove(u.runId);
  }
  if (events.length > 0) {
    let seq = e.meta.get('journalSeq') ?? 0;
    const at = u.now().toISOString();
    for (const ev of events) {
      seq += 1;
      void e.journal.put(seq, { seq, at, kind: ev.kind, data: ev.data });
      void e.byRun.put([String(ev.data.run ?? ''), seq], true);
    }
    void e.meta.put('journalSeq', seq);
    if (e.meta.get('format') === undefined) void e.meta.put('format', LMDB_RUN_STORE_FORMAT);
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
      .transaction(() => group.map((u) => applyQueued(e, u)))
      .then(
        (outcomes: Outcome[]) => {
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
  const env = openEnv(path, maxUpdatesPerCommit);
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

    async getRun(runId) {
      const e = live();
      e.root.resetReadTxn();
      const text = e.runs.get(runId);
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
        for (const id of e.live.getKeys()) {
          const text = e.runs.get(id);
          const run = text === undefined ? null : (JSON.parse(text) as RunRecord);
          if (run && run.status === 'running') out.push(run);
        }
        return out;
      }
      const out: RunRecord[] = [];
      for (const { value } of e.runs.getRange()) {
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
        for (const key of e.byRun.getKeys({ start: [opts.run, afterSeq + 1], end: [opts.run, Number.MAX_SAFE_INTEGER] })) {
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
