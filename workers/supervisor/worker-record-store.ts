/**
 * The worker supervisor's rows and the narrow store port it keeps them in. The supervisor owns
 * these shapes; brain/registry/registry-schema.ts stores them under `workers` and the registry store
 * (brain/registry/registry-store.ts) satisfies {@link WorkerRecordStore} structurally, so the
 * supervisor never depends on the app's storage (as Temporal's workers depend on types, not on the
 * server's store).
 */
import type { Harness, Purpose } from '../../brain/core/vocabulary.js';

/** A live (or recently live) worker process. */
export interface WorkerRecord {
  id: string;
  taskId: string;
  harness: Harness;
  pid: number;
  /** Process group id (workers are spawned detached as group leaders). */
  pgid: number;
  sessionId: string | null;
  startedAt: string;
  heartbeatAt: string;
  /** The Brain (by pid) that supervises it. */
  supervisor: number | null;
  /** The work order this worker performs (workers/worker-supervisor.ts; optional for older rows). */
  orderId?: string;
  purpose?: Purpose;
  /** `<stateRoot>/<id>`: spec.json, events.jsonl, heartbeat, result.json, runner.log. */
  stateDir?: string;
  /** `running` while its runner process lives; `exited` with a result; `dead` when it died without one. */
  state?: 'starting' | 'running' | 'exited' | 'dead';
  /** The agent CLI's pid (its own process group leader), once started. */
  agentPid?: number | null;
  endedAt?: string | null;
  /** How the turn ended (an AgentRunStatus), once ended. */
  outcome?: string | null;
  /** Why it ended, in one line (the agent's message, or the death cause). */
  cause?: string | null;
  /** The remote host (a `workers.hosts` name) the turn runs on; null or absent: this machine. */
  host?: string | null;
}

/** The journal side of a store transaction: `emit(kind, data)` appends one journal event on commit. */
export interface WorkerJournalTx {
  emit(kind: string, data: Record<string, unknown>): void;
}

/**
 * What the supervisor needs of a store: read the worker rows, and read-modify-write them under the
 * store's lock with journal events committed atomically with the change.
 */
export interface WorkerRecordStore {
  /** A snapshot; `workers` maps worker id → row. */
  read(): Promise<{ workers: Record<string, WorkerRecord> }>;
  /** Mutate `draft.workers` in place and emit journal events; resolves with `fn`'s value once committed. */
  update<T>(fn: (draft: { workers: Record<string, WorkerRecord> }, tx: WorkerJournalTx) => T | Promise<T>): Promise<T>;
}
