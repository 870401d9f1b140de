/**
 * Where a repository's (or an MCP server's) workflow runs live: the LMDB run store in
 * `<pollyDir>/runs/runs.mdb`, beside `registry.json`, which no longer holds runs; or, with config
 * `runs.store: postgres`, the PostgreSQL database whose URL is in the environment variable
 * `runs.url_env` (workflows/run/postgres-run-store.ts), shared by several Polly processes.
 *
 * Registries written before the run store kept runs in `registry.json`'s `runs` map. Opening the
 * run store moves them: each run is written to the run store if it is not there yet (durably),
 * then the registry's map is emptied in one registry update (journaled as `runs.moved`). A crash
 * between the two leaves the runs in both places, and the next open finishes the move; a run
 * already in the run store is never overwritten (the run store's copy is the newer one). The
 * runs' earlier journal lines stay in `journal.jsonl`.
 */
import { join } from 'node:path';
import { PollyError } from '../core/errors.js';
import type { PollyConfig } from '../config/config-schema.js';
import { createLmdbRunStore } from '../../workflows/run/lmdb-run-store.js';
import { createPostgresRunStore } from '../../workflows/run/postgres-run-store.js';
import type { RunStore } from '../../workflows/run/run-store.js';
import { createPostgresWorkClaims } from '../../workflows/run/postgres-work-claims.js';
import type { WorkClaims } from '../../workflows/run/work-claims.js';
import { pollyIdentity } from '../core/polly-identity.js';
import type { RegistryStore } from './registry-store.js';

/** The run store directory inside a `.polly` directory. */
export function runStoreDir(pollyDir: string): string {
  return join(pollyDir, 'runs');
}

/**
 * The run store `runs` selects (default: LMDB in `pollyDir`), opened as it is: nothing is moved.
 * Readers (the dashboard) use this; writers use `openRunStore`.
 * @returns the store and where it is (a path, or `postgres schema S (URL in $VAR)`).
 * @throws PollyError `config_invalid` for `postgres` without the URL's variable set.
 */
export function createConfiguredRunStore(pollyDir: string, runs: PollyConfig['runs'] = undefined, env: NodeJS.ProcessEnv = process.env): { store: RunStore; where: string } {
  if (runs?.store === 'postgres') {
    const url = env[runs.url_env];
    if (!url)
      throw new PollyError(
        'config_invalid',
        `runs.store is postgres, but the environment variable ${runs.url_env} (runs.url_env) that holds its connection URL is not set. Set it (e.g. postgresql://USER@HOST:5432/DB) or set runs.store: lmdb in .polly/config.yaml.`,
        { details: { key: 'runs.url_env', env: runs.url_env } },
      );
    return { store: createPostgresRunStore({ connectionString: url, schema: runs.schema }), where: `postgres schema ${runs.schema} (URL in $${runs.url_env})` };
  }
  const lmdb = createLmdbRunStore(runStoreDir(pollyDir));
  return { store: lmdb, where: lmdb.path };
}

/**
 * Open the run store `runs` selects (default: LMDB in `pollyDir`) and move any runs left in the
 * registry into it. `env` holds the Postgres URL's variable; the URL is never printed.
 * @returns the store, where it is (a path, or `postgres schema S (URL in $VAR)`) and how many runs were moved now.
 * @throws PollyError `config_invalid` for `postgres` without the URL's variable set; from the run
 * store (`registry_corrupt`, `registry_newer`) or the registry.
 */
export async function openRunStore(
  pollyDir: string,
  registry: RegistryStore,
  runs: PollyConfig['runs'] = undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ store: RunStore; where: string; moved: number }> {
  const { store, where } = createConfiguredRunStore(pollyDir, runs, env);
  const legacy = (await registry.read()).runs;
  const ids = Object.keys(legacy);
  if (ids.length === 0) return { store, where, moved: 0 };
  await Promise.all(
    ids.map((id) =>
      store.updateRun(id, (draft) => {
        if (draft.run === null) draft.run = legacy[id]!;
      }),
    ),
  );
  await registry.update((draft, tx) => {
    const present = ids.filter((id) => draft.runs[id] !== undefined);
    if (present.length === 0) return;
    for (const id of present) delete draft.runs[id];
    tx.emit('runs.moved', { count: present.length, to: where });
  });
  return { store, where, moved: ids.length };
}

/**
 * The shared work claims of the run store `runs` selects: with `postgres`, the `work_claims` table
 * in the same schema (workflows/run/postgres-work-claims.ts), through which several Pollys hand
 * each task to exactly one of them; with LMDB, null (one Brain per store: nothing to share).
 * @throws PollyError `config_invalid` for `postgres` without the URL's variable set.
 */
export function openWorkClaims(runs: PollyConfig['runs'] = undefined, env: NodeJS.ProcessEnv = process.env): WorkClaims | null {
  if (runs?.store !== 'postgres') return null;
  const url = env[runs.url_env];
  if (!url)
    throw new PollyError('config_invalid', `runs.store is postgres, but the environment variable ${runs.url_env} (runs.url_env) that holds its connection URL is not set.`, {
      details: { key: 'runs.url_env', env: runs.url_env },
    });
  return createPostgresWorkClaims({ connectionString: url, schema: runs.schema });
}

/**
 * The instance area of the Brain's runs: `brain` on LMDB (one Brain per store), `brain:<polly id>`
 * on Postgres, so that two clones' plans (each numbered p1, p2, … by its own registry) never share
 * a run id in one database.
 */
export function brainInstanceArea(runs: PollyConfig['runs'], repoRoot: string): string {
  return runs?.store === 'postgres' ? `brain:${pollyIdentity(repoRoot).id}` : 'brain';
}
