/**
 * {@link WorkClaims} on the PostgreSQL database of the run store (`postgres-run-store.ts`), in the
 * same schema: table `work_claims` (key text primary key, owner, label, lease_until, claimed_at,
 * settled_at, outcome, detail, generation, takeovers).
 *
 * Atomic across processes: a claim is ONE statement, `INSERT … ON CONFLICT (key) DO UPDATE …
 * WHERE <free, own, lapsed or settled before newerThan> RETURNING` (PostgreSQL docs, "INSERT",
 * ON CONFLICT DO UPDATE: "the row proposed for insertion … is locked, and either inserted or
 * updated atomically"; a conflicting row whose WHERE is false is left as it is and not returned).
 * So of two Pollys claiming the same key at once exactly one gets a row back. Renewals and
 * settlements are conditional UPDATEs on (key, owner, unsettled). Lease times are the server's
 * `now()`: the machines' clocks never decide who holds a claim.
 *
 * The connection string is a secret: never logged or put into an error message.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { PollyError } from '../../brain/core/errors.js';
import type { ClaimResult, WorkClaim, WorkClaims } from './work-claims.js';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

interface Row {
  key: string;
  owner: string;
  label: string;
  lease_until: Date;
  claimed_at: Date;
  settled_at: Date | null;
  outcome: string | null;
  detail: string | null;
  generation: number;
  takeovers: number;
}

function toClaim(r: Row): WorkClaim {
  return {
    key: r.key,
    owner: r.owner,
    label: r.label,
    leaseUntil: r.lease_until.toISOString(),
    claimedAt: r.claimed_at.toISOString(),
    settledAt: r.settled_at ? r.settled_at.toISOString() : null,
    outcome: r.outcome,
    detail: r.detail,
    generation: Number(r.generation),
    takeovers: Number(r.takeovers),
  };
}

function fault(what: string, error: unknown): PollyError {
  const e = error as { message?: string; code?: string };
  return new PollyError(
    'registry_corrupt',
    `the Postgres work claims could not ${what}: ${e.message ?? String(error)}${e.code ? ` (SQLSTATE ${e.code})` : ''}. Check that the server is up and the connection URL's database and role exist, then retry.`,
    { cause: error, details: e.code ? { sqlstate: e.code } : undefined },
  );
}

/**
 * The work claims in `schema` (default `polly`) of the database at `connectionString` (a libpq URI,
 * https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING). The table is made on
 * first use. @throws PollyError `bad_input` for a bad schema name; calls reject with `registry_corrupt`.
 */
export function createPostgresWorkClaims(options: { connectionString: string; schema?: string }): WorkClaims {
  const schema = options.schema ?? 'polly';
  if (!SCHEMA_NAME.test(schema))
    throw new PollyError('bad_input', `the Postgres work claims' schema must be a lower-case SQL identifier (${SCHEMA_NAME.source}), got ${JSON.stringify(schema)}.`);
  const t = `"${schema}".work_claims`;
  // `pg` is loaded here, not at import, as in ./postgres-run-store.ts: a Brain on LMDB never needs it.
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg;
  const pool = new Pool({ connectionString: options.connectionString, max: 2, options: '-c synchronous_commit=on' });
  pool.on('error', () => {
    // an idle client lost its connection: the next call reconnects
  });
  let ready: Promise<void> | null = null;
  const init = (): Promise<void> => {
    ready ??= (async () => {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`polly-work-claims:${schema}`]);
        await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await c.query(
          `CREATE TABLE IF NOT EXISTS ${t} (key text PRIMARY KEY, owner text NOT NULL, label text NOT NULL, lease_until timestamptz NOT NULL, claimed_at timestamptz NOT NULL, settled_at timestamptz, outcome text, detail text, generation integer NOT NULL DEFAULT 1, takeovers integer NOT NULL DEFAULT 0)`,
        );
        await c.query('COMMIT');
      } catch (error) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        c.release();
      }
    })();
    ready.catch(() => {
      ready = null;
    });
    return ready;
  };
  const q = async (what: string, sql: string, params: unknown[]): Promise<Row[]> => {
    try {
      await init();
      return (await pool.query(sql, params)).rows as Row[];
    } catch (error) {
      throw fault(what, error);
    }
  };
  const positive = (s: number): number => {
    if (!(s > 0)) throw new PollyError('bad_input', `a work claim's lease must be > 0 seconds, got ${s}.`);
    return s;
  };

  return {
    async claim(key, owner, label, leaseSeconds, newerThan): Promise<ClaimResult> {
      const rows = await q(
        'claim work',
        `INSERT INTO ${t} AS c (key, owner, label, lease_until, claimed_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4), now())
         ON CONFLICT (key) DO UPDATE SET
           owner = EXCLUDED.owner, label = EXCLUDED.label, lease_until = EXCLUDED.lease_until,
           claimed_at = CASE WHEN c.owner = EXCLUDED.owner AND c.settled_at IS NULL THEN c.claimed_at ELSE now() END,
           generation = CASE WHEN c.settled_at IS NOT NULL THEN c.generation + 1 ELSE c.generation END,
           takeovers = CASE WHEN c.settled_at IS NULL AND c.owner <> EXCLUDED.owner THEN c.takeovers + 1 ELSE c.takeovers END,
           settled_at = NULL, outcome = NULL, detail = NULL
         WHERE (c.settled_at IS NULL AND (c.owner = EXCLUDED.owner OR c.lease_until < now()))
            OR (c.settled_at IS NOT NULL AND c.settled_at < $5::timestamptz)
         RETURNING *`,
        [key, owner, label, positive(leaseSeconds), newerThan],
      );
      if (rows[0]) return { granted: true, claim: toClaim(rows[0]) };
      const held = await q('read a work claim', `SELECT * FROM ${t} WHERE key = $1`, [key]);
      if (!held[0]) throw new PollyError('internal', `the work claim ${key} was neither granted nor found; retry.`);
      return { granted: false, claim: toClaim(held[0]) };
    },
    async renew(key, owner, leaseSeconds) {
      const rows = await q(
        'renew a work claim',
        `UPDATE ${t} SET lease_until = now() + make_interval(secs => $3) WHERE key = $1 AND owner = $2 AND settled_at IS NULL RETURNING key`,
        [key, owner, positive(leaseSeconds)],
      );
      return rows.length === 1;
    },
    async settle(key, owner, outcome, detail) {
      const rows = await q(
        'settle a work claim',
        `UPDATE ${t} SET settled_at = now(), outcome = $3, detail = $4 WHERE key = $1 AND owner = $2 AND settled_at IS NULL RETURNING key`,
        [key, owner, outcome, detail],
      );
      return rows.length === 1;
    },
    async get(key) {
      const rows = await q('read a work claim', `SELECT * FROM ${t} WHERE key = $1`, [key]);
      return rows[0] ? toClaim(rows[0]) : null;
    },
    async close() {
      await pool.end();
    },
  };
}
