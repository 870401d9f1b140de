/**
 * Identities of runs and work orders. Both are derived, never chosen by a caller:
 * - a run id is a hash of (agent area, instance area, workflow, key), the key itself derived from
 *   validated input through the workflow's key template — so starting twice attaches;
 * - an order id is a hash of (run id, the step that emitted it, effect kind, ordinal within the
 *   step) — so a re-offer after an expired lease, a retry or a restart carries the same id.
 * The hash is SHA-256 over the JSON array of the parts (unambiguous: no separator collisions),
 * hex, truncated to 20 characters (80 bits).
 */
import { createHash } from 'node:crypto';

function digest(parts: Array<string | number>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 20);
}

/** `run-<hex20>` for (agentArea, instanceArea, workflow, key). */
export function runIdFor(agentArea: string, instanceArea: string, workflow: string, key: string): string {
  return `run-${digest(['run', agentArea, instanceArea, workflow, key])}`;
}

/** `ord-<hex20>` for (run id, emitting step seq, effect kind, ordinal within the step). */
export function orderIdFor(runId: string, seq: number, kind: string, ordinal: number): string {
  return `ord-${digest(['order', runId, seq, kind, ordinal])}`;
}
