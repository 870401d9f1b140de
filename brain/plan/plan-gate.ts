/**
 * The plan gate: a proposed plan is compiled and model-checked (brain/plan-compiler.ts); an
 * admitted plan waits for a human (`polly plan approve|reject <id>`); an ask expires after
 * `policies.ask_timeout` seconds and then counts as rejected. Nothing of a plan is dispatched
 * for implementation before it is approved.
 *
 * All state lives in the registry's `plans` (PlanRecord) and every change is journaled:
 * `plan.proposed`, `plan.refused`, `plan.approved`, `plan.rejected`, `plan.expired`.
 */
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { admitPlan, planCompilerFingerprint, planShapingConfig, type PlanAdmission } from './plan-compiler.js';
import { validatePlan, type Plan } from './plan-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { PlanRecord, Registry } from '../registry/registry-schema.js';
import { formatStep } from '../../workflows/check/checker.js';
import { resolvePlanBudgets, unmeteredBudgets, unpricedUsdBudgets } from './budgets.js';
import { transitionGoal } from '../registry/goal-lifecycle.js';

export interface ProposeResult {
  planId: string;
  admitted: boolean;
  /** The checker's line for the whole plan. */
  line: string;
  /** For the brain: the violated invariants with their shortest counterexamples, as text. */
  counterexamples: string[];
  /** What to do next, for the model or the human. */
  instruction: string;
  admission: PlanAdmission;
}

/**
 * The plan gate's line on unbounded tasks (issue 29): the implement tasks that declare no `paths`
 * may change any file but the protected paths, and the checker cannot keep them apart from
 * others; null when every implement task declares its paths.
 */
export function unboundedLine(plan: Pick<PlanRecord, 'tasks'>): string | null {
  const keys = plan.tasks.filter((t) => t.purpose === 'implement' && t.paths === undefined).map((t) => t.key);
  if (keys.length === 0) return null;
  return `UNBOUNDED: ${keys.join(', ')} declare${keys.length === 1 ? 's' : ''} no paths: ${keys.length === 1 ? 'it' : 'each'} may change any file but the protected paths, and the checker cannot keep ${keys.length === 1 ? 'it' : 'them'} apart from other tasks.`;
}

/** Render one violation as the text the Brain revises from. */
export function formatViolation(v: PlanAdmission['violations'][number]): string {
  const steps = v.trace.map((s, i) => `  ${i + 1}. ${formatStep(s)}`);
  return [`${v.invariant} (${v.kind})${v.detail ? `: ${v.detail}` : ''}`, ...(steps.length ? steps : ['  (violated in the initial state)'])].join('\n');
}

/**
 * Validate, compile and model-check a plan, and record it: `pending` at the gate when admitted,
 * `refused` otherwise (the brain then revises and proposes again).
 * @param raw  the plan object (`{goal?, tasks: [...]}`) as proposed.
 * @param options.env  where the workers' keys come from (default: this process's environment): a codex worker with no API key there and no provider cannot be metered.
 * @param options.retries  for a retry plan (`polly retry`, brain/plan/plan-retry.ts): task key → the
 *   stopped task it runs again; recorded as `PlanRecord.retries`.
 * @throws PollyError `plan_invalid` for a malformed plan (nothing recorded).
 */
export async function proposePlan(store: RegistryStore, config: PollyConfig, raw: unknown, options: ProposeOptions = {}): Promise<ProposeResult> {
  return proposeValidPlan(store, config, validatePlan(raw, options.source ?? 'plan_propose'), options);
}

/** Where a proposal comes from and what it is for ({@link proposePlan}). */
export interface ProposeOptions {
  goalId?: string | null;
  source?: string;
  now?: () => Date;
  retries?: Record<string, string>;
  /** Where the workers' keys come from (default: this process's environment): a codex worker with no API key there and no provider cannot be metered. */
  env?: Record<string, string | undefined>;
}

/**
 * {@link proposePlan} for a plan already validated (brain/plan/plan-schema.ts `validatePlan`, e.g.
 * `parsePlanFile` of `polly run FILE`, or a retry plan built from validated records): compiled,
 * checked and recorded as it is, never turned back into raw input to be validated again.
 */
export async function proposeValidPlan(store: RegistryStore, config: PollyConfig, valid: Plan, options: ProposeOptions = {}): Promise<ProposeResult> {
  // The record owns its copy: the caller's plan object stays the caller's.
  const plan = structuredClone(valid);
  const now = (options.now ?? (() => new Date()))().toISOString();
  // Reserve the id first so that the compiled workflow names carry it.
  const planId = await store.update((draft) => {
    draft.counters.plan += 1;
    return `p${draft.counters.plan}`;
  });
  const checked = admitPlan(planId, plan, config);
  // A USD budget Polly cannot price (no config `prices` entry for the worker's model) is refused here, naming the key to add.
  const budgets = resolvePlanBudgets(config, plan.budgets);
  const unpriced = unpricedUsdBudgets(plan.tasks, budgets, config);
  // A budget on a worker Polly cannot meter (pi on a built-in provider, codex on a ChatGPT login) would never hold: refused, naming the config that meters it.
  const unmetered = unmeteredBudgets(plan.tasks, budgets, config, options.env ?? process.env);
  const admission: typeof checked =
    unpriced.length === 0 && unmetered.length === 0
      ? checked
      : {
          ...checked,
          admitted: false,
          line: `REFUSED: ${planId}`,
          violations: [
            ...checked.violations,
            ...unpriced.map((detail) => ({ part: 'plan', invariant: 'usd_budget_priced', kind: 'unpriced-budget', trace: [], detail })),
            ...unmetered.map((detail) => ({ part: 'plan', invariant: 'budget_metered', kind: 'unmetered-budget', trace: [], detail })),
          ],
        };
  const counterexamples = admission.violations.map(formatViolation);
  await store.update((draft, tx) => {
    const goalId = options.goalId ?? null;
    const record: PlanRecord = {
      id: planId,
      goalId,
      createdAt: now,
      tasks: plan.tasks,
      admission: {
        admitted: admission.admitted,
        line: admission.line,
        violations: admission.violations.map((v) => v.invariant),
        pathsExplored: admission.pathsExplored,
        statesSeen: admission.statesSeen,
        ...(admission.admitted
          ? {
              workflows: admission.parts.map(({ workflow, key, result }) => ({
                name: workflow.name,
                key,
                admitted: result.admitted,
                line: result.line,
                pathsExplored: result.pathsExplored,
                statesSeen: result.statesSeen,
                terminalStates: result.terminalStates,
                exhaustive: result.exhaustive,
                elapsedMs: result.elapsedMs,
              })),
              compiler: planCompilerFingerprint(),
            }
          : {}),
      },
      gate: admission.admitted ? 'pending' : 'refused',
      askedAt: admission.admitted ? now : null,
      decidedAt: admission.admitted ? null : now,
      decidedBy: admission.admitted ? null : 'checker',
    };
    record.batches = plan.batches;
    record.admittedWith = planShapingConfig(config);
    record.budgets = resolvePlanBudgets(config, plan.budgets);
    if (options.retries) record.retries = { ...options.retries };
    if (!admission.admitted) {
      record.counterexamples = counterexamples;
      record.counterexampleTraces = structuredClone(admission.violations);
    }
    draft.plans[planId] = record;
    const goal = goalId ? draft.goals[goalId] : undefined;
    if (goal) {
      goal.planIds.push(planId);
      if (admission.admitted) transitionGoal(goal, 'waiting_approval');
    }
    tx.emit(admission.admitted ? 'plan.proposed' : 'plan.refused', {
      planId,
      goalId,
      line: admission.line,
      violations: admission.violations.map((v) => v.invariant),
      tasks: plan.tasks.map((t) => t.key),
    });
  });
  const instruction = admission.admitted
    ? `Plan ${planId} is admitted and waits at the plan gate for a human (polly plan approve ${planId}). Nothing is dispatched for implementation before approval. Wait for the inbox (sys_read_inbox) to tell you it was approved, rejected or expired.`
    : `Plan ${planId} is REFUSED: it violates ${admission.violations.map((v) => v.invariant).join(', ')}. Read each counterexample (the shortest path to the violation), change the plan so that path cannot happen (e.g. pick a reviewer of another vendor, split a batch), and call plan_propose again.`;
  return { planId, admitted: admission.admitted, line: admission.line, counterexamples, instruction, admission };
}

function expired(plan: PlanRecord, config: PollyConfig, now: Date): boolean {
  return plan.gate === 'pending' && plan.askedAt !== null && now.getTime() - Date.parse(plan.askedAt) > config.policies.ask_timeout * 1000;
}

/**
 * Expire every pending ask older than `ask_timeout` (an expired ask counts as rejected).
 * @returns the ids of plans that expired now.
 */
export async function expirePlanAsks(store: RegistryStore, config: PollyConfig, now: Date = new Date()): Promise<string[]> {
  const current = await store.read();
  if (!Object.values(current.plans).some((p) => expired(p, config, now))) return [];
  return store.update((draft, tx) => {
    const out: string[] = [];
    for (const plan of Object.values(draft.plans)) {
      if (!expired(plan, config, now)) continue;
      plan.gate = 'expired';
      plan.decidedAt = now.toISOString();
      plan.decidedBy = 'ask_timeout';
      tx.emit('plan.expired', { planId: plan.id, goalId: plan.goalId, askTimeout: config.policies.ask_timeout });
      out.push(plan.id);
    }
    return out;
  });
}

function requirePlan(reg: Registry, id: string): PlanRecord {
  const plan = reg.plans[id];
  if (!plan) {
    const known = Object.keys(reg.plans);
    throw new PollyError('not_found', `no plan "${id}"${known.length ? `; known plans: ${known.join(', ')}` : ' (no plans yet)'}. Run "polly plan list".`, {
      details: { planId: id },
    });
  }
  return plan;
}

/**
 * Decide a pending plan at the gate.
 * @throws PollyError `not_found` (unknown id), `conflict` (the plan is not pending: refused,
 *   already decided, or expired — the message says which and when).
 */
export async function decidePlan(
  store: RegistryStore,
  config: PollyConfig,
  id: string,
  decision: 'approve' | 'reject',
  options: { by?: string; now?: Date } = {},
): Promise<PlanRecord> {
  const now = options.now ?? new Date();
  await expirePlanAsks(store, config, now);
  return store.update((draft, tx) => {
    const plan = requirePlan(draft, id);
    if (plan.gate !== 'pending') {
      const why =
        plan.gate === 'refused'
          ? 'it was REFUSED by the checker and cannot be approved; the Brain must propose a revised plan'
          : plan.gate === 'expired'
            ? `its ask expired at ${new Date(Date.parse(plan.askedAt ?? plan.createdAt) + config.policies.ask_timeout * 1000).toISOString()} (ask_timeout ${config.policies.ask_timeout}s) and counts as rejected; propose it again`
            : `it was already ${plan.gate} at ${plan.decidedAt ?? '?'} by ${plan.decidedBy ?? '?'}`;
      throw new PollyError('conflict', `plan ${id} is not waiting for approval: ${why}.`, { details: { planId: id, gate: plan.gate } });
    }
    plan.gate = decision === 'approve' ? 'approved' : 'rejected';
    plan.decidedAt = now.toISOString();
    plan.decidedBy = options.by ?? 'human';
    const goal = plan.goalId ? draft.goals[plan.goalId] : undefined;
    if (goal && decision === 'approve') transitionGoal(goal, 'running');
    tx.emit(decision === 'approve' ? 'plan.approved' : 'plan.rejected', { planId: id, goalId: plan.goalId, by: plan.decidedBy });
    return structuredClone(plan);
  });
}
