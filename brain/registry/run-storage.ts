/**
 * Where a repository's (or an MCP server's) workflow runs live: the LMDB run store in
 * `<pollyDir>/runs/runs.mdb`, beside `registry.json`, which no longer holds runs.
 *
 * Registries written before the run store kept runs in `registry.json`'s `runs` map. Opening the
 * run store moves them: each run is written to the run store if it is not there yet (durably),
 * then the registry's map is emptied in one registry update (journaled as `runs.moved`). A crash
 * between the two leaves the runs in both places, and the next open finishes the move; a run
 * already in the run store is never overwritten (the run store's copy is the newer one). The
 * runs' earlier journal lines stay in `journal.jsonl`.
 */
import { join } from 'node:path';
import { createLmdbRunStore, type LmdbRunStore } from '../../workflows/run/lmdb-run-store.js';
import type { RegistryStore } from './registry-store.js';

/** The run store directory inside a `.polly` directory. */
export function runStoreDir(pollyDir: string): string {
  return join(pollyDir, 'runs');
}

/**
 * Open the run store of `pollyDir` and move any runs left in the registry into it.
 * @returns the store and how many runs were moved now.
 * @throws PollyError from the run store (`registry_corrupt`, `registry_newer`) or the registry.
 */
export async function openRunStore(pollyDir: string, registry: RegistryStore): Promise<{ store: LmdbRunStore; moved: number }> {
  const store = createLmdbRunStore(runStoreDir(pollyDir));
  const legacy = (await registry.read()).runs;
  const ids = Object.keys(legacy);
  if (ids.length === 0) return { store, moved: 0 };
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
    tx.emit('runs.moved', { count: present.length, to: store.path });
  });
  return { store, moved: ids.length };
}
