/**
 * The runtime's storage port: what `runtime.ts` needs of a store, and nothing more. The registry
 * store (`brain/registry/registry-store.ts`, file and memory) satisfies it structurally, so the
 * runtime depends on this narrow shape and never on the app's registry.
 *
 * Contract (the registry store's): `update` is one atomic read-modify-write under a lock; events
 * emitted through `tx` are journaled only if the write commits, each with the next journal `seq`.
 */
import type { RunRecord } from './run-records.js';

/** The part of the stored state the runtime reads and writes: runs keyed by run id. */
export interface RunStoreState {
  runs: Record<string, RunRecord>;
}

/** Handed to an update function: records journal events committed with the transaction. */
export interface RunStoreTx {
  /** Record an event (`kind` dotted, e.g. `run.order`; `data` JSON-serialisable, no secrets), journaled on commit. */
  emit(kind: string, data: Record<string, unknown>): void;
}

/** One journal line as the runtime reads it back: `seq` strictly increasing from 1, `at` ISO-8601. */
export interface RunJournalEntry {
  seq: number;
  at: string;
  kind: string;
  data: Record<string, unknown>;
}

/** The store a runtime runs on. */
export interface RunStore {
  /** The current state (a fresh copy: mutating it changes nothing). @throws PollyError on a corrupt or locked store. */
  read(): Promise<RunStoreState>;
  /**
   * Read-modify-write, atomically: `fn` mutates `draft` in place and emits through `tx`; its result
   * is returned after the commit. If `fn` throws, nothing is written and the error propagates.
   * @throws PollyError `lock_timeout`, `registry_corrupt`, `registry_newer`, `internal`.
   */
  update<T>(fn: (draft: RunStoreState, tx: RunStoreTx) => T | Promise<T>): Promise<T>;
  /** Journal entries with seq > `afterSeq` (default 0), oldest first. */
  journal(afterSeq?: number): Promise<RunJournalEntry[]>;
}
