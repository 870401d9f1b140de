/**
 * Restart and resume: what a start does with what a stopped or crashed Brain left.
 *
 * - {@link reconcileDeadBrain}: a `brain` row whose pid is gone is cleared (journal
 *   `brain.reaped`) at every start of a command, before anything is shown, so `polly status` never
 *   shows a dead Brain as running. Worker rows are the next Brain's to reconcile (it adopts live
 *   runners and reads the results of finished ones; workers/supervisor/worker-supervisor.ts).
 * - {@link matchPlanFile}: `polly run` recognises a plan file it has run before by its content
 *   (every key that changes what runs), and re-attaches instead of proposing it again (which would
 *   open a second PR per task); the same tasks with other content are a new plan once the old one
 *   has settled, and refused naming the difference while it runs.
 * - {@link resumablePlans}: the approved plans with unfinished tasks, for `polly resume`.
 * - {@link prWaitingPlans} / {@link askForPrs}: the approved plans whose ready PRs have events that
 *   another goal's Brain left waiting (brain/process/pr-events.ts), and the ask that makes the
 *   next Brain pass act on them: `polly resume` runs their fix rounds to the end.
 */
import { createHash } from 'node:crypto';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { FINAL_GOAL_STATUSES, FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { transitionGoal } from '../registry/goal-lifecycle.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { planTaskId } from '../registry/task-record.js';
import type { PlanRecord, PlanTaskSpec, Registry } from '../registry/registry-schema.js';
import type { ResolvedBudgets } from '../plan/budgets.js';

/**
 * Clear the `brain` row when its process is gone.
 * @returns the dead Brain's pid, or null when the row was empty or its Brain lives.
 * @throws PollyError from the store (`registry_corrupt`, `lock_timeout`).
 */
export async function reconcileDeadBrain(store: Pick<RegistryStore, 'read' | 'update'>): Promise<number | null> {
  const reg = await store.read();
  if (!reg.brain || pidAlive(reg.brain.pid)) return null;
  return store.update((draft, tx) => {
    const row = draft.brain;
    if (!row || pidAlive(row.pid)) return null;
    draft.brain = null;
    tx.emit('brain.reaped', { pid: row.pid, startedAt: row.startedAt, heartbeatAt: row.heartbeatAt });
    return row.pid;
  });
}

/** The fields of a plan task that make up its identity (the old content key: what the human wrote, minus base, model, reviewer, criteria, budgets). */
interface PlanTaskContent {
  key: string;
  title: string;
  purpose: string;
  worker: string;
  prompt: string;
  dependsOn: readonly string[];
  acceptance: { commands: readonly string[] };
}

/** A stable hash (sha256 hex) of a plan's tasks: keys, titles, purposes, workers, prompts, dependencies and acceptance commands, in key order. Pure. */
export function planContentKey(tasks: readonly PlanTaskContent[]): string {
  const canon = [...tasks]
    .sort((a, b) => a.key.localeCompare(b.key))
    .map((t) => [t.key, t.title, t.purpose, t.worker, t.prompt, [...t.dependsOn].sort(), [...t.acceptance.commands]]);
  return createHash('sha256').update(JSON.stringify(canon)).digest('hex');
}

/**
 * A plan file's content as far as it changes what runs: its goal text, its tasks (every field of
 * {@link PlanTaskSpec}), the batches it pins and its budgets resolved against the config
 * (brain/plan/budgets.ts `resolvePlanBudgets`).
 */
export interface PlanFileContent {
  goal: string;
  tasks: readonly PlanTaskSpec[];
  batches: Readonly<Record<string, number>>;
  budgets: ResolvedBudgets;
}

/** One task's fields by name, each as canonical JSON (absent optional fields normalised). Pure. */
function taskFields(t: PlanTaskSpec): Record<string, string> {
  const j = (v: unknown): string => JSON.stringify(v ?? null);
  return {
    title: j(t.title),
    purpose: j(t.purpose),
    worker: j(t.worker),
    model: j(t.model),
    reviewer: j(t.reviewer),
    prompt: j(t.prompt),
    'acceptance.commands': j(t.acceptance.commands),
    'acceptance.criteria': j(t.acceptance.criteria),
    'acceptance.known_red': j(t.acceptance.knownRed ?? []),
    depends_on: j([...t.dependsOn].sort()),
    base: j(t.base),
    budget: t.budget === undefined ? 'unset' : j(t.budget),
    protected_paths: j([...(t.protectedPaths ?? [])].sort()),
    paths: t.paths === undefined ? 'unbounded' : j([...t.paths].sort()),
    stacked_on: j(t.stackedOn),
  };
}

/**
 * Where a plan file's content differs from a recorded plan, as plan-file key paths
 * (`goal`, `budgets`, `tasks.t1.base`, `tasks.t2` when a task was added or removed, …), in a
 * stable order; empty when the file is that plan. Pure.
 */
export function planDifferences(
  record: { tasks: readonly PlanTaskSpec[]; batches?: Record<string, number>; budgets?: ResolvedBudgets },
  goalText: string | null,
  file: PlanFileContent,
): string[] {
  const out: string[] = [];
  if (goalText !== null && goalText !== file.goal) out.push('goal');
  const noLimit: ResolvedBudgets = { perTask: null, perGoal: null };
  if (JSON.stringify(record.budgets ?? noLimit) !== JSON.stringify(file.budgets)) out.push('budgets');
  const old = new Map(record.tasks.map((t) => [t.key, t]));
  const now = new Map(file.tasks.map((t) => [t.key, t]));
  for (const key of [...new Set([...old.keys(), ...now.keys()])].sort()) {
    const a = old.get(key);
    const b = now.get(key);
    if (!a || !b) {
      out.push(`tasks.${key}`);
      continue;
    }
    const fa = taskFields(a);
    const fb = taskFields(b);
    for (const field of Object.keys(fa)) if (fa[field] !== fb[field]) out.push(`tasks.${key}.${field}`);
    if ((record.batches?.[key] ?? null) !== (file.batches[key] ?? null)) out.push(`tasks.${key}.batch`);
  }
  return out;
}

/** What `polly run FILE` finds of a plan file it may have run before (see {@link matchPlanFile}). */
export type PlanFileMatch =
  | { kind: 'new' }
  | { kind: 'same'; plan: PlanRecord }
  /** A live plan with the same tasks whose content differs; `unsettled`: it still runs or waits at the gate. */
  | { kind: 'changed'; plan: PlanRecord; differences: string[]; unsettled: boolean };

/**
 * Match a plan file against the live plans (approved, or pending at the gate; refused, rejected and
 * expired plans do not count). Equal in every key that changes what runs ({@link planDifferences})
 * → `same` (re-attach). The same task keys with other content → `changed`, `unsettled` while that
 * plan waits at the gate, has a task not final, or has a PR still open (a new plan then would run
 * the tasks twice and open a second PR per task). No plan with those task keys → `new`. Pure.
 */
export function matchPlanFile(reg: Registry, file: PlanFileContent): PlanFileMatch {
  const live = Object.values(reg.plans)
    .filter((p) => p.gate === 'approved' || p.gate === 'pending')
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const goalOf = (p: PlanRecord): string | null => (p.goalId ? (reg.goals[p.goalId]?.text ?? null) : null);
  const same = live.find((p) => planDifferences(p, goalOf(p), file).length === 0);
  if (same) return { kind: 'same', plan: same };
  const keys = JSON.stringify(file.tasks.map((t) => t.key).sort());
  const sibling = live.find((p) => JSON.stringify(p.tasks.map((t) => t.key).sort()) === keys);
  if (!sibling) return { kind: 'new' };
  const unsettled =
    sibling.gate === 'pending' ||
    sibling.tasks.some((s) => {
      const t = reg.tasks[planTaskId(sibling, s.key)];
      if (!t) return true;
      if (t.planId !== sibling.id) return false; // a later retry plan took it over
      return !FINAL_TASK_STATUSES.has(t.status) || (t.pr !== null && t.pr !== undefined && ['draft', 'open', 'ready'].includes(t.pr.state));
    });
  return { kind: 'changed', plan: sibling, differences: planDifferences(sibling, goalOf(sibling), file), unsettled };
}

/** Approved plans with at least one task not yet final (or not yet created), oldest first. */
export function resumablePlans(reg: Registry): PlanRecord[] {
  return Object.values(reg.plans)
    .filter(
      (p) =>
        p.gate === 'approved' &&
        p.tasks.some((s) => {
          const t = reg.tasks[planTaskId(p, s.key)];
          // A task a later retry plan took over is that plan's.
          return !t || (t.planId === p.id && !FINAL_TASK_STATUSES.has(t.status));
        }),
    )
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** Approved plans with a ready task whose PR events wait for their own goal's run (`task.prEventsWaiting`), oldest first. Pure. */
export function prWaitingPlans(reg: Registry): PlanRecord[] {
  return Object.values(reg.plans)
    .filter((p) => p.gate === 'approved' && Object.values(reg.tasks).some((t) => t.planId === p.id && t.status === 'ready' && t.prEventsWaiting))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/**
 * Ask that the PR events waiting on `planId`'s ready tasks be acted on: its goal is marked
 * `actOnPrs` (the running Brain, or the next one, takes it as its own) and, when it had finished,
 * opened again (`running`, journal `goal.reopened`), so that `polly resume` follows the fix rounds
 * until the Brain closes the goal again. No-op when nothing waits.
 * @returns whether an ask was recorded.
 */
export async function askForPrs(store: Pick<RegistryStore, 'update'>, planId: string): Promise<boolean> {
  return store.update((draft, tx) => {
    const plan = draft.plans[planId];
    const goal = plan?.goalId ? draft.goals[plan.goalId] : undefined;
    if (!plan || !goal) return false;
    const waiting = Object.values(draft.tasks).filter((t) => t.planId === planId && t.status === 'ready' && t.prEventsWaiting);
    if (waiting.length === 0) return false;
    goal.actOnPrs = true;
    if (FINAL_GOAL_STATUSES.has(goal.status)) {
      transitionGoal(goal, 'running');
      goal.reopenedFor = 'prs';
      tx.emit('goal.reopened', { goalId: goal.id, planId, reason: 'PR events waiting', tasks: waiting.map((t) => t.id) });
    }
    return true;
  });
}
