/**
 * The runtime's storage port: what `runtime.ts` needs of a store, and nothing more. A step reads
 * and writes ONE run (and appends to the journal), so its cost does not depend on how many runs
 * are live or how much history exists.
 *
 * Implementations: `lmdb-run-store.ts` (the real one, `.polly/runs/`, shared by processes) and
 * `memory-run-store.ts` (its in-memory twin for tests). Lease, retry and exactly-once semantics
 * live in the runtime, never in the storage format: a store only promises the contract below.
 *
 * Contract:
 * - `updateRun` is one atomic read-modify-write of one run, serialised with every other write to
 *   the same store (in this process and in other processes): `fn` sees the latest committed run.
 * - Events emitted through `tx` are journaled in the same atomic commit, each with the next
 *   journal `seq` (strictly increasing from 1, gapless, shared by all runs of the store).
 * - Durable before acknowledged: the promise resolves only after the commit is on disk.
 *   Concurrent updates may share one commit and one fsync (group commit).
 * - A process killed at any point leaves the store before or after each update, never inside one.
 */
import type { RunRecord } from './run-records.js';

/** Handed to an update function: records journal events committed with the run. */
export interface RunStoreTx {
  /** Record an event (`kind` dotted, e.g. `run.order`; `data` JSON-serialisable, with `run`, no secrets), journaled on commit. */
  emit(kind: string, data: Record<string, unknown>): void;
}

/** What an update function mutates: the run (a private copy), or null when there is none yet; assign a record to create it. */
export interface RunDraft {
  run: RunRecord | null;
}

/** One journal line as the runtime reads it back: `seq` strictly increasing from 1, `at` ISO-8601. */
export interface RunJournalEntry {
  seq: number;
  at: string;
  kind: string;
  data: Record<string, unknown>;
}

/** Which runs {@link RunStore.listRuns} returns. */
export interface RunListFilter {
  status?: RunRecord['status'];
}

/** The store a runtime runs on. */
export interface RunStore {
  /** The run with `runId` (a fresh copy), or null. @throws PollyError `registry_corrupt` when the store cannot be read. */
  getRun(runId: string): Promise<RunRecord | null>;
  /**
   * Read-modify-write of one run, atomically: `fn` (synchronous) mutates `draft.run` in place or
   * assigns a new record (whose `id` must be `runId`), and emits through `tx`; its result is
   * returned once the commit is durable. If `fn` throws, nothing is written and the error
   * propagates. Removing a run (assigning null to an existing one) is refused.
   * @throws PollyError `internal` for a record whose id is not `runId`; `registry_corrupt` on a store fault.
   */
  updateRun<T>(runId: string, fn: (draft: RunDraft, tx: RunStoreTx) => T): Promise<T>;
  /** Runs with the filter's status (all without one), in no particular order. `status: 'running'` costs O(live runs). */
  listRuns(filter?: RunListFilter): Promise<RunRecord[]>;
  /** Journal entries with seq > `afterSeq` (default 0), oldest first, at most `limit`; only run `run`'s with `run` (O(that run's entries)). */
  journal(afterSeq?: number, options?: { run?: string; limit?: number }): Promise<RunJournalEntry[]>;
  /** Release the store's resources (the database handle). Further calls fail. */
  close(): Promise<void>;
}
