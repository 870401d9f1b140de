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
 * - Group commit: lmdb-js batches every transaction callback queued in one event turn into one
 *   LMDB transaction, committed and fsynced on its own thread (not the JS thread). With
 *   `overlappingSync: false` a callback's promise resolves only after that commit is flushed to
 *   disk, so a step is durable before it is acknowledged.
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

export interface LmdbRunStoreOptions {
  /** Clock for journal timestamps (default: the system clock). */
  now?: () => Date;
}

export interface LmdbRunStore extends RunStore {
  /** The LMDB data file. */
  readonly path: string;
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
}

/** One environment per file per process: LMDB must not be opened twice by one process (lmdb.tech/doc, "Caveats"). */
const envs = new Map<string, Env>();

function openEnv(path: string): Env {
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

interface Outcome<T> {
  ok: boolean;
  result?: T;
  error?: unknown;
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
  const env = openEnv(path);
  let closed = false;

  function live(): Env {
    if (closed) throw new PollyError('internal', `the run store ${path} was closed; open a new one.`);
    return env;
  }

  const store: LmdbRunStore = {
    path,

    async getRun(runId) {
      const e = live();
      e.root.resetReadTxn();
      const text = e.runs.get(runId);
      return text === undefined ? null : (JSON.parse(text) as RunRecord);
    },

    async updateRun<T>(runId: string, fn: (draft: RunDraft, tx: RunStoreTx) => T): Promise<T> {
      const e = live();
      const outcome = await e.root.transaction((): Outcome<T> => {
        let applied: AppliedRunUpdate<T>;
        try {
          applied = applyRunUpdate(runId, e.runs.get(runId) ?? null, fn);
        } catch (error) {
          return { ok: false, error }; // nothing was written in this callback
        }
        const { result, text, status, events } = applied;
        if (text !== null) {
          void e.runs.put(runId, text);
          if (status === 'running') void e.live.put(runId, true);
          else void e.live.remove(runId);
        }
        if (events.length > 0) {
          let seq = e.meta.get('journalSeq') ?? 0;
          const at = now().toISOString();
          for (const ev of events) {
            seq += 1;
            void e.journal.put(seq, { seq, at, kind: ev.kind, data: ev.data });
            void e.byRun.put([String(ev.data.run ?? ''), seq], true);
          }
          void e.meta.put('journalSeq', seq);
          if (e.meta.get('format') === undefined) void e.meta.put('format', LMDB_RUN_STORE_FORMAT);
        }
        return { ok: true, result };
      });
      if (!outcome.ok) throw outcome.error;
      return outcome.result as T;
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
      if (env.users === 0) {
        envs.delete(path);
        await env.root.close();
      }
    },
  };
  return store;
}
