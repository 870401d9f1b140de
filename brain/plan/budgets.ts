/**
 * Hard budgets: which limit applies to a task and to a goal, and whether spending has reached it.
 *
 * Precedence (most specific wins, whole budget objects, not field by field): a plan task's
 * `budget` → the plan's `budgets.per_task` → config `budgets.per_task`; a goal's limit is the plan's
 * `budgets.per_goal` → config `budgets.per_goal`. The limits are resolved when the plan is
 * proposed and stored on the plan record (`PlanRecord.budgets`) and on each task
 * (`TaskRecord.budget`), so the human approves the figures shown at the gate and a config edited
 * later changes nothing of an admitted plan.
 *
 * "Reached" means spent ≥ limit. Tokens are input (cache included) + output; USD is the sum of the
 * costs the agents reported: a turn of unknown cost (codex reports none) adds nothing to it, so
 * only a token limit can stop such a worker.
 */
import type { Budget } from '../config/config-schema.js';
import { formatUsd } from '../registry/cost-ledger.js';
import { unmeteredReason } from '../../workers/metering/turn-meter.js';
import type { Harness } from '../core/vocabulary.js';

export type { Budget };

/** The plan's own budgets (plan file `budgets`), snake_case as written. */
export interface PlanBudgets {
  per_task?: Budget | null;
  per_goal?: Budget | null;
}

/** The limits a plan was proposed under (stored on the plan record and shown at the gate). */
export interface ResolvedBudgets {
  /** The default per-task limit (a task's own `budget` wins), or null for none. */
  perTask: Budget | null;
  perGoal: Budget | null;
}

/** A budget with neither field set is no limit. */
function limitOrNull(b: Budget | null | undefined): Budget | null {
  if (!b) return null;
  const out: Budget = {};
  if (typeof b.usd === 'number') out.usd = b.usd;
  if (typeof b.tokens === 'number') out.tokens = b.tokens;
  return out.usd === undefined && out.tokens === undefined ? null : out;
}

/** The plan's budgets over the config's (see the module doc). */
export function resolvePlanBudgets(config: { budgets: { per_task: Budget | null; per_goal: Budget | null } }, plan: PlanBudgets | null | undefined): ResolvedBudgets {
  return {
    perTask: plan?.per_task !== undefined ? limitOrNull(plan.per_task) : limitOrNull(config.budgets.per_task),
    perGoal: plan?.per_goal !== undefined ? limitOrNull(plan.per_goal) : limitOrNull(config.budgets.per_goal),
  };
}

/** A task's limit: its own `budget` when the plan task sets one (null there = no limit), else the plan's per-task limit. */
export function taskBudget(own: Budget | null | undefined, resolved: ResolvedBudgets | null | undefined): Budget | null {
  return own !== undefined ? limitOrNull(own) : (resolved?.perTask ?? null);
}

/** What has been spent: tokens (input incl. cache + output) and the known USD. */
export interface Spent {
  tokens: number;
  usd: number;
}

/** Which limit was reached, for `budget.reached` and the task's reason. */
export interface BudgetReach {
  /** `usd` or `tokens`. */
  kind: 'usd' | 'tokens';
  limit: number;
  spent: number;
}

/** The first limit of `budget` that `spent` has reached (tokens checked first), or null. */
export function budgetReached(budget: Budget | null | undefined, spent: Spent): BudgetReach | null {
  if (!budget) return null;
  if (typeof budget.tokens === 'number' && spent.tokens >= budget.tokens) return { kind: 'tokens', limit: budget.tokens, spent: spent.tokens };
  if (typeof budget.usd === 'number' && spent.usd >= budget.usd) return { kind: 'usd', limit: budget.usd, spent: spent.usd };
  return null;
}

/** `$0.50 and 20000 tokens`, `20000 tokens`, or `no limit`. */
export function formatBudget(budget: Budget | null | undefined): string {
  const b = limitOrNull(budget);
  if (!b) return 'no limit';
  const parts: string[] = [];
  if (b.usd !== undefined && b.usd !== null) parts.push(formatUsd(b.usd));
  if (b.tokens !== undefined && b.tokens !== null) parts.push(`${b.tokens} tokens`);
  return parts.join(' and ');
}

/** `tokens 1234 ≥ limit 1000` / `$0.0123 ≥ limit $0.0100`. */
export function formatReach(r: BudgetReach): string {
  return r.kind === 'tokens' ? `tokens ${r.spent} ≥ limit ${r.limit}` : `cost ${formatUsd(r.spent)} ≥ limit ${formatUsd(r.limit)}`;
}

/**
 * The plan gate's price rule (docs/metering.md): a USD budget is enforced by Polly's metering
 * proxy from config `prices`, so every worker a USD budget covers (a task's implementer and its
 * reviewer, under the task's own, the per-task or the per-goal limit) must run a model with a
 * price. One sentence per worker without one, naming the config key to add; empty when all have.
 * @param tasks  the plan's tasks (`key`, `worker`, `reviewer`, `model`, `budget` as written).
 */
export function unpricedUsdBudgets(
  tasks: ReadonlyArray<{ key: string; worker: Harness; reviewer?: Harness | null; model?: string | null; budget?: Budget | null }>,
  resolved: ResolvedBudgets,
  config: { workers: Record<Harness, { model: string | null }>; prices?: Record<string, unknown> },
): string[] {
  const out: string[] = [];
  for (const t of tasks) {
    const own = taskBudget(t.budget, resolved);
    const usd =
      typeof own?.usd === 'number'
        ? { what: `a usd budget of ${formatUsd(own.usd)}` }
        : typeof resolved.perGoal?.usd === 'number'
          ? { what: `the goal's usd budget of ${formatUsd(resolved.perGoal.usd)}` }
          : null;
    if (!usd) continue;
    const workers: Array<[Harness, string | null]> = [[t.worker, t.model ?? config.workers[t.worker].model ?? null]];
    if (t.reviewer) workers.push([t.reviewer, config.workers[t.reviewer].model ?? null]);
    for (const [h, model] of workers) {
      if (!model) {
        out.push(
          `task ${t.key} has ${usd.what}, but its ${h} worker's model is not set (workers.${h}.model), so Polly cannot price it: set workers.${h}.model and prices.<that model> in .polly/config.yaml, or give the task a tokens budget instead`,
        );
      } else if (!config.prices || !Object.hasOwn(config.prices, model)) {
        out.push(
          `task ${t.key} has ${usd.what}, but model ${model} (${h}) has no price: add prices.${model}: {input: N, output: N} (USD per million tokens) to .polly/config.yaml, or give the task a tokens budget instead`,
        );
      }
    }
  }
  return out;
}

/**
 * The budgets of a plan that Polly could not enforce: a tokens or USD limit (the task's own, the
 * per-task or the per-goal one) on a worker whose model requests the metering proxy cannot count
 * (workers/metering/turn-meter.ts `unmeteredReason`: pi on a built-in provider, codex signed in
 * with a ChatGPT account). One sentence per such worker, naming the config that makes it
 * meterable; empty when every budgeted worker is metered.
 * @param env  where the workers' keys come from (the Brain's environment).
 */
export function unmeteredBudgets(
  tasks: ReadonlyArray<{ key: string; worker: Harness; reviewer?: Harness | null; budget?: Budget | null }>,
  resolved: ResolvedBudgets,
  config: { workers: { codex: { provider?: { base_url: string } | null }; pi: { base_url?: string | null } } },
  env: Record<string, string | undefined>,
): string[] {
  const out: string[] = [];
  const any = (b: Budget | null | undefined): boolean => typeof b?.tokens === 'number' || typeof b?.usd === 'number';
  for (const t of tasks) {
    const own = taskBudget(t.budget, resolved);
    const what = any(own) ? `a budget of ${formatBudget(own!)}` : any(resolved.perGoal) ? `the goal's budget of ${formatBudget(resolved.perGoal!)}` : null;
    if (!what) continue;
    const harnesses = [t.worker, ...(t.reviewer && t.reviewer !== t.worker ? [t.reviewer] : [])];
    for (const h of harnesses) {
      const why = unmeteredReason(h, config.workers, env);
      if (why) out.push(`task ${t.key} has ${what}, but ${why}; or drop the budget`);
    }
  }
  return out;
}

/** A budget as a plan file writes it: `{tokens: 40000, usd: 1.5}`, or `null` for no limit. Pure. */
export function budgetFlow(b: Budget | null): string {
  if (!b) return 'null';
  const parts = [...(typeof b.tokens === 'number' ? [`tokens: ${b.tokens}`] : []), ...(typeof b.usd === 'number' ? [`usd: ${b.usd}`] : [])];
  return `{${parts.join(', ')}}`;
}

/** `limit` with the reached field raised to twice what was spent (rounded up: 1,000 tokens, a cent), for the messages that suggest a budget that lets a task go on. Pure. */
export function raisedBudget(limit: Budget, reach: BudgetReach): Budget {
  const twice = reach.spent * 2;
  return reach.kind === 'tokens' ? { ...limit, tokens: Math.max(1000, Math.ceil(twice / 1000) * 1000) } : { ...limit, usd: Math.max(0.01, Math.ceil(twice * 100) / 100) };
}
