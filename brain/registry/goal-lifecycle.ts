/**
 * The goal lifecycle: the only writer of `goal.status` once a goal exists (brain/registry/goal-record.ts
 * `createGoal` writes its first status).
 *
 * Every status change of a goal goes through {@link transitionGoal} (or {@link endGoal}, which also
 * journals `goal.done`), checked against {@link GOAL_TRANSITIONS}. As with the task lifecycle
 * (brain/registry/task-lifecycle.ts), the table is the union of the moves Polly's writers make, so
 * it documents the lifecycle rather than narrowing it:
 *
 * - `open` (an LLM goal, `polly goal`) → `planning` when its LLM brain starts; `planning` (a
 *   human-written plan's goal starts there) → `waiting_approval` when a plan for it is admitted.
 * - `waiting_approval` → `running` when a human approves a plan (brain/plan/plan-gate.ts).
 * - any open status → `done` (every task of its plans ready, merged or done: the Brain's close) or
 *   `failed` (a task failed at the close, its plan was refused, its schedule could not run, its LLM
 *   brain ended without a plan).
 * - a finished goal (`done`, `failed`) → `running` again when `polly resume` asks for its PRs'
 *   waiting events (journal `goal.reopened`) or a pending plan of it is approved, and →
 *   `waiting_approval` when its LLM brain proposes another plan that is admitted.
 * - nothing goes back to `open`; no writer sets `cancelled` (a status older records may carry,
 *   final like `done`).
 *
 * Staying in the same status is always allowed. Statuses are `GoalStatus` from brain/core/vocabulary.ts.
 */
import { PollyError } from '../core/errors.js';
import type { GoalStatus } from '../core/vocabulary.js';
import type { RegistryTx } from './registry-store.js';

const OPEN_TO: readonly GoalStatus[] = ['planning', 'waiting_approval', 'running', 'done', 'failed'];
const REOPEN: readonly GoalStatus[] = ['waiting_approval', 'running'];

/** The allowed moves: status → the statuses a goal in it may move to (besides staying). */
export const GOAL_TRANSITIONS: Readonly<Record<GoalStatus, readonly GoalStatus[]>> = {
  open: OPEN_TO,
  planning: OPEN_TO.filter((s) => s !== 'planning'),
  waiting_approval: ['running', 'done', 'failed'],
  running: ['waiting_approval', 'done', 'failed'],
  done: REOPEN,
  failed: REOPEN,
  cancelled: REOPEN,
};

/** Whether a goal in `from` may move to `to` (true when they are equal). */
export function canTransitionGoal(from: GoalStatus, to: GoalStatus): boolean {
  return from === to || GOAL_TRANSITIONS[from].includes(to);
}

/** The fields of a goal record the lifecycle reads and writes. */
export interface GoalLifecycleFields {
  id: string;
  status: GoalStatus;
}

/**
 * Move `goal` (a registry draft record, mutated in place) to status `to`.
 * @returns the status it left.
 * @throws PollyError `internal` when the move is not in {@link GOAL_TRANSITIONS}: a writer in Polly
 *   broke the lifecycle (the message names the goal, from and to); nothing is written.
 */
export function transitionGoal(goal: GoalLifecycleFields, to: GoalStatus): GoalStatus {
  const from = goal.status;
  if (!canTransitionGoal(from, to)) {
    throw new PollyError(
      'internal',
      `goal ${goal.id} cannot move from "${from}" to "${to}" (allowed from "${from}": ${GOAL_TRANSITIONS[from].join(', ')}). This is a bug in Polly; please report it with .polly/journal.jsonl.`,
      { details: { goalId: goal.id, from, to } },
    );
  }
  goal.status = to;
  return from;
}

/**
 * End `goal` as `status` and journal `goal.done` (`{goalId, status, ...details}`: the reason, the
 * tasks, whatever the closing writer knows) in the same transaction `tx`.
 * @throws PollyError `internal` as {@link transitionGoal}.
 */
export function endGoal(goal: GoalLifecycleFields, status: 'done' | 'failed', tx: Pick<RegistryTx, 'emit'>, details: Record<string, unknown> = {}): void {
  transitionGoal(goal, status);
  tx.emit('goal.done', { goalId: goal.id, status, ...details });
}
