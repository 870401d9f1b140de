/**
 * One run update, as every run store applies it: the update function runs on a private copy of the
 * run, then the result is checked (synchronous, same id, never a removal) before anything is
 * written. Shared by `lmdb-run-store.ts` and `memory-run-store.ts` so both have the same semantics
 * by construction.
 */
import { PollyError } from '../../brain/core/errors.js';
import type { RunRecord } from './run-records.js';
import type { RunDraft, RunStoreTx } from './run-store.js';

/** An event recorded by an update, serialised by the store when it commits (inside the update's transaction). */
export interface RunEvent {
  kind: string;
  data: Record<string, unknown>;
}

/** Collects the events of one update; refuses emits after the update function returned. */
export function createRunTx(): { tx: RunStoreTx; events: RunEvent[]; close(): void } {
  const events: RunEvent[] = [];
  let openTx = true;
  return {
    events,
    tx: {
      emit(kind, data) {
        if (!openTx) throw new PollyError('internal', 'tx.emit() was called after the update function returned; emit inside the update.');
        if (typeof kind !== 'string' || kind === '') throw new PollyError('internal', `journal event kind must be a non-empty string, got ${JSON.stringify(kind)}`);
        events.push({ kind, data });
      },
    },
    close() {
      openTx = false;
    },
  };
}

/** What one update left: `fn`'s result, the run's new JSON text when it changed (else null), its status, and the events. */
export interface AppliedRunUpdate<T> {
  result: T;
  /** The run as JSON when it was created or changed; null when nothing about it changed. */
  text: string | null;
  status: RunRecord['status'] | null;
  events: RunEvent[];
}

/**
 * Run `fn` on a private copy of the run stored as `beforeText` (JSON, or null when there is none)
 * and check what it left. The store serialises the result (the run's text here, the events' data
 * when it writes them) before the update's promise resolves, so later changes to the objects `fn`
 * returned do not reach the store.
 * @throws what `fn` throws; PollyError `internal` for a promise from `fn`, a record with another id, or a removal.
 */
export function applyRunUpdate<T>(runId: string, beforeText: string | null, fn: (draft: RunDraft, tx: RunStoreTx) => T): AppliedRunUpdate<T> {
  const before = beforeText === null ? null : (JSON.parse(beforeText) as RunRecord);
  const draft: RunDraft = { run: before };
  const t = createRunTx();
  let result: T;
  try {
    result = fn(draft, t.tx);
  } finally {
    t.close();
  }
  if (result instanceof Promise) throw new PollyError('internal', 'a run store update function must be synchronous (it runs inside the store transaction); it returned a promise.');
  const after = draft.run;
  if (after === null && before !== null) throw new PollyError('internal', `an update removed run ${runId}; runs are never removed.`, { details: { run: runId } });
  if (after !== null && after.id !== runId)
    throw new PollyError('internal', `an update of run ${runId} wrote a record with id ${JSON.stringify(after.id)}; nothing was written.`, { details: { run: runId } });
  const afterText = after === null ? null : JSON.stringify(after);
  return { result, text: afterText !== beforeText ? afterText : null, status: after?.status ?? null, events: t.events };
}
