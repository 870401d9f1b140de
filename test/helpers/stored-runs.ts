// Reading the runs a `polly mcp` (or a Brain) stored under a `.polly`-style directory, from the test process.
import { runStoreDir } from '../../brain/registry/run-storage.js';
import { createLmdbRunStore } from '../../workflows/run/lmdb-run-store.js';
import type { RunJournalEntry } from '../../workflows/run/run-store.js';
import type { RunRecord } from '../../workflows/run/run-records.js';

/** The runs in `<registryDir>/runs/`, keyed by id (the store is opened and closed again). */
export async function storedRuns(registryDir: string): Promise<Record<string, RunRecord>> {
  const store = createLmdbRunStore(runStoreDir(registryDir));
  try {
    return Object.fromEntries((await store.listRuns()).map((r) => [r.id, r]));
  } finally {
    await store.close();
  }
}

/** The run store's journal in `<registryDir>/runs/` (all runs, oldest first). */
export async function storedRunJournal(registryDir: string): Promise<RunJournalEntry[]> {
  const store = createLmdbRunStore(runStoreDir(registryDir));
  try {
    return await store.journal();
  } finally {
    await store.close();
  }
}
