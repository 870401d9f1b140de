/**
 * The run store on a PostgreSQL server (the `pg` package, node-postgres: https://node-postgres.com,
 * whose "Pooling" and "Transactions" pages document the client and pool used here), for several
 * Polly processes, on one machine or several, sharing one database.
 *
 * Tables, in the schema named by `schema` (default `polly`; created if missing):
 * - `runs` (id text primary key, status text, record text): each {@link RunRecord} as JSON text,
 *   with a partial index on running runs (so listing live runs is O(live));
 * - `run_journal` (seq bigint primary key, at text, kind text, run text, data text): the journal,
 *   indexed on (run, seq) so one run's journal is O(its entries);
 * - `run_meta` (key text primary key, value bigint): `journalSeq` (the last seq) and `format` (1).
 *
 * Why it keeps the contract of `run-store.ts` (the same one the LMDB store keeps):
 * - One writer at a time, across every process on the database: a write transaction first takes
 *   the `journalSeq` row with `SELECT … FOR UPDATE` (PostgreSQL docs, "Explicit Locking", row-level
 *   locks), as an LMDB write transaction takes LMDB's writer lock. So a read-modify-write of a run
 *   sees the latest committed run, and journal seqs are gapless and in commit order (a sequence
 *   would leave gaps on rollback). Leases, retries and exactly-once reports live in the runtime on
 *   top of that atomic update, exactly as on LMDB; no lock is held between transactions.
 * - Group commit: updates wait in this process's queue and are applied together in one
 *   transaction of at most `maxUpdatesPerCommit` updates, one transaction in flight per store.
 * - Durable before acknowledged: every connection runs with `synchronous_commit=on` (whatever the
 *   server's default), so COMMIT returns after the WAL is flushed, and only then do updates resolve.
 * - Crash safety: a process killed inside a transaction leaves it uncommitted; the server rolls it
 *   back and releases its lock when the connection drops.
 * - An update function that throws writes nothing of its own: it runs on a private copy and the
 *   store writes only after it returned; the other updates of its transaction still commit.
 *
 * The connection string is a secret (it may carry a password): it is never logged or put into an
 * error message.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { PollyError } from '../../brain/core/errors.js';
import type { RunRecord } from './run-records.js';
import type { RunDraft, RunJournalEntry, RunListFilter, RunStore, RunStoreTx } from './run-store.js';
import { applyRunUpdate } from './run-update.js';

/** This store's table layout version, kept in `run_meta.format`. */
export const POSTGRES_RUN_STORE_FORMAT = 1;

export interface PostgresRunStoreOptions {
  /** A libpq connection URI (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING), e.g. `postgresql://polly@127.0.0.1:5432/polly`. Never logged. */
  connectionString: string;
  /** The schema holding the tables (a lower-case SQL identifier, default `polly`): several stores can share one database. */
  schema?: string;
  /** Clock for journal timestamps (default: the system clock). */
  now?: () => Date;
  /** Most updates one transaction carries (an integer ≥ 1; default 64). */
  maxUpdatesPerCommit?: number;
  /** Connections in the pool (reads use them in parallel; writes use one at a time). Default 4. */
  poolSize?: number;
}

export interface PostgresRunStore extends RunStore {
  /** The schema the tables are in. */
  readonly schema: string;
  /** How many write transactions this store has committed. */
  readonly commits: number;
}

interface QueuedUpdate {
  runId: string;
  fn: (draft: RunDraft, tx: RunStoreTx) => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** A store fault as a PollyError, without the connection string. */
function storeFault(what: string, error: unknown): PollyError {
  const e = error as { message?: string; code?: string };
  return new PollyError(
    'registry_corrupt',
    `the Postgres run store could not ${what}: ${e.message ?? String(error)}${e.code ? ` (SQLSTATE ${e.code})` : ''}. Check that the server is up and the connection URL's database and role exist, then retry.`,
    { cause: error, details: e.code ? { sqlstate: e.code } : undefined },
  );
}

/**
 * A run store on the PostgreSQL database at `options.connectionString`. The tables are created on
 * first use (under an advisory lock, so several processes may start at once). Returns at once;
 * the first call waits for the connection and the tables.
 * @throws PollyError `bad_input` for a bad schema name or cap; calls reject with `registry_corrupt`
 * when the server cannot be reached or a statement fails, and `registry_newer` for a newer layout.
 */
export function createPostgresRunStore(options: PostgresRunStoreOptions): PostgresRunStore {
  const schema = options.schema ?? 'polly';
  if (!SCHEMA_NAME.test(schema))
    throw new PollyError('bad_input', `the Postgres run store's schema must be a lower-case SQL identifier (${SCHEMA_NAME.source}), got ${JSON.stringify(schema)}.`);
  const maxUpdatesPerCommit = options.maxUpdatesPerCommit ?? 64;
  if (!Number.isInteger(maxUpdatesPerCommit) || maxUpdatesPerCommit < 1)
    throw new PollyError('bad_input', `maxUpdatesPerCommit must be an integer ≥ 1, got ${JSON.stringify(maxUpdatesPerCommit)}; leave it unset for the default 64.`);
  const now = options.now ?? (() => new Date());
  const s = `"${schema}"`;
  // `pg` is loaded here, not at import: a Brain on the default LMDB run store never needs its ~40
  // modules (brain/registry/run-storage.ts imports this file; issue 33 item 6, the Brain's start).
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg;
  const pool = new Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 4,
    options: `-c synchronous_commit=on -c search_path=${schema}`,
  });
  pool.on('error', () => {
    // An idle client lost its connection (server restart): the pool drops it and the next call reconnects.
  });

  let ready: Promise<void> | null = null;
  function init(): Promise<void> {
    ready ??= (async () => {
      const c = await pool.connect().catch((error: unknown) => {
        throw storeFault('connect', error);
      });
      try {
        await c.query('BEGIN');
        await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`polly-run-store:${schema}`]);
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${s}.runs (id text PRIMARY KEY, status text NOT NULL, record text NOT NULL)`);
        await c.query(`CREATE INDEX IF NOT EXISTS runs_running ON ${s}.runs (id) WHERE status = 'running'`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${s}.run_journal (seq bigint PRIMARY KEY, at text NOT NULL, kind text NOT NULL, run text NOT NULL, data text NOT NULL)`);
        await c.query(`CREATE INDEX IF NOT EXISTS run_journal_run ON ${s}.run_journal (run, seq)`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${s}.run_meta (key text PRIMARY KEY, value bigint NOT NULL)`);
        await c.query(`INSERT INTO ${s}.run_meta (key, value) VALUES ('journalSeq', 0), ('format', $1) ON CONFLICT (key) DO NOTHING`, [POSTGRES_RUN_STORE_FORMAT]);
        const format = Number((await c.query(`SELECT value FROM ${s}.run_meta WHERE key = 'format'`)).rows[0]?.value);
        await c.query('COMMIT');
        if (format > POSTGRES_RUN_STORE_FORMAT)
          throw new PollyError(
            'registry_newer',
            `the Postgres run store (schema ${schema}) has format ${format}, but this Polly understands up to ${POSTGRES_RUN_STORE_FORMAT}. It was written by a newer Polly: upgrade Polly instead of letting an older one write it.`,
            { details: { schema, format } },
          );
      } catch (error) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw error instanceof PollyError ? error : storeFault('create its tables', error);
      } finally {
        c.release();
      }
    })();
    ready.catch(() => {
      ready = null; // a later call tries again (the server may come up)
    });
    return ready;
  }

  const queue: QueuedUpdate[] = [];
  let writing = false;
  let scheduled = false;
  let commits = 0;
  let closed = false;
  const idle: Array<() => void> = [];

  function kick(): void {
    if (writing || scheduled) return;
    if (queue.length === 0) {
      for (const done of idle.splice(0)) done();
      return;
    }
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void writeGroup();
    });
  }

  /** One transaction for up to `maxUpdatesPerCommit` queued updates; settles each after COMMIT (or rejects them all if the transaction failed). */
  async function writeGroup(): Promise<void> {
    writing = true;
    const group = queue.splice(0, maxUpdatesPerCommit);
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    let c: pg.PoolClient | null = null;
    try {
      await init();
      c = await pool.connect();
      await c.query('BEGIN');
      let seq = Number((await c.query(`SELECT value FROM ${s}.run_meta WHERE key = 'journalSeq' FOR UPDATE`)).rows[0].value);
      const at = now().toISOString();
      for (const u of group) {
        const row = (await c.query(`SELECT record FROM ${s}.runs WHERE id = $1`, [u.runId])).rows[0] as { record: string } | undefined;
        let applied: ReturnType<typeof applyRunUpdate>;
        try {
          applied = applyRunUpdate(u.runId, row?.record ?? null, u.fn);
        } catch (error) {
          outcomes.push({ ok: false, value: error });
          continue;
        }
        if (applied.text !== null)
          await c.query(`INSERT INTO ${s}.runs (id, status, record) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, record = EXCLUDED.record`, [
            u.runId,
            applied.status,
            applied.text,
          ]);
        for (const ev of applied.events) {
          seq += 1;
          await c.query(`INSERT INTO ${s}.run_journal (seq, at, kind, run, data) VALUES ($1, $2, $3, $4, $5)`, [
            seq,
            at,
            ev.kind,
            String(ev.data.run ?? ''),
            JSON.stringify(ev.data),
          ]);
        }
        outcomes.push({ ok: true, value: applied.result });
      }
      await c.query(`UPDATE ${s}.run_meta SET value = $1 WHERE key = 'journalSeq'`, [seq]);
      await c.query('COMMIT');
      commits++;
      for (const [i, u] of group.entries()) {
        const o = outcomes[i]!;
        if (o.ok) u.resolve(o.value);
        else u.reject(o.value);
      }
    } catch (error) {
      if (c) await c.query('ROLLBACK').catch(() => undefined);
      const fault = error instanceof PollyError ? error : storeFault('write', error);
      for (const u of group) u.reject(fault);
    } finally {
      c?.release();
      writing = false;
      kick();
    }
  }

  function live(): void {
    if (closed) throw new PollyError('internal', `the Postgres run store (schema ${schema}) was closed; open a new one.`);
  }

  async function read<R>(what: string, sql: string, params: unknown[]): Promise<R[]> {
    live();
    await init();
    try {
      return (await pool.query(sql, params)).rows as R[];
    } catch (error) {
      throw storeFault(what, error);
    }
  }

  return {
    schema,
    get commits() {
      return commits;
    },

    async getRun(runId) {
      const rows = await read<{ record: string }>('read a run', `SELECT record FROM ${s}.runs WHERE id = $1`, [runId]);
      return rows[0] ? (JSON.parse(rows[0].record) as RunRecord) : null;
    },

    updateRun<T>(runId: string, fn: (draft: RunDraft, tx: RunStoreTx) => T): Promise<T> {
      live();
      return new Promise<T>((resolve, reject) => {
        queue.push({ runId, fn, resolve: resolve as (value: unknown) => void, reject });
        kick();
      });
    },

    async listRuns(filter: RunListFilter = {}) {
      const rows = filter.status
        ? await read<{ record: string }>('list runs', `SELECT record FROM ${s}.runs WHERE status = $1`, [filter.status])
        : await read<{ record: string }>('list runs', `SELECT record FROM ${s}.runs`, []);
      return rows.map((r) => JSON.parse(r.record) as RunRecord);
    },

    async journal(afterSeq = 0, opts = {}) {
      const limit = opts.limit ?? null;
      const rows =
        opts.run !== undefined
          ? await read<{ seq: string; at: string; kind: string; data: string }>(
              'read the journal',
              `SELECT seq, at, kind, data FROM ${s}.run_journal WHERE run = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
              [opts.run, afterSeq, limit],
            )
          : await read<{ seq: string; at: string; kind: string; data: string }>(
              'read the journal',
              `SELECT seq, at, kind, data FROM ${s}.run_journal WHERE seq > $1 ORDER BY seq LIMIT $2`,
              [afterSeq, limit],
            );
      return rows.map((r): RunJournalEntry => ({ seq: Number(r.seq), at: r.at, kind: r.kind, data: JSON.parse(r.data) as Record<string, unknown> }));
    },

    async close() {
      if (closed) return;
      closed = true;
      if (writing || scheduled || queue.length > 0) await new Promise<void>((done) => idle.push(done)); // updates already queued still commit
      await pool.end();
    },
  };
}
