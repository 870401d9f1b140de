/**
 * Everything a reviewer tried during one review turn that its read-only role may never do, from
 * three sources of ground truth, and the one failure that names all of it:
 * - what the sandbox refused: EROFS lines in the turn's tool results (./sandbox-refusals.ts);
 * - what the gate refused as a `blast_radius.*` attempt, from its decision log (./gate-attempts.ts);
 * - calls of tools the role was not given, from the turn's event stream (./tool-attempts.ts).
 *
 * A reviewer whose turn shows any of them fails its task (`failed`, never `ready`): the reason
 * joins the non-empty parts with ` ; `, and each part is journaled as its own event
 * (`guard.sandbox_refused {lines}`, `guard.gate_refused {attempts}`, `guard.tool_refused
 * {attempts}`, each with `taskId, orderId, step`).
 */
import type { Harness } from '../core/vocabulary.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import type { WorkerTurnResult } from '../../workers/worker-turn.js';
import { readOnlyRoleTools } from '../../workers/agents/role-tools.js';
import { gateAttemptReason, gateAttempts } from './gate-attempts.js';
import type { RefGuardContext } from './ref-guard-step.js';
import { refusalReason, turnRefusals } from './sandbox-refusals.js';
import { toolAttemptReason, toolAttempts } from './tool-attempts.js';
import type { TaskToolOutcome } from './types.js';

/** What one review turn tried, per source (each list empty when that source saw nothing). */
export interface ReviewTurnAttempts {
  /** Sandbox refusal lines (EROFS). */
  refused: string[];
  /** `<rule>: <command>` the gate refused as an attempt. */
  gate: string[];
  /** `<tool> <arguments>` of calls outside the role's tools. */
  tools: string[];
}

/** Where a review turn's gate decisions are: the decision log, the byte it started at, the scratch dir. */
export interface ReviewTurnGateLog {
  path: string;
  mark: number;
  dir: string;
}

/** The attempts of one review turn by `reviewer` (see the module doc). Reads the decision log. */
export function reviewTurnAttempts(result: Pick<WorkerTurnResult, 'events'> & { workerId?: string }, reviewer: Harness, gateLog: ReviewTurnGateLog): ReviewTurnAttempts {
  const events = result.events ?? [];
  return {
    refused: turnRefusals(events),
    gate: gateAttempts(gateLog.path, gateLog.mark, gateLog.dir, 5, result.workerId ?? null),
    tools: toolAttempts(events, readOnlyRoleTools(reviewer)),
  };
}

/** True when the turn tried anything. Pure. */
export function triedAnything(a: ReviewTurnAttempts): boolean {
  return a.refused.length + a.gate.length + a.tools.length > 0;
}

/** The task's reason: the non-empty parts' reasons joined with ` ; `. Pure. */
export function reviewAttemptReason(step: string, a: ReviewTurnAttempts): string {
  return [
    a.refused.length > 0 ? refusalReason(step, a.refused) : null,
    a.gate.length > 0 ? gateAttemptReason(step, a.gate) : null,
    a.tools.length > 0 ? toolAttemptReason(step, a.tools) : null,
  ]
    .filter((r): r is string => r !== null)
    .join(' ; ');
}

/**
 * Fail the task for what the reviewer tried during `step` (status `failed` with
 * {@link reviewAttemptReason}, one journal event per non-empty part).
 * @returns the permanent failure the tool returns.
 */
export async function reviewAttemptFailure(ctx: RefGuardContext, step: string, a: ReviewTurnAttempts): Promise<TaskToolOutcome> {
  const reason = reviewAttemptReason(step, a);
  await ctx.store.update((draft, tx) => {
    const base = { taskId: ctx.task.id, orderId: ctx.order.id, step };
    if (a.refused.length > 0) tx.emit('guard.sandbox_refused', { ...base, lines: a.refused });
    if (a.gate.length > 0) tx.emit('guard.gate_refused', { ...base, attempts: a.gate });
    if (a.tools.length > 0) tx.emit('guard.tool_refused', { ...base, attempts: a.tools });
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: ctx.clock().toISOString(), reason: reason.slice(0, 2000) });
  });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { outcome: 'failure', permanent: true, note: reason };
}
