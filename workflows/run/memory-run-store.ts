/**
 * The in-memory twin of the LMDB run store (`lmdb-run-store.ts`): the same contract
 * (`run-store.ts`), validation and journal numbering, no disk. For tests and benchmarks.
 */
import { PollyError } from '../../brain/core/errors.js';
import { applyRunUpdate } from './run-update.js';
import type { RunRecord } from './run-records.js';
import type { RunDraft, RunJournalEntry, RunStore, RunStoreTx } from './run-store.js';

export interface MemoryRunStore extends RunStore {
  /** How many commits the store made (a commit may carry several updates, as in group commit). */
  readonly commits: number;
}

/** A run store in memory. Updates queued in one event turn share one commit, like the LMDB store's batches. */
export function createMemoryRunStore(options: { now?: () => Date } = {}): MemoryRunStore {
  const now = options.now ?? (() => new Date());
  const runs = new Map<string, string>();
  const live = new Set<string>();
  const entries: RunJournalEntry[] = [];
  const byRun = new Map<string, number[]>();
  let commits = 0;
  let pending: Array<() => void> = [];
  let closed = false;

  function check(): void {
    if (closed) throw new PollyError('internal', 'the memory run store was closed; open a new one.');
  }

  function flush(): void {
    const batch = pending;
    pending = [];
    commits++;
    for (const work of batch) work();
  }

  const store: MemoryRunStore = {
    get commits() {
      return commits;
    },
    async getRun(runId) {
      check();
      const text = runs.get(runId);
      return text === undefined ? null : (JSON.parse(text) as RunRecord);
    },
    updateRun<T>(runId: string, fn: (draft: RunDraft, tx: RunStoreTx) => T): Promise<T> {
      check();
      return new Promise<T>((resolve, reject) => {
        if (pending.length === 0) setImmediate(flush);
        pending.push(() => {
          try {
            const { result, text, status, events } = applyRunUpdate(runId, runs.get(runId) ?? null, fn);
            if (text !== null) {
              runs.set(runId, text);
              if (status === 'running') live.add(runId);
              else live.delete(runId);
            }
            const at = now().toISOString();
            for (const ev of events) {
              const seq = entries.length + 1;
              entries.push({ seq, at, kind: ev.kind, data: JSON.parse(JSON.stringify(ev.data)) as Record<string, unknown> });
              const key = String(ev.data.run ?? '');
              byRun.set(key, [...(byRun.get(key) ?? []), seq]);
            }
            resolve(result);
          } catch (error) {
            reject(error);
          }
        });
      });
    },
    async listRuns(filter = {}) {
      check();
      const ids = filter.status === 'running' ? [...live] : [...runs.keys()];
      return ids.map((id) => JSON.parse(runs.get(id)!) as RunRecord).filter((r) => !filter.status || r.status === filter.status);
    },
    async journal(afterSeq = 0, opts = {}) {
      check();
      const limit = opts.limit ?? Number.POSITIVE_INFINITY;
      const seqs = opts.run !== undefined ? (byRun.get(opts.run) ?? []) : null;
      const picked = seqs ? seqs.filter((s) => s > afterSeq).map((s) => entries[s - 1]!) : entries.filter((e) => e.seq > afterSeq);
      return structuredClone(picked.slice(0, limit));
    },
    async close() {
      closed = true;
    },
  };
  return store;
}
