/**
 * The records of the durable workflow runtime, as stored in the registry's `runs` map
 * (`.polly/registry.json`, shape owned here and composed by `brain/registry/registry-schema.ts`).
 *
 * Times are ISO-8601 strings (UTC). Optional fields were added after the first registry version;
 * records written before them lack them. A shape change here is a registry schema change: bump
 * `REGISTRY_SCHEMA_VERSION` and add a migration step in `brain/registry/registry-migrations.ts`.
 */

/** A durable workflow run: one instance of a workflow, keyed by its run id. */
export interface RunRecord {
  id: string;
  agentArea: string;
  instanceArea: string;
  workflow: string;
  key: string;
  input: Record<string, unknown>;
  /** Current values of the workflow's variables, including its control state. */
  state: Record<string, unknown>;
  /** Step counter: bumped by every applied action. */
  seq: number;
  status: 'running' | 'finished';
  /** The single open work order, if any. */
  openOrder: WorkOrderRecord | null;
  /** Ids of work orders whose completions were applied (de-duplication). */
  completedOrders: string[];
  /**
   * Orders emitted but not yet offered: a step may emit several effects, and only one order is
   * open at a time; the next is opened when the open one completes (runtime; optional for older runs).
   */
  outbox?: WorkOrderRecord[];
  /** Ids of orders superseded before completion (a signal moved the run, or it ended): reports on them are stale. */
  droppedOrders?: string[];
  /** The terminal control state once `status` is `finished`. */
  outcome?: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A work order: one emitted effect handed to an agent, leased and reported exactly once. */
export interface WorkOrderRecord {
  id: string;
  kind: string;
  tool: string;
  args: Record<string, unknown>;
  ordinal: number;
  attempt: number;
  leaseExpiresAt: string | null;
  leasedBy: string | null;
  /** The current lease's id (a fresh random id per grant; renewals keep it); null/absent when unleased. */
  leaseId?: string | null;
  /** The run's step (seq) that emitted the order (runtime; optional for older records). */
  seq?: number;
  /** Attempts allowed by the effect's retry policy. */
  maxAttempts?: number;
  /** Not offered before this time (retry backoff); null = now. */
  availableAt?: string | null;
}
