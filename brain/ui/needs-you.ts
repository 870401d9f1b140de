/**
 * What waits for a human, for the "needs you" strip at the top of the dashboard's overview: plans at
 * the gate, tasks that stopped (failed, parked, red on their base, …) with the one line of their
 * reason and what moves them, and PRs ready for a human to merge (Polly never merges). Pure over the
 * registry and the park causes (brain/plan/plan-retry.ts `parkCauses`).
 */
import { budgetFlow, raisedBudget } from '../plan/budgets.js';
import { pendingRetry, RETRYABLE_PARKS, RETRYABLE_TASK_STATUSES, type ParkCause } from '../plan/plan-retry.js';
import type { PlanRecord, Registry, TaskRecord } from '../registry/registry-schema.js';
import { compareIds, reasonLine } from '../registry/status-report.js';

/** One thing that waits for a human. */
export type NeedsYouItem =
  /** A plan admitted and waiting at the gate: approve or reject it (in place, or on its page). */
  | { kind: 'plan'; plan: PlanRecord }
  /**
   * A task that stopped. `retry`: the dashboard can propose its retry plan (`budget`: the raised
   * budget the button proposes, for a task parked for its own budget); null when only a command or
   * the forge moves it. `command`: what moves it from a terminal.
   */
  | { kind: 'task'; task: TaskRecord; reason: string; command: string; retry: { budget: { tokens?: number; usd?: number } | null } | null }
  /** A PR that is ready for a human to merge. */
  | { kind: 'pr'; task: TaskRecord };

/** Task statuses that wait for a human: the retryable ones but `cancelled` (a human chose it), and `parked`. */
const STOPPED: ReadonlySet<string> = new Set([...RETRYABLE_TASK_STATUSES, 'parked'].filter((s) => s !== 'cancelled'));

/**
 * What waits for a human, in this order: plans at the gate, stopped tasks, ready PRs (each by id).
 * A stopped task whose retry plan already waits at the gate is not listed twice (its plan is).
 * Tasks of plans that are not approved any more (a rejected retry) are left out, as `polly retry`'s hints do.
 * @param parks  why each parked task is parked; a task missing from it is treated as parked for a human.
 */
export function needsYou(reg: Registry, parks: ReadonlyMap<string, ParkCause>): NeedsYouItem[] {
  const plans = Object.values(reg.plans)
    .filter((p) => p.gate === 'pending' && p.admission?.admitted !== false)
    .sort((a, b) => compareIds(a.id, b.id));
  const tasks = Object.values(reg.tasks).sort((a, b) => compareIds(a.id, b.id));
  const stopped = tasks.filter((t) => STOPPED.has(t.status) && (t.planId === null || reg.plans[t.planId]?.gate === 'approved') && !pendingRetry(reg, [t.id]));
  const ready = tasks.filter((t) => t.status === 'ready' && t.pr !== null && t.pr.state === 'ready');
  return [
    ...plans.map((plan) => ({ kind: 'plan' as const, plan })),
    ...stopped.map((task) => stoppedItem(task, parks.get(task.id))),
    ...ready.map((task) => ({ kind: 'pr' as const, task })),
  ];
}

function stoppedItem(task: TaskRecord, park: ParkCause | undefined): NeedsYouItem {
  const reason = reasonLine(task.statusReason ?? `${task.status}, no reason recorded`, 300, 400);
  if (task.status !== 'parked') {
    const retryable = task.planId !== null && RETRYABLE_TASK_STATUSES.has(task.status);
    return { kind: 'task', task, reason, command: retryable ? `polly retry ${task.id}` : `polly status`, retry: retryable ? { budget: null } : null };
  }
  if (park && RETRYABLE_PARKS.has(park.cause)) {
    if (park.cause === 'budget') {
      const scope = park.scope === 'task';
      const next = raisedBudget(scope ? (task.budget ?? {}) : {}, park);
      const flow = budgetFlow(next);
      const budget = { ...(typeof next.tokens === 'number' ? { tokens: next.tokens } : {}), ...(typeof next.usd === 'number' ? { usd: next.usd } : {}) };
      return {
        kind: 'task',
        task,
        reason,
        command: `polly retry ${task.id} ${scope ? '--budget' : '--goal-budget'} '${flow}'`,
        // The form takes a task budget; a goal's is raised from a terminal.
        retry: scope ? { budget } : null,
      };
    }
    return { kind: 'task', task, reason, command: `polly retry ${task.id}`, retry: { budget: null } };
  }
  // Parked for a human (fix rounds exhausted, an unresolvable conflict): its PR is where it moves.
  return { kind: 'task', task, reason, command: task.pr ? `fix it on ${task.branch ?? `polly/${task.id}`} or comment on PR #${task.pr.number}` : 'polly status', retry: null };
}
