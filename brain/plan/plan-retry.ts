/**
 * Retrying a task that stopped (`polly retry TASK-ID…`): the retry is a plan of its own, compiled and
 * model-checked like any other and approved at the plan gate, so a retried task runs only what the
 * checker admitted. What the retry keeps is the task itself: its record (id, worktree, branch,
 * base, PR, backups) passes to the retry plan on approval (`PlanRecord.retries`), so the worker
 * starts again in the same worktree with the work of the earlier attempt, uncommitted files
 * included, and a PR the earlier attempt opened is the one the retry carries (never a second).
 *
 * - {@link retryPlan}: which plan retries the given tasks (pure; refusals say what to do instead).
 * - {@link pendingRetry}: a retry of these tasks already proposed and not yet taken over (pure).
 * - {@link takeOverForRetry}: the Brain hands a stopped task to its retry plan (a registry draft).
 */
import { PollyError } from '../core/errors.js';
import { DEPENDENCY_MET_STATUSES, type TaskStatus } from '../core/vocabulary.js';
import type { PlanRecord, PlanTaskSpec, Registry, TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { planTaskId } from '../registry/task-record.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import { planTaskWorkflowName } from './plan-compiler.js';
import type { Plan } from './plan-schema.js';

/** Statuses a task can be retried from: it stopped without a ready PR (a failure, a missing or exited agent, a prompt it could not answer, a cancel or a skip). */
export const RETRYABLE_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>(['failed', 'agent_missing', 'agent_exited', 'blocked_on_prompt', 'base_red', 'cancelled']);

/** A retry plan to propose: the plan (its tasks keep their keys) and `retries` (key → task id). */
export interface RetryPlan {
  plan: Plan;
  retries: Record<string, string>;
  /** The plan the tasks came from. */
  fromPlanId: string;
}

/** The plan that owns task `id` now (the newest approved plan whose tasks include it). */
function owningPlan(reg: Registry, task: TaskRecord): PlanRecord | null {
  return task.planId ? (reg.plans[task.planId] ?? null) : null;
}

/** The key of task `id` in `plan`, or null. */
function keyIn(plan: PlanRecord, id: string): string | null {
  return plan.tasks.find((s) => planTaskId(plan, s.key) === id)?.key ?? null;
}

/**
 * A retry plan already proposed for `taskIds` and not yet taken over (pure), so `polly retry` follows
 * it instead of proposing a second one.
 *
 * Only a plan that retries exactly the named tasks is followed (`{ follow }`): `--yes` then approves
 * it, and it approves nothing the user did not name. A pending plan that retries any of them along
 * with other tasks, or only some of them, is a `conflict`: its id and the tasks it covers are named,
 * with the commands that decide it. An approved plan covering more is followed: nothing is approved.
 * @returns `{ follow: plan }`, `null` when no proposed retry touches these tasks.
 * @throws PollyError `conflict` for a pending plan that retries a different set of tasks.
 */
export function pendingRetry(reg: Registry, taskIds: readonly string[]): { follow: PlanRecord } | null {
  const named = new Set(taskIds);
  const open = Object.values(reg.plans)
    .filter((p) => (p.gate === 'pending' || p.gate === 'approved') && p.retries)
    .map((p) => ({ plan: p, covers: Object.values(p.retries!).filter((id) => reg.tasks[id]?.planId !== p.id) }))
    .filter(({ covers }) => covers.some((id) => named.has(id)))
    .sort((a, b) => b.plan.createdAt.localeCompare(a.plan.createdAt));
  for (const { plan, covers } of open) {
    const exact = covers.length === named.size && covers.every((id) => named.has(id));
    if (exact || (plan.gate === 'approved' && taskIds.every((id) => covers.includes(id)))) return { follow: plan };
    if (plan.gate === 'pending') {
      throw new PollyError(
        'conflict',
        `polly retry: plan ${plan.id} is pending at the plan gate and retries ${covers.join(', ')}, not exactly ${taskIds.join(', ')}; nothing was approved. Approve it with: polly plan approve ${plan.id} — or reject it (polly plan reject ${plan.id}) and run polly retry again.`,
        { details: { plan: plan.id, retries: covers, asked: [...taskIds] } },
      );
    }
  }
  return null;
}

/**
 * A plan that runs `taskIds` again (pure).
 *
 * Each task must exist, belong to a plan, and be in a {@link RETRYABLE_TASK_STATUSES} status; all
 * must belong to the same plan. A task keeps its spec (title, worker, reviewer, model, acceptance,
 * budget, base); its prompt gets a last paragraph saying that an earlier attempt stopped, why, and
 * that its work is in the worktree. Dependencies on retried tasks are kept; a dependency on a task
 * that is ready, merged or done is met and dropped; any other dependency is refused (retry it too).
 * @throws PollyError `not_found` for an unknown task id; `conflict` for a task that cannot be
 *   retried (its status, no plan, plans that differ, an unmet dependency), naming what to run instead.
 */
export function retryPlan(reg: Registry, taskIds: readonly string[]): RetryPlan {
  if (taskIds.length === 0) throw new PollyError('bad_input', 'polly retry: which task? Give the id of a task that stopped, e.g. polly retry p1-t1 (polly status lists them).');
  const tasks = taskIds.map((id) => {
    const t = reg.tasks[id];
    if (!t) throw new PollyError('not_found', `polly retry: no task ${id}. List tasks with polly status.`, { details: { task: id } });
    if (!RETRYABLE_TASK_STATUSES.has(t.status)) {
      const instead =
        t.status === 'parked'
          ? ' A parked task waits for a human with its PR: fix it on its branch, or comment on the PR (a change request starts a fix round).'
          : DEPENDENCY_MET_STATUSES.has(t.status)
            ? ' Its PR is ready or merged: comment on the PR to have it changed.'
            : ' It has not stopped: follow it with polly status, or cancel it first.';
      throw new PollyError('conflict', `polly retry: task ${id} is ${t.status}; only a task that stopped (${[...RETRYABLE_TASK_STATUSES].join(', ')}) can be retried.${instead}`, {
        details: { task: id, status: t.status },
      });
    }
    return t;
  });
  const plans = new Set(tasks.map((t) => t.planId));
  const from = owningPlan(reg, tasks[0]!);
  if (!from || plans.size !== 1) {
    throw new PollyError(
      'conflict',
      `polly retry: ${from ? `the tasks belong to different plans (${[...plans].join(', ')}); retry each plan's tasks with its own polly retry` : `task ${tasks[0]!.id} belongs to no plan (it was started by the Brain's tools); ask the Brain again instead`}.`,
      { details: { tasks: taskIds } },
    );
  }
  const named = new Set(taskIds);
  const retries: Record<string, string> = {};
  const specs: PlanTaskSpec[] = [];
  for (const t of tasks) {
    const key = keyIn(from, t.id)!;
    const spec = from.tasks.find((s) => s.key === key)!;
    const dependsOn: string[] = [];
    for (const d of spec.dependsOn) {
      const depId = planTaskId(from, d);
      if (named.has(depId)) {
        dependsOn.push(d);
        continue;
      }
      const dep = reg.tasks[depId];
      if (dep && DEPENDENCY_MET_STATUSES.has(dep.status)) continue;
      throw new PollyError('conflict', `polly retry: ${t.id} depends on ${depId}, which is ${dep?.status ?? 'missing'}; retry both: polly retry ${[...taskIds, depId].join(' ')}`, {
        details: { task: t.id, dependency: depId, status: dep?.status ?? null },
      });
    }
    retries[key] = t.id;
    specs.push({ ...spec, dependsOn, prompt: retryPrompt(spec.prompt, t) });
  }
  const title = tasks.map((t) => t.id).join(', ');
  const batches = Object.fromEntries(Object.entries(from.batches ?? {}).filter(([k]) => retries[k] !== undefined));
  return { plan: { goal: `retry ${title}`, tasks: specs, batches, budgets: null }, retries, fromPlanId: from.id };
}

/** The task's prompt with a last paragraph about the earlier attempt (pure). */
export function retryPrompt(prompt: string, task: Pick<TaskRecord, 'id' | 'status' | 'statusReason' | 'worktree'>): string {
  const why = task.statusReason ? `: ${task.statusReason.length > 600 ? `${task.statusReason.slice(0, 600)}…` : task.statusReason}` : '';
  const where = task.worktree ? ' Its work, committed or not, is in this worktree: start from it, do not start over.' : '';
  return `${prompt}\n\nThis is a retry: an earlier attempt of task ${task.id} ended ${task.status}${why}.${where}`;
}

/**
 * Hand `task` (a registry draft record, mutated in place) to its retry plan `plan` under `key`:
 * its spec becomes the retry plan's (prompt, dependencies as task ids), the status goes back to
 * `queued` with attempts, review rounds, checks and reviews reset, and the earlier attempt is kept
 * in `retriedFrom` (plan, status, reason, time). Worktree, branch, base, PR, backups and cost ledger
 * are kept: the retry continues the work.
 * @returns the status it left.
 * @throws PollyError `internal` when the task is not in a retryable status (the lifecycle refuses).
 */
export function takeOverForRetry(task: TaskRecord, plan: PlanRecord, key: string, at: string): TaskStatus {
  const spec = plan.tasks.find((s) => s.key === key)!;
  const earlier = { planId: task.planId, status: task.status, reason: task.statusReason, at };
  const left = transitionTask(task, 'queued', { reason: null, at });
  task.retriedFrom = [...(task.retriedFrom ?? []), earlier];
  task.planId = plan.id;
  task.prompt = spec.prompt;
  task.dependsOn = spec.dependsOn.map((d) => planTaskId(plan, d));
  task.attempts = 0;
  task.reviewRounds = 0;
  task.checks = [];
  task.reviews = [];
  task.feedback = null;
  // The new session was not told about an earlier path-contract refusal: it gets its own warning first.
  delete task.protectedRefusals;
  task.cancelRequested = false;
  task.startedAt = null;
  task.finishedAt = null;
  return left;
}

/**
 * The plan whose admitted workflow run `run` is: its `input.plan` (a schedule run), else the plan
 * that compiled its task workflow (`plan-<plan id>-<key>`, {@link planTaskWorkflowName}), else its
 * task's plan. A retried task has runs under two plans; this tells them apart. Pure.
 */
export function planIdOfRun(reg: Pick<Registry, 'plans' | 'tasks'>, run: Pick<RunRecord, 'workflow' | 'input'>): string | null {
  if (typeof run.input.plan === 'string') return run.input.plan;
  for (const p of Object.values(reg.plans)) if (p.tasks.some((s) => planTaskWorkflowName(p.id, s.key) === run.workflow)) return p.id;
  return typeof run.input.task === 'string' ? (reg.tasks[run.input.task]?.planId ?? null) : null;
}

/**
 * Whether `run` is its task's current run: a run of the task workflow of the plan that holds the
 * task now. False for the run a retried task ended in under its earlier plan. Pure.
 */
export function isCurrentTaskRun(reg: Pick<Registry, 'plans' | 'tasks'>, task: Pick<TaskRecord, 'planId'>, run: Pick<RunRecord, 'workflow' | 'input'>): boolean {
  const plan = task.planId ? reg.plans[task.planId] : undefined;
  if (!plan?.retries) return true;
  return planIdOfRun(reg, run) === plan.id;
}

/**
 * One stderr line per task that stopped and can be retried (among `taskIds`, or every task of an
 * approved plan that still holds it), saying why it stopped, where its work is, and the command
 * that retries it. Empty when there is none. Pure.
 */
export function retryHints(reg: Pick<Registry, 'plans' | 'tasks'>, taskIds?: readonly string[]): string[] {
  const ids = taskIds ?? Object.values(reg.tasks).map((t) => t.id);
  const stopped = ids
    .map((id) => reg.tasks[id])
    .filter((t): t is TaskRecord => t !== undefined && RETRYABLE_TASK_STATUSES.has(t.status) && t.planId !== null && reg.plans[t.planId]?.gate === 'approved');
  return stopped.map((t) => {
    const why = t.statusReason ? `: ${t.statusReason.split('\n')[0]!.slice(0, 200)}` : '';
    const where = t.worktree ? `; its work stays in ${t.worktree} on ${t.branch ?? `polly/${t.id}`}` : '';
    return `[polly] ${t.id} ${t.status}${why}${where}. Retry it there with: polly retry ${t.id}`;
  });
}
