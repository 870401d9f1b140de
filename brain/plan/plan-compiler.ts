/**
 * The plan gate's compiler: a plan (brain/plan-schema.ts) becomes workflows that the admission
 * checker (workflows/checker.ts) model-checks with Polly's guarantees.
 *
 * A plan compiles to:
 * - one **task workflow** per implement task: the built-in `polly-task` workflow specialised to
 *   the task's vendors (the implementer is the plan's `worker`, the reviewer the plan's
 *   `reviewer`), with the reviewer taken from the plan rather than filtered by a guard — so a plan
 *   that pairs a worker with a reviewer of the same vendor is refused by the
 *   `reviewer-vendor-differs` invariant with a counterexample, instead of silently never reviewing;
 * - one **schedule workflow** for the plan as a whole: Polly's dispatcher as a state machine over
 *   every task (waiting → running → done | failed | skipped), with turns (TURN_START … TURN_END),
 *   dependencies, at most `max_dispatches_per_turn` single dispatches per turn, and pinned
 *   `batch`es dispatched together in one step — so a plan that pins six tasks into one batch is
 *   refused by `at-most-5-dispatches-per-turn`.
 *
 * Checking the parts separately is sound here because the task workflows share no variables with
 * each other and the schedule only counts their dispatches; it keeps admission linear in the
 * number of tasks instead of exponential.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkWorkflow, type CheckResult, type Violation } from '../../workflows/check/checker.js';
import { withPollyGuarantees } from '../../workflows/check/guarantees.js';
import { loadWorkflow } from '../../workflows/load-workflow.js';
import { validateWorkflow } from '../../workflows/workflow-format.js';
import type { Workflow } from '../../workflows/workflow-schema.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { builtinWorkflowsDir } from '../core/install-paths.js';
import type { Plan } from './plan-schema.js';

/** One compiled part of a plan and its verdict. */
export interface CompiledPart {
  /** `schedule` or a task key. */
  part: string;
  workflow: Workflow;
  result: CheckResult;
}

/** The plan gate's verdict on a whole plan. */
export interface PlanAdmission {
  admitted: boolean;
  /** `admitted: plan-ID — paths explored: N · states seen: M · exhaustive within declared domains` or `REFUSED: plan-ID`. */
  line: string;
  pathsExplored: number;
  statesSeen: number;
  /** Violated invariants, each named `<part>/<invariant>` with its shortest counterexample. */
  violations: Array<Violation & { part: string }>;
  parts: CompiledPart[];
}

/** Where the built-in workflow `name` lives (`<package>/workflows/<name>`). */
export function builtinWorkflowDir(name: string): string {
  const dir = join(builtinWorkflowsDir(), name);
  if (existsSync(join(dir, 'workflow.yaml'))) return dir;
  throw new PollyError('internal', `the built-in workflow "${name}" is missing from this installation of Polly (no ${dir}/workflow.yaml). Reinstall Polly.`);
}

let pollyTaskCache: Workflow | null = null;
function pollyTask(): Workflow {
  pollyTaskCache ??= loadWorkflow(builtinWorkflowDir('polly-task'));
  return pollyTaskCache;
}

/**
 * The polly-task workflow specialised to one task of a plan: START's vendor is the plan's worker,
 * PR_OPENED's reviewer is the plan's reviewer, and no guard hides a same-vendor review.
 * @throws PollyError `internal` if the built-in polly-task no longer has the shape this relies on.
 */
export function compileTaskWorkflow(planId: string, task: Plan['tasks'][number], fallbackReviewer: string): Workflow {
  const base = structuredClone(pollyTask());
  const reviewer = task.reviewer ?? fallbackReviewer;
  const start = base.actions.find((a) => a.name === 'START');
  const opened = base.actions.find((a) => a.name === 'PR_OPENED');
  const vendorField = start?.data.find((d) => d.name === 'vendor');
  const reviewerField = opened?.data.find((d) => d.name === 'reviewer');
  if (!vendorField || vendorField.type !== 'enum' || !reviewerField || reviewerField.type !== 'enum') {
    throw new PollyError('internal', 'the built-in polly-task workflow changed: START.vendor and PR_OPENED.reviewer must be enum data fields');
  }
  vendorField.values = [task.worker];
  reviewerField.values = [reviewer];
  for (const t of base.transitions) if (t.action === 'PR_OPENED') t.when = null;
  base.name = `plan-${planId}-${task.key}`.toLowerCase();
  base.file = `plan:${planId}/${task.key}`;
  base.positions = {};
  return base;
}

const ident = (i: number): string => `t${i}`;

/**
 * The plan's schedule as a workflow (see the module comment).
 * @throws PollyError `internal` if the generated workflow does not validate (a bug).
 */
export function compileScheduleWorkflow(planId: string, plan: Plan, maxPerTurn: number): Workflow {
  const tasks = plan.tasks;
  const index = new Map(tasks.map((t, i) => [t.key, i]));
  const variables: Record<string, unknown> = {
    dispatched: { type: 'int', min: 0, max: Math.max(tasks.length, 1), initial: 0 },
  };
  const actions: Record<string, unknown> = { TURN_START: {}, TURN_END: {}, FINISH: {} };
  const effects: Record<string, unknown> = {};
  const transitions: unknown[] = [];
  const depsDone = (i: number): string[] => tasks[i]!.dependsOn.map((d) => `${ident(index.get(d)!)} == "done"`);
  const ready = (i: number): string => [`${ident(i)} == "waiting"`, ...depsDone(i)].join(' && ');
  const pinned = new Set(Object.keys(plan.batches));

  tasks.forEach((t, i) => {
    const v = ident(i);
    variables[v] = { type: 'enum', values: ['waiting', 'running', 'done', 'failed', 'skipped'], initial: 'waiting' };
    actions[`DONE_${v}`] = {};
    actions[`FAIL_${v}`] = {};
    actions[`SKIP_${v}`] = {};
    effects[`dispatch_${v}`] = {
      tool: 'dispatch',
      on_ok: `DONE_${v}`,
      on_failure: `FAIL_${v}`,
      on_exhausted: `FAIL_${v}`,
      retry: { max_attempts: 1, backoff_seconds: 0, lease_seconds: 86400 },
    };
    if (!pinned.has(t.key)) {
      actions[`DISPATCH_${v}`] = {};
      transitions.push({
        action: `DISPATCH_${v}`,
        from: 'turn',
        when: `${ready(i)} && dispatched < ${maxPerTurn}`,
        set: { [v]: 'running', dispatched: 'dispatched + 1' },
        emit: [`dispatch_${v}`],
      });
    }
    transitions.push({ action: `DONE_${v}`, from: ['idle', 'turn'], when: `${v} == "running"`, set: { [v]: 'done' } });
    transitions.push({ action: `FAIL_${v}`, from: ['idle', 'turn'], when: `${v} == "running"`, set: { [v]: 'failed' } });
    if (t.dependsOn.length > 0) {
      const blocked = t.dependsOn.map((d) => `${ident(index.get(d)!)} in ["failed", "skipped"]`).join(' || ');
      transitions.push({ action: `SKIP_${v}`, from: ['idle', 'turn'], when: `${v} == "waiting" && (${blocked})`, set: { [v]: 'skipped' } });
    } else {
      delete actions[`SKIP_${v}`];
    }
  });

  const batches = new Map<number, number[]>();
  tasks.forEach((t, i) => {
    const b = plan.batches[t.key];
    if (b !== undefined) batches.set(b, [...(batches.get(b) ?? []), i]);
  });
  for (const [b, members] of [...batches.entries()].sort((x, y) => x[0] - y[0])) {
    actions[`DISPATCH_BATCH_${b}`] = {};
    const set: Record<string, string> = { dispatched: `dispatched + ${members.length}` };
    for (const i of members) set[ident(i)] = 'running';
    transitions.push({
      action: `DISPATCH_BATCH_${b}`,
      from: 'turn',
      when: `dispatched == 0 && ${members.map(ready).join(' && ')}`,
      set,
      emit: members.map((i) => `dispatch_${ident(i)}`),
    });
  }

  const dispatchable = tasks.map((_t, i) => `(${ready(i)})`).join(' || ');
  const allSettled = tasks.map((_t, i) => `${ident(i)} in ["done", "failed", "skipped"]`).join(' && ');
  transitions.push({ action: 'TURN_START', from: 'idle', to: 'turn', when: dispatchable });
  transitions.push({ action: 'TURN_END', from: 'turn', to: 'idle', when: 'dispatched > 0', set: { dispatched: 0 } });
  transitions.push({ action: 'FINISH', from: 'idle', to: 'finished', when: allSettled });

  const raw = {
    name: `plan-${planId}`.toLowerCase(),
    description: `Schedule of plan ${planId}: dispatch order, dependencies and turns.`,
    states: ['idle', 'turn', 'finished'],
    initial: 'idle',
    terminal: ['finished'],
    variables,
    actions,
    effects,
    transitions,
    invariants: [],
    polly: { turn: { start: ['TURN_START'], end: ['TURN_END'] }, tasks: [] },
  };
  return validateWorkflow(raw, { file: `plan:${planId}/schedule` });
}

/**
 * Compile `plan` and model-check every part with Polly's guarantees.
 * @param planId  the plan's id (names the workflows, e.g. `plan-p1-t1`).
 * @returns the admission verdict; refused plans carry every violation with its shortest trace.
 */
export function admitPlan(planId: string, plan: Plan, config: Pick<PollyConfig, 'policies' | 'review'>): PlanAdmission {
  const policy = { maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn };
  const parts: CompiledPart[] = [];
  const schedule = withPollyGuarantees(compileScheduleWorkflow(planId, plan, policy.maxDispatchesPerTurn), policy);
  parts.push({ part: 'schedule', workflow: schedule, result: checkWorkflow(schedule) });
  for (const task of plan.tasks) {
    if (task.purpose !== 'implement') continue;
    const fallback = config.review.pairs[task.worker]?.[0] ?? task.worker;
    const wf = withPollyGuarantees(compileTaskWorkflow(planId, task, fallback), policy);
    parts.push({ part: task.key, workflow: wf, result: checkWorkflow(wf) });
  }
  const pathsExplored = parts.reduce((n, p) => n + p.result.pathsExplored, 0);
  const statesSeen = parts.reduce((n, p) => n + p.result.statesSeen, 0);
  const violations = parts.flatMap((p) => p.result.violations.map((v) => ({ ...v, part: p.part, invariant: `${p.part}/${v.invariant}` })));
  const admitted = parts.every((p) => p.result.admitted);
  const name = `plan-${planId}`.toLowerCase();
  const line = admitted
    ? `admitted: ${name} — paths explored: ${pathsExplored} · states seen: ${statesSeen} · exhaustive within declared domains`
    : `REFUSED: ${name}`;
  return { admitted, line, pathsExplored, statesSeen, violations, parts };
}
