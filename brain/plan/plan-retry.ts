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
 * - {@link parkCauses}: why each parked task was parked, from the journal (pure): a task parked
 *   for its budget or for a disk fault can be retried ({@link RETRYABLE_PARKS}); one parked for a
 *   human (fix rounds used up, its path contract) cannot.
 *
 * Budgets: a retried task runs under the budget the retry plan gives it, which the human approves at
 * the gate like any plan's: by default the one it ran under (`TaskRecord.budget`), or the one
 * `polly retry --budget` (or the dashboard's retry form) sets. It is counted over the task's whole
 * ledger, earlier attempts included, so a retry under a budget already spent is refused before it
 * is proposed, naming a budget that would let it run. The retry plan's goal budget is the one of the
 * plan the tasks came from (or `--goal-budget`), counted over the retried tasks.
 */
import { PollyError } from '../core/errors.js';
import { DEPENDENCY_MET_STATUSES, type TaskStatus } from '../core/vocabulary.js';
import { sumTotals, totalTokens } from '../registry/cost-ledger.js';
import type { JournalEntry, PlanRecord, PlanTaskSpec, Registry, TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { planTaskId } from '../registry/task-record.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import { planTaskWorkflowName } from './plan-compiler.js';
import type { Plan } from './plan-schema.js';
import { budgetFlow, budgetReached, formatBudget, formatReach, raisedBudget, taskBudget, type Budget, type BudgetReach } from './budgets.js';

export { budgetFlow };

/** Statuses a task can be retried from: it stopped without a ready PR (a failure, a missing or exited agent, a prompt it could not answer, a cancel or a skip). */
export const RETRYABLE_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>(['failed', 'agent_missing', 'agent_exited', 'blocked_on_prompt', 'base_red', 'cancelled']);

/** Statuses the Brain hands to a retry plan: the retryable ones and `parked` (a park {@link retryPlan} let through). */
export const TAKEOVER_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>([...RETRYABLE_TASK_STATUSES, 'parked']);

/**
 * Why a task is parked, from the journal events of its park (pure data):
 * - `budget`: `budget.reached` (brain/task-tools/turn-budget.ts, brain/process/order-executor.ts)
 *   then `task.parked`: whose budget (`scope`), which limit (`kind`, `limit`, `spent`);
 * - `io_fault`: `task.parked` with `ioFault` (a full disk, a quota: brain/core/io-fault.ts);
 * - `other`: parked for a human (fix rounds used up, its path contract, a conflict).
 * `seq` is the journal seq of the `task.parked` event.
 */
export type ParkCause =
  | { cause: 'budget'; scope: 'task' | 'goal'; kind: BudgetReach['kind']; limit: number; spent: number; seq: number }
  | { cause: 'io_fault'; code: string; seq: number }
  | { cause: 'other'; seq: number };

/** The park causes `polly retry` continues from: the limit can be raised, the disk can be freed. */
export const RETRYABLE_PARKS: ReadonlySet<ParkCause['cause']> = new Set(['budget', 'io_fault']);

/**
 * The cause of each task's latest park, by task id (pure; see {@link ParkCause}). A `task.retried`
 * event forgets the task's earlier park; a task parked again after it gets its new cause.
 * @param journal  registry journal entries in seq order (the whole journal, or from before the parks).
 */
export function parkCauses(journal: readonly JournalEntry[]): Map<string, ParkCause> {
  const out = new Map<string, ParkCause>();
  const reached = new Map<string, Record<string, unknown>>();
  for (const e of journal) {
    const id = e.data.taskId;
    if (typeof id !== 'string') continue;
    if (e.kind === 'task.retried') {
      out.delete(id);
      reached.delete(id);
    } else if (e.kind === 'budget.reached') reached.set(id, e.data);
    else if (e.kind === 'task.parked') {
      const b = reached.get(id);
      reached.delete(id);
      if (typeof e.data.ioFault === 'string') out.set(id, { cause: 'io_fault', code: e.data.ioFault, seq: e.seq });
      else if (b)
        out.set(id, {
          cause: 'budget',
          scope: b.scope === 'goal' ? 'goal' : 'task',
          kind: b.kind === 'usd' ? 'usd' : 'tokens',
          limit: Number(b.limit),
          spent: Number(b.spent),
          seq: e.seq,
        });
      else out.set(id, { cause: 'other', seq: e.seq });
    }
  }
  return out;
}

/** What a retry runs under, when it says so (`polly retry --budget / --goal-budget`, the dashboard's form). */
export interface RetryBudgets {
  /** Every retried task's hard budget; null: no limit; absent: the one each ran under. */
  budget?: Budget | null;
  /** The retry goal's budget, counted over the retried tasks; null: no limit; absent: the one of the plan they came from. */
  goalBudget?: Budget | null;
}

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
export function retryPlan(reg: Registry, taskIds: readonly string[], options: RetryBudgets & { parks?: ReadonlyMap<string, ParkCause> } = {}): RetryPlan {
  if (taskIds.length === 0) throw new PollyError('bad_input', 'polly retry: which task? Give the id of a task that stopped, e.g. polly retry p1-t1 (polly status lists them).');
  const tasks = taskIds.map((id) => {
    const t = reg.tasks[id];
    if (!t) throw new PollyError('not_found', `polly retry: no task ${id}. List tasks with polly status.`, { details: { task: id } });
    const park = t.status === 'parked' ? options.parks?.get(id) : undefined;
    if (!RETRYABLE_TASK_STATUSES.has(t.status) && !(park && RETRYABLE_PARKS.has(park.cause))) {
      const instead =
        t.status === 'parked'
          ? ' A task parked for a human (not for its budget or a full disk) waits with its PR: fix it on its branch, or comment on the PR (a change request starts a fix round).'
          : DEPENDENCY_MET_STATUSES.has(t.status)
            ? ' Its PR is ready or merged: comment on the PR to have it changed.'
            : ' It has not stopped: follow it with polly status, or cancel it first.';
      throw new PollyError(
        'conflict',
        `polly retry: task ${id} is ${t.status}; only a task that stopped (${[...RETRYABLE_TASK_STATUSES].join(', ')}, or parked for its budget or a full disk) can be retried.${instead}`,
        {
          details: { task: id, status: t.status },
        },
      );
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
    // The budget it runs under: the one given, else the one in force (resolved when it was created).
    const budget = options.budget !== undefined ? options.budget : (t.budget ?? null);
    refuseSpentBudget(t, budget, options.budget !== undefined);
    retries[key] = t.id;
    specs.push({ ...spec, dependsOn, prompt: retryPrompt(spec.prompt, t), budget });
  }
  // The goal's budget is counted over the retried tasks' ledgers (they belong to the retry's goal).
  const perGoal = options.goalBudget !== undefined ? options.goalBudget : (from.budgets?.perGoal ?? null);
  const goalSpent = sumTotals(tasks.map((t) => t.ledger?.totals));
  const goalReach = budgetReached(perGoal, { tokens: totalTokens(goalSpent), usd: goalSpent.costUsd });
  if (perGoal && goalReach) {
    const raised = raisedBudget(perGoal, goalReach);
    throw new PollyError(
      'conflict',
      `polly retry: ${taskIds.join(', ')} already reached the goal budget ${options.goalBudget !== undefined ? 'given' : `of plan ${from.id}`} (${formatBudget(perGoal)}: ${formatReach(goalReach)}, counted over their attempts so far), so the retry would stop before its first model call; nothing was proposed. Give the retry's goal a higher one: polly retry ${taskIds.join(' ')} --goal-budget '${budgetFlow(raised)}'`,
      { details: { tasks: [...taskIds], goalBudget: perGoal, spent: goalReach.spent, kind: goalReach.kind } },
    );
  }
  const title = tasks.map((t) => t.id).join(', ');
  const batches = Object.fromEntries(Object.entries(from.batches ?? {}).filter(([k]) => retries[k] !== undefined));
  return { plan: { goal: `retry ${title}`, tasks: specs, batches, budgets: { per_task: null, per_goal: perGoal } }, retries, fromPlanId: from.id };
}

/**
 * Refuse a retry of `task` under `budget` when its ledger (every attempt so far) has reached it:
 * the retry would be parked again before its first model call.
 * @param given  the budget came from the user (`--budget`), not from the task.
 * @throws PollyError `conflict` naming what was spent and a budget that lets the retry run.
 */
function refuseSpentBudget(task: TaskRecord, budget: Budget | null, given: boolean): void {
  const totals = task.ledger?.totals;
  if (!budget || !totals) return;
  const reach = budgetReached(budget, { tokens: totalTokens(totals), usd: totals.costUsd });
  if (!reach) return;
  const raised = raisedBudget(budget, reach);
  throw new PollyError(
    'conflict',
    `polly retry: task ${task.id} already reached ${given ? 'the budget given' : 'its budget'} (${formatBudget(budget)}: ${formatReach(reach)}, counted over every attempt so far), so the retry would stop before its first model call; nothing was proposed. Give it a higher one: polly retry ${task.id} --budget '${budgetFlow(raised)}'`,
    { details: { task: task.id, budget, spent: reach.spent, kind: reach.kind } },
  );
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
 * in `retriedFrom` (plan, status, reason, time). Its budget becomes the retry plan's for it (the
 * one approved at the gate; see the module doc). Worktree, branch, base, PR, backups and cost
 * ledger are kept: the retry continues the work.
 * @returns the status it left.
 * @throws PollyError `internal` when the task is not in a retryable status (the lifecycle refuses).
 */
export function takeOverForRetry(task: TaskRecord, plan: PlanRecord, key: string, at: string): TaskStatus {
  const spec = plan.tasks.find((s) => s.key === key)!;
  const earlier = { planId: task.planId, status: task.status, reason: task.statusReason, at };
  const left = transitionTask(task, 'queued', { reason: null, at });
  // The budget the retry plan was approved with (a retry plan proposed before retries carried one keeps the task's).
  if (spec.budget !== undefined) {
    const budget = taskBudget(spec.budget, plan.budgets);
    if (budget) task.budget = budget;
    else delete task.budget;
  }
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
 * that retries it; with `parks` (from {@link parkCauses}), also each task parked for its budget
 * (the command names a higher budget) or a disk fault. Empty when there is none. Pure.
 */
export function retryHints(reg: Pick<Registry, 'plans' | 'tasks'>, taskIds?: readonly string[], parks?: ReadonlyMap<string, ParkCause>): string[] {
  const ids = taskIds ?? Object.values(reg.tasks).map((t) => t.id);
  const stopped = ids
    .map((id) => reg.tasks[id])
    .filter(
      (t): t is TaskRecord =>
        t !== undefined &&
        (RETRYABLE_TASK_STATUSES.has(t.status) || (t.status === 'parked' && RETRYABLE_PARKS.has(parks?.get(t.id)?.cause ?? 'other'))) &&
        t.planId !== null &&
        reg.plans[t.planId]?.gate === 'approved',
    );
  return stopped.map((t) => {
    const why = t.statusReason ? `: ${t.statusReason.split('\n')[0]!.slice(0, 200)}` : '';
    const where = t.worktree ? `; its work stays in ${t.worktree} on ${t.branch ?? `polly/${t.id}`}` : '';
    const park = parks?.get(t.id);
    const raise =
      t.status === 'parked' && park?.cause === 'budget'
        ? ` ${park.scope === 'task' ? '--budget' : '--goal-budget'} '${budgetFlow(raisedBudget(park.scope === 'task' ? (t.budget ?? {}) : {}, { kind: park.kind, limit: park.limit, spent: park.spent }))}'`
        : '';
    return `[polly] ${t.id} ${t.status}${why.length > 0 && t.status === 'parked' ? why.split('. ')[0] : why}${where}. ${t.status === 'parked' ? 'Continue it' : 'Retry it'} there with: polly retry ${t.id}${raise}`;
  });
}
