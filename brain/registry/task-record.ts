/**
 * A new task record: the one place that knows every field a fresh TaskRecord starts with; and the
 * record of an acceptance run on it ({@link recordChecks}).
 */
import { createHash } from 'node:crypto';
import { CHECK_RUN_OUTPUT_BYTES, CHECK_RUNS_KEPT, type CheckRun, type CommandResult, type TaskRecord } from './registry-schema.js';

/** The fields a caller decides; everything else starts empty (status `queued`). */
export type NewTaskFields = Pick<TaskRecord, 'id' | 'planId' | 'title' | 'purpose' | 'worker' | 'model' | 'reviewer' | 'prompt' | 'acceptance' | 'dependsOn'>;

/** A queued task with no worktree, branch, checks, reviews or PR yet. `at` is an ISO time. */
export function newTaskRecord(fields: NewTaskFields, at: string): TaskRecord {
  return {
    ...fields,
    status: 'queued',
    statusReason: null,
    attempts: 0,
    reviewRounds: 0,
    branch: null,
    worktree: null,
    baseBranch: null,
    baseCommit: null,
    headCommit: null,
    checks: [],
    reviews: [],
    pr: null,
    backupRefs: [],
    sessionId: null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * The task id of plan task `key`: `<plan id>-<key>`, or, when the plan retries an earlier task
 * under that key (`plan.retries`, written by `polly retry`), that task's id: a retry runs the same
 * task record, worktree, branch and PR under the retry plan's admitted workflows.
 */
export function planTaskId(plan: { id: string; retries?: Record<string, string> }, key: string): string {
  return plan.retries?.[key] ?? `${plan.id}-${key}`;
}

/** The fields of a task that say what its work is (what {@link taskContentKey} hashes). */
export type TaskContent = Pick<TaskRecord, 'id' | 'title' | 'purpose' | 'worker' | 'prompt' | 'acceptance'>;

/** The git trailer that carries {@link taskContentKey} on every commit Polly makes for a task. */
export const TASK_CONTENT_TRAILER = 'Polly-Task-Content';

/**
 * A task's content key: the first 16 hex digits of sha256 over its id, title, purpose, worker,
 * prompt and acceptance commands and criteria (canonical JSON). The same plan task run again —
 * after the registry was lost, its ids counted from 1 again — has the same key; another plan's
 * task under the same id, or this one with another prompt or contract, has another. Model,
 * reviewer, base and budgets are left out: they change how the work is done, not what it is. Pure.
 */
export function taskContentKey(task: TaskContent): string {
  const canon = [task.id, task.title, task.purpose, task.worker, task.prompt, [...task.acceptance.commands], [...task.acceptance.criteria]];
  return createHash('sha256').update(JSON.stringify(canon)).digest('hex').slice(0, 16);
}

/**
 * Record an acceptance run on task `t` (a draft inside a registry update): `checks` becomes its
 * results and the run is appended to `checkRuns` (the last {@link CHECK_RUNS_KEPT}, outputs cut to
 * their last {@link CHECK_RUN_OUTPUT_BYTES} characters), so every run stays visible, not only the last.
 * @param at  ISO time of the run's end.
 */
export function recordChecks(t: TaskRecord, results: CommandResult[], at: string): void {
  t.checks = results;
  const green = results.length > 0 && results.every((r) => r.exitCode === 0 && !r.timedOut);
  const kept = results.map((r) => (r.output.length > CHECK_RUN_OUTPUT_BYTES ? { ...r, output: r.output.slice(-CHECK_RUN_OUTPUT_BYTES) } : r));
  const run: CheckRun = { at, planId: t.planId, attempt: t.attempts, fixRound: t.fixRound?.round ?? null, green, results: kept };
  t.checkRuns = [...(t.checkRuns ?? []), run].slice(-CHECK_RUNS_KEPT);
}
