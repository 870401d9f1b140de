/**
 * Polly's shared vocabulary: the closed sets every part names — purposes, harnesses and their
 * vendors, task and goal statuses and the sets that give them meaning. This is the ground floor:
 * `gate/`, `workers/` and `workflows/` may import it (and the rest of `brain/core/`), nothing else
 * in `brain/`.
 */

/** What a work order is for. `implement` writes code; the others are read-only by default. */
export const PURPOSES = ['implement', 'review', 'explore', 'search'] as const;
export type Purpose = (typeof PURPOSES)[number];

/** The purposes that write nothing unless config says otherwise (`policies.purpose_guard.read_only`). */
export const DEFAULT_READ_ONLY_PURPOSES: readonly Purpose[] = ['review', 'explore', 'search'];

/**
 * Whether a worker (or the Brain) in `role` may write nothing, under `readOnly` (the config's
 * `policies.purpose_guard.read_only`). The one answer to "may this role write?": the gate's write
 * and mutation rules (gate/policy.ts, gate/decide.ts), the dispatch tool's turn request
 * (brain/task-tools/dispatch.ts `workerTurnRequest`: the adapter's read-only mode), and through it
 * the worker runner and its sandbox (workers/sandbox/agent-turn-sandbox.ts: a read-only turn's cwd
 * is mounted read-only) all ask it. Only `implement` (its worktree) and `brain` (docs, plans) ever
 * write, and not when `readOnly` lists them; review, explore, search and any unknown role are
 * read-only whatever the list says (failing closed: they run in the main checkout or a scratch dir).
 */
export function isReadOnlyRole(role: string, readOnly: readonly string[] = DEFAULT_READ_ONLY_PURPOSES): boolean {
  if (role === 'implement' || role === 'brain') return readOnly.includes(role);
  return true;
}

/** The agent CLIs Polly drives. */
export const HARNESSES = ['claude-code', 'codex', 'pi'] as const;
export type Harness = (typeof HARNESSES)[number];

/** Each harness's model vendor: a cross-review needs a reviewer of another vendor. */
export const HARNESS_VENDOR: Readonly<Record<Harness, string>> = { 'claude-code': 'anthropic', codex: 'openai', pi: 'pi' };

/**
 * A task's lifecycle status (see `brain/registry/task-lifecycle.ts` for the allowed moves).
 * `parked`: Polly stopped working on the task's PR and a human must decide (its fix rounds are
 * exhausted, a base conflict could not be resolved, or a budget was reached); journaled as
 * `task.parked` {taskId, reason}. `base_red`: an acceptance command is red on the task's base
 * before any agent change (brain/task-tools/base-check.ts); no agent turn was spent, and the user
 * fixes the base (then `polly retry`) or marks the command `acceptance.known_red`; journaled as
 * `task.base_red` {taskId, command, exitCode, baseCommit}.
 */
export const TASK_STATUSES = [
  'queued',
  'dispatched',
  'running',
  'checking',
  'fixing',
  'green',
  'pr_open',
  'reviewing',
  'ready',
  'merged',
  'done',
  'failed',
  'cancelled',
  'agent_missing',
  'agent_exited',
  'blocked_on_prompt',
  'parked',
  'base_red',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * Statuses after which no worker runs for the task (it may still be carried by the forge: `ready`,
 * whose run watches the PR and may start a fix round; `parked`: stopped on purpose with its work
 * kept — a budget reached, fix rounds exhausted, an unresolvable conflict — and a human decides).
 */
export const FINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>([
  'ready',
  'parked',
  'merged',
  'done',
  'failed',
  'cancelled',
  'agent_missing',
  'agent_exited',
  'blocked_on_prompt',
  'base_red',
]);

/** Statuses of a task that satisfy a dependant's `depends_on`. */
export const DEPENDENCY_MET_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>(['ready', 'merged', 'done']);

/** A goal's status. */
export const GOAL_STATUSES = ['open', 'planning', 'waiting_approval', 'running', 'done', 'failed', 'cancelled'] as const;
export type GoalStatus = (typeof GOAL_STATUSES)[number];

/** Goal statuses that end a goal. */
export const FINAL_GOAL_STATUSES: ReadonlySet<GoalStatus> = new Set<GoalStatus>(['done', 'failed', 'cancelled']);

/** Whether a goal in `status` is over (done, failed or cancelled). Unknown strings are not final. */
export function isGoalFinal(status: string | undefined): boolean {
  return status !== undefined && FINAL_GOAL_STATUSES.has(status as GoalStatus);
}
