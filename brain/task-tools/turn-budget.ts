/**
 * The cost of a task's agent turns, and its hard budget enforced while a turn runs.
 *
 * - {@link createBudgetWatch}: before a turn, what the task (and its goal) have spent; while it
 *   runs, every `usage` event of the live stream (the supervisor's `onEvent`) is added, and the
 *   event that reaches a limit aborts the turn's signal: the supervisor stops the turn's process
 *   group as a cancel does (between tool calls: a usage event ends a model call). Granularity is the
 *   CLI's: pi and claude report usage per model call (claude without cost until its turn `result`),
 *   codex only at the end of its turn. A request the run's metering proxy refused for the budget
 *   (`metering_refused`) is a stop too: another run of the goal may have spent the goal's limit.
 * - {@link recordTurnUsage}: a finished turn's ledger entry (brain/registry/cost-ledger.ts) and
 *   its `task.turn_usage` journal event, once per worker (an adopted turn is not counted twice).
 * - {@link parkForBudget}: the work is backed up (`refs/polly/backup/<id>/…`, the worktree stays),
 *   the task `parked` with the reason, `budget.reached` and `task.parked` journaled.
 */
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import type { WorkerTurnRequest, WorkerTurnResult } from '../../workers/worker-turn.js';
import { isPollyError } from '../core/errors.js';
import { addTurn, ledgerTurn, meteredUsage, sumTotals, totalTokens, turnUsage, type LedgerRole, type LedgerTotals } from '../registry/cost-ledger.js';
import type { MeterBudget, RefusedRequest } from '../../workers/metering/metering-proxy.js';
import { ensureGoalLedger, goalLedgerPath, openGoalLedger, type GoalMeterSpec } from '../../workers/metering/goal-ledger.js';
import { join } from 'node:path';
import type { Registry, TaskRecord } from '../registry/registry-schema.js';
import type { PollyConfig } from '../config/config-schema.js';
import type { RegistryTx } from '../registry/registry-store.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { budgetFlow, budgetReached, formatBudget, formatReach, raisedBudget, type Budget, type BudgetReach } from '../plan/budgets.js';
import type { TaskToolContext, TaskToolOutcome } from './types.js';

/** A limit reached: whose (the task's or its goal's) and which. */
export interface BudgetStop {
  scope: 'task' | 'goal';
  /** The goal id when `scope` is goal. */
  goalId: string | null;
  budget: Budget;
  reach: BudgetReach;
}

/** Watches one turn's live events against the task's and the goal's budget. */
export interface BudgetWatch {
  /** Aborts when `parent` aborts or a limit is reached: give it to the supervisor's `runTurn`. */
  signal: AbortSignal;
  /** Feed every live event of the turn (usage events are counted). */
  onEvent(event: AgentEvent): void;
  /** The limit this turn reached, or an earlier turn had already reached (then do not start it); null otherwise. */
  stopped(): BudgetStop | null;
  /**
   * What remains of the task's own budget before this turn, for the run's metering proxy to
   * enforce (`WorkerTurnRequest.meter.budget`); null: no limit. The goal's is {@link goalMeter}.
   */
  remaining(): MeterBudget | null;
  /** The goal's shared ledger and whole limit for the run's proxy (`WorkerTurnRequest.meter.goal`); null: the task has no goal (or no repoRoot was given). */
  goalMeter(): GoalMeterSpec | null;
}

/** The goal of a task (through its plan), or null. */
export function goalOfTask(reg: Pick<Registry, 'plans'>, task: Pick<TaskRecord, 'planId'>): string | null {
  return task.planId ? (reg.plans[task.planId]?.goalId ?? null) : null;
}

/** What a goal has spent so far: the sum of its tasks' ledgers and its own LLM session's (`GoalRecord.ledger`, role `brain`). */
export function goalSpent(reg: Pick<Registry, 'plans' | 'tasks'> & { goals?: Registry['goals'] }, goalId: string): LedgerTotals {
  return sumTotals([
    ...Object.values(reg.tasks)
      .filter((t) => goalOfTask(reg, t) === goalId)
      .map((t) => t.ledger?.totals),
    reg.goals?.[goalId]?.ledger?.totals,
  ]);
}

/** The goal budget in force for a goal: its plans' resolved `perGoal` (the first plan that sets one). */
export function goalBudget(reg: Pick<Registry, 'plans'>, goalId: string): Budget | null {
  for (const p of Object.values(reg.plans)) if (p.goalId === goalId && p.gate === 'approved' && p.budgets?.perGoal) return p.budgets.perGoal;
  return null;
}

/** The `.polly` directory of a repository (where the goals' ledgers live, workers/metering/goal-ledger.ts). */
export function pollyDirOf(repoRoot: string): string {
  return join(repoRoot, '.polly');
}

/**
 * The shared ledger of `goalId` (workers/metering/goal-ledger.ts), created when missing with what
 * the goal had spent before it existed (its tasks' and its Brain's ledgers in the registry), and
 * the goal's spending now: the larger of the ledger's total and the registry's sum, per figure
 * (a turn run before the ledger existed is in the registry only).
 */
export function goalMeterState(reg: Pick<Registry, 'plans' | 'tasks' | 'goals'>, repoRoot: string, goalId: string): { ledger: string; spent: { tokens: number; usd: number } } {
  const ledger = goalLedgerPath(pollyDirOf(repoRoot), goalId);
  const recorded = goalSpent(reg, goalId);
  ensureGoalLedger(ledger, { tokens: totalTokens(recorded), usd: recorded.costUsd });
  const l = openGoalLedger(ledger);
  try {
    const t = l.total();
    return { ledger, spent: { tokens: Math.max(t.tokens, totalTokens(recorded)), usd: Math.max(t.usd, recorded.costUsd) } };
  } finally {
    l.close();
  }
}

/**
 * Start watching a turn of `ctx.task` (reads the registry once for what was spent before).
 * With `ctx.repoRoot` and a task of a goal, the goal's budget is the goal's shared ledger
 * (workers/metering/goal-ledger.ts): every proxy of the goal charges it and refuses once it is
 * spent, and the watch reads it on every metered request. Without `repoRoot` (older callers) the
 * goal is counted from the registry alone.
 * @param parent  the tool's own signal (a cancel of the run).
 */
export async function createBudgetWatch(ctx: Pick<TaskToolContext, 'store' | 'task'> & { repoRoot?: string }, parent: AbortSignal): Promise<BudgetWatch> {
  const reg = await ctx.store.read();
  const task = reg.tasks[ctx.task.id] ?? ctx.task;
  const goalId = goalOfTask(reg, task);
  const taskLimit = task.budget ?? null;
  const goalLimit = goalId ? goalBudget(reg, goalId) : null;
  const goalState = goalId && ctx.repoRoot ? goalMeterState(reg, ctx.repoRoot, goalId) : null;
  const ledger = goalState ? openGoalLedger(goalState.ledger) : null;
  const before = { task: task.ledger?.totals ?? sumTotals([]), goal: goalId ? goalSpent(reg, goalId) : sumTotals([]) };
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onParentAbort, { once: true });
  const usage: AgentEvent[] = [];
  let metered = false;
  let stop: BudgetStop | null = null;
  /** The goal's spending now: its shared ledger (every run's and the Brain's requests as charged), else the registry plus this turn. */
  const goalNow = (add: (t: LedgerTotals) => { tokens: number; usd: number }): { tokens: number; usd: number } => {
    if (!ledger || !goalState) return add(before.goal);
    const t = ledger.total();
    const here = add(before.goal);
    return { tokens: Math.max(t.tokens, goalState.spent.tokens, metered ? 0 : here.tokens), usd: Math.max(t.usd, goalState.spent.usd, metered ? 0 : here.usd) };
  };
  const check = (): void => {
    if (stop) return;
    // A metered turn counts only what the proxy read from the API; the stream is not a number then.
    const now = metered ? meteredUsage(usage) : turnUsage(usage);
    const add = (t: LedgerTotals) => ({ tokens: totalTokens(t) + (now ? now.inputTokens + now.outputTokens : 0), usd: t.costUsd + (now?.costUsd ?? 0) });
    const t = budgetReached(taskLimit, add(before.task));
    if (t && taskLimit) stop = { scope: 'task', goalId, budget: taskLimit, reach: t };
    else if (goalId && goalLimit) {
      const g = budgetReached(goalLimit, goalNow(add));
      if (g) stop = { scope: 'goal', goalId, budget: goalLimit, reach: g };
    }
    halt();
  };
  /** Once a limit is reached: the turn's signal aborts with it (no longer following the parent's cancel). */
  const halt = (): void => {
    if (!stop || controller.signal.aborted) return;
    parent.removeEventListener('abort', onParentAbort);
    controller.abort(new Error(`budget reached: ${formatReach(stop.reach)}`));
  };
  /**
   * The run's proxy refused a request for the budget (and its runner ends the turn). The goal's
   * ledger may have been pushed over its limit by another run of the goal since this run's last
   * metered request, so no usage event of this turn reached it: the refusal is the stop.
   */
  const refused = (r: RefusedRequest): void => {
    check();
    if (stop) return;
    const reach: BudgetReach = { kind: r.kind, limit: r.limit, spent: r.spent };
    if ((r.scope ?? 'task') === 'goal' && goalId && goalLimit) stop = { scope: 'goal', goalId, budget: goalLimit, reach };
    else if (taskLimit) {
      // The proxy's task limit is what remained of the budget when the turn started: said as the task's whole budget.
      const earlier = r.kind === 'tokens' ? totalTokens(before.task) : before.task.costUsd;
      const whole = r.kind === 'tokens' ? taskLimit.tokens : taskLimit.usd;
      stop = { scope: 'task', goalId, budget: taskLimit, reach: { ...reach, limit: whole ?? r.limit + earlier, spent: r.spent + earlier } };
    }
    halt();
  };
  check();
  return {
    signal: controller.signal,
    onEvent(event) {
      if (event.type === 'metering_refused') {
        refused(event.refused);
        return;
      }
      if (event.type === 'metering' && !metered) {
        metered = true;
        usage.length = 0;
        usage.push(event);
        return;
      }
      if (metered ? event.type !== 'metered' : event.type !== 'usage') return;
      usage.push(event);
      check();
    },
    stopped: () => stop,
    remaining: () => {
      if (!taskLimit) return null;
      const out: MeterBudget = {};
      if (typeof taskLimit.tokens === 'number') out.tokens = Math.max(0, taskLimit.tokens - totalTokens(before.task));
      if (typeof taskLimit.usd === 'number') out.usd = Math.max(0, taskLimit.usd - before.task.costUsd);
      return out;
    },
    goalMeter: () =>
      goalId && goalState
        ? {
            goalId,
            ledger: goalState.ledger,
            limit: { ...(typeof goalLimit?.tokens === 'number' ? { tokens: goalLimit.tokens } : {}), ...(typeof goalLimit?.usd === 'number' ? { usd: goalLimit.usd } : {}) },
          }
        : null,
  };
}

/**
 * `request` with its metering (`WorkerTurnRequest.meter`): what remains of the task's budget
 * ({@link BudgetWatch.remaining}) and the goal's shared ledger and limit ({@link BudgetWatch.goalMeter}),
 * which the run's metering proxy enforces by refusing the next model request once either is
 * spent, and the config's `prices`.
 */
export function withMeter<R extends WorkerTurnRequest>(request: R, watch: Pick<BudgetWatch, 'remaining' | 'goalMeter'>, config: Pick<PollyConfig, 'prices'>): R {
  return { ...request, meter: { budget: watch.remaining(), prices: config.prices ?? {}, goal: watch.goalMeter() } };
}

/**
 * The model endpoint a harness is pointed at instead of its vendor's API, or null: claude-code's
 * `ANTHROPIC_BASE_URL` (agent env), codex's `workers.codex.provider.base_url` (else `OPENAI_BASE_URL`),
 * pi's `workers.pi.base_url`. The cost ledger marks a cost reported for a local one as not billed.
 */
export function modelEndpoint(harness: TaskRecord['worker'], config: Pick<PollyConfig, 'workers'>, agentEnv: Record<string, string | undefined>): string | null {
  if (harness === 'claude-code') return agentEnv.ANTHROPIC_BASE_URL || null;
  if (harness === 'codex') return config.workers.codex.provider?.base_url || agentEnv.OPENAI_BASE_URL || null;
  return config.workers.pi.base_url || null;
}

/**
 * Add a finished turn to the task's ledger and journal `task.turn_usage` (inside a registry update).
 * Once per worker: a turn adopted after a restart is not counted again.
 * @param meta.endpoint  {@link modelEndpoint} of the harness (null: its vendor's API).
 */
export function recordTurnUsage(
  draft: Registry,
  tx: RegistryTx,
  taskId: string,
  result: Pick<WorkerTurnResult, 'events' | 'workerId' | 'status'>,
  meta: { role: LedgerRole; harness: TaskRecord['worker']; orderId: string; at: string; endpoint: string | null },
): void {
  const t = draft.tasks[taskId];
  if (!t) return;
  if (t.ledger?.turns.some((x) => x.workerId === result.workerId)) return;
  const turn = ledgerTurn(result.events ?? [], {
    at: meta.at,
    role: meta.role,
    harness: meta.harness,
    workerId: result.workerId,
    orderId: meta.orderId,
    status: result.status,
    endpoint: meta.endpoint,
  });
  t.ledger = addTurn(t.ledger, turn);
  tx.emit('task.turn_usage', { taskId, ...turn });
  // The agent's stream disagreed with the proxy, or said something impossible: a finding, not a number.
  for (const finding of turn.findings ?? []) tx.emit('usage.finding', { taskId, workerId: result.workerId, harness: meta.harness, finding });
}

/**
 * The reason a parked task carries.
 * @param options.readOnly  read-only work (explore, search, review in the main checkout): there is no work to back up, only its report so far.
 */
export function budgetReason(stop: BudgetStop, options: { readOnly?: boolean; taskId?: string } = {}): string {
  const whose = stop.scope === 'task' ? 'the task budget' : `the budget of goal ${stop.goalId}`;
  const flag = stop.scope === 'task' ? '--budget' : '--goal-budget';
  const next = options.readOnly
    ? 'The worker was stopped; its report so far is on the task. Raise the budget and dispatch it again.'
    : options.taskId
      ? `The worker was stopped and its work kept; continue it with a higher budget: polly retry ${options.taskId} ${flag} '${budgetFlow(raisedBudget(stop.budget, stop.reach))}' (or take the work from the backup ref).`
      : 'The worker was stopped and its work kept; raise the budget and run the task again, or take the work from the backup ref.';
  return `budget reached: ${whose} (${formatBudget(stop.budget)}): ${formatReach(stop.reach)}. ${next}`;
}

/**
 * Park the task for a reached budget: back up its worktree (kept in place), move it to `parked`
 * (the run's end keeps it there), journal `budget.reached` and `task.parked`.
 * A backup that fails is logged through `ctx.progress` and the task is parked all the same.
 * @returns the tool's outcome: a permanent failure naming the limit.
 */
export async function parkForBudget(ctx: TaskToolContext, stop: BudgetStop, extra: { workerId?: string; sessionId?: string | null } = {}): Promise<TaskToolOutcome> {
  const reason = budgetReason(stop, { taskId: ctx.task.id });
  let backupRef: string | null = null;
  try {
    if (ctx.task.worktree || ctx.task.branch) backupRef = (await ctx.worktrees.backup({ id: ctx.task.id, reason: 'budget reached' })).ref;
  } catch (error) {
    ctx.progress(`${ctx.task.id}: backup on budget stop failed: ${isPollyError(error) ? error.message : String(error)}`);
  }
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    if (extra.sessionId) t.sessionId = extra.sessionId;
    if (backupRef) t.backupRefs = [...t.backupRefs, backupRef];
    // Not `finished`: the run's end (WORKER_FAILED) is still held to its admitted workflow and
    // records the finish (brain/process/order-executor.ts keeps the task parked).
    if (t.status !== 'parked') transitionTask(t, 'parked', { reason, at: ctx.clock().toISOString() });
    tx.emit('budget.reached', {
      taskId: t.id,
      goalId: stop.goalId,
      scope: stop.scope,
      kind: stop.reach.kind,
      limit: stop.reach.limit,
      spent: stop.reach.spent,
      orderId: ctx.order.id,
      workerId: extra.workerId ?? null,
    });
    tx.emit('task.parked', { taskId: t.id, reason, backupRef, worktree: t.worktree ?? null, budget: true }); // the worktree is kept in place
  });
  ctx.progress(`${ctx.task.id}: parked: ${reason}`);
  return { outcome: 'failure', permanent: true, note: `budget: ${reason}` };
}
