/**
 * The task lifecycle: the only writer of `task.status`.
 *
 * Every status change of a task goes through {@link transitionTask}, which checks the move against
 * {@link TASK_TRANSITIONS} (the allowed edges as data) and refuses an illegal one. The table is the
 * union of the moves Polly's writers make today (the Brain loop, the task tools, the forge's merge
 * watch), so it documents the lifecycle rather than narrowing it:
 *
 * - `queued` → a worker starts (`dispatched`, `running`, …) or the task ends before it ran.
 * - the active statuses (`dispatched` … `reviewing`) move freely among themselves as the task's
 *   workflow calls its tools, and end in `ready`, `done` (read-only work), a failure or `cancelled`;
 *   a human may merge the draft PR at any point once it exists (`merged`).
 * - the stopped statuses (`failed`, `agent_missing`, `agent_exited`, `blocked_on_prompt`) may be
 *   retried by the workflow (back to an active status), cancelled, or merged by a human; and
 *   `polly retry` puts a stopped or cancelled task back to `queued` under its retry plan
 *   (brain/plan/plan-retry.ts), the only way out of `cancelled`.
 * - `ready` → `merged` (a human merged the PR) → `done`; a run that ends otherwise still fails or
 *   cancels them. A ready task's run watches its PR: a change request, a failing check or a
 *   conflict starts a fix round (`ready` → `fixing` and the active statuses, back to `ready`).
 * - `parked`: Polly stopped and a human decides (fix rounds exhausted, an unresolvable conflict,
 *   a budget reached, a full disk); from any active or stopped status and from `ready`; a human
 *   may still merge the PR (`merged`) or cancel the task, and `polly retry` puts a task parked for
 *   its budget (with a budget it has not spent) or for a disk fault back to `queued` under its
 *   retry plan (brain/plan/plan-retry.ts `retryableParks` says which parks).
 * - `base_red`: the base check (brain/task-tools/base-check.ts) found an acceptance command red
 *   before the first agent turn (from `queued` or an active status); no agent ran, so the only
 *   ways on are `polly retry` (back to `queued`), a cancel, or a failure of its run.
 * - `done` is absorbing; `cancelled` is, but for a retry.
 *
 * Staying in the same status is always allowed (it refreshes `updatedAt` and the reason).
 * Statuses are `TaskStatus` from `brain/core/vocabulary.ts`.
 */
import { PollyError } from '../core/errors.js';
import type { TaskStatus } from '../core/vocabulary.js';

const ACTIVE: readonly TaskStatus[] = ['dispatched', 'running', 'checking', 'fixing', 'green', 'pr_open', 'reviewing'];
const STOPPED: readonly TaskStatus[] = ['failed', 'agent_missing', 'agent_exited', 'blocked_on_prompt'];
const FROM_ACTIVE: readonly TaskStatus[] = [...ACTIVE, 'ready', 'merged', 'done', ...STOPPED, 'parked', 'base_red', 'cancelled'];
const FROM_STOPPED: readonly TaskStatus[] = [...ACTIVE, 'merged', ...STOPPED, 'parked', 'cancelled', 'queued'];

/** The allowed moves: status → the statuses a task in it may move to (besides staying). */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  queued: [...ACTIVE, 'failed', 'base_red', 'cancelled'],
  dispatched: FROM_ACTIVE,
  running: FROM_ACTIVE,
  checking: FROM_ACTIVE,
  fixing: FROM_ACTIVE,
  green: FROM_ACTIVE,
  pr_open: FROM_ACTIVE,
  reviewing: FROM_ACTIVE,
  failed: FROM_STOPPED,
  agent_missing: FROM_STOPPED,
  agent_exited: FROM_STOPPED,
  blocked_on_prompt: FROM_STOPPED,
  parked: ['queued', 'merged', 'cancelled'],
  base_red: ['queued', 'failed', 'cancelled'],
  ready: ['fixing', 'merged', 'failed', 'parked', 'cancelled'],
  merged: ['done', 'failed', 'cancelled'],
  done: [],
  cancelled: ['queued'],
};

/** Whether a task in `from` may move to `to` (true when they are equal). */
export function canTransitionTask(from: TaskStatus, to: TaskStatus): boolean {
  return from === to || TASK_TRANSITIONS[from].includes(to);
}

/** The fields of a task record the lifecycle writes. */
export interface TaskLifecycleFields {
  id: string;
  status: TaskStatus;
  statusReason: string | null;
  updatedAt: string;
  finishedAt?: string | null;
}

/** Options of one status change. */
export interface TransitionOptions {
  /** ISO-8601 time of the change, from the caller's clock; written to `updatedAt`. */
  at: string;
  /** The new `statusReason`; `undefined` leaves the current one, `null` clears it. */
  reason?: string | null;
  /** Also record the task as finished at `at` (`finishedAt`). */
  finished?: boolean;
}

/**
 * Move `task` (a registry draft record, mutated in place) to status `to`.
 * @returns the status it left.
 * @throws PollyError `internal` when the move is not in {@link TASK_TRANSITIONS}: a writer in
 *   Polly broke the lifecycle (the message names the task, from and to).
 */
export function transitionTask(task: TaskLifecycleFields, to: TaskStatus, options: TransitionOptions): TaskStatus {
  const from = task.status;
  if (!canTransitionTask(from, to)) {
    throw new PollyError(
      'internal',
      `task ${task.id} cannot move from "${from}" to "${to}" (allowed from "${from}": ${TASK_TRANSITIONS[from].join(', ') || 'none, it is final'}). This is a bug in Polly; please report it with .polly/journal.jsonl.`,
      {
        details: { taskId: task.id, from, to },
      },
    );
  }
  task.status = to;
  if (options.reason !== undefined) task.statusReason = options.reason;
  task.updatedAt = options.at;
  if (options.finished) task.finishedAt = options.at;
  return from;
}
