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
 *   every task (waiting → dispatching → running → done | failed, or skipped as failed), with turns (TURN_START … TURN_END),
 *   dependencies, at most `max_dispatches_per_turn` single dispatches per turn, and pinned
 *   `batch`es dispatched together in one step — so a plan that pins six tasks into one batch is
 *   refused by `at-most-5-dispatches-per-turn`. The Brain runs it on the runtime
 *   (brain/process/plan-schedule.ts), so the bound, dependencies and batches checked here are the
 *   ones the dispatches obey;
 * - the task workflows take their bounds (attempts, review rounds, fix rounds after ready, the
 *   acceptance lease) from the config ({@link taskBounds}) before admission;
 * - two implement tasks whose declared `paths` may overlap (workers/git/path-globs.ts, a sound
 *   over-approximation) get a schedule invariant that they are never dispatched or running at the
 *   same time ({@link pathOverlapInvariant}): a plan that lets them run in parallel is refused with
 *   the shortest schedule that does, and the detail names the two tasks and a shared path; ordered
 *   by `depends_on` (directly or through other tasks) it is admitted, and the schedule the Brain
 *   runs is the one checked. A task without `paths` is unbounded and not part of this check.
 *
 * Checking the parts separately is sound here because the task workflows share no variables with
 * each other and the schedule only counts their dispatches; it keeps admission linear in the
 * number of tasks instead of exponential.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { admissionKey, checkerFingerprint } from '../../workflows/check/admission-cache.js';
import { checkWorkflow, type CheckResult, type Violation } from '../../workflows/check/checker.js';
import { withPollyGuarantees } from '../../workflows/check/guarantees.js';
import { loadWorkflow } from '../../workflows/load-workflow.js';
import { validateWorkflow } from '../../workflows/workflow-format.js';
import type { InvariantDecl, Workflow } from '../../workflows/workflow-schema.js';
import { globSetsMayOverlap, type GlobOverlap } from '../../workers/git/path-globs.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { builtinWorkflowsDir } from '../core/install-paths.js';
import { reviewerFor } from './plan-agents.js';
import type { Plan } from './plan-schema.js';
import type { PlanShapingConfig } from '../registry/registry-schema.js';

/** One compiled part of a plan and its verdict. */
export interface CompiledPart {
  /** `schedule` or a task key. */
  part: string;
  /** The workflow as checked (Polly's guarantees added). */
  workflow: Workflow;
  /** Its content hash (`admissionKey`), recorded on the plan so a Brain need not check it again. */
  key: string;
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

let compilerPrint: string | null = null;

/**
 * The fingerprint of what turns a plan into checked workflows: sha256 (hex) over the checker's own
 * fingerprint (workflows/check/admission-cache.ts), this compiler module's code and the built-in
 * `polly-task` workflow it specialises; read once per process. Recorded on a plan at admission
 * (`AdmissionRecord.compiler`), so a Brain of another Polly version can say why a hash changed.
 */
export function planCompilerFingerprint(): string {
  compilerPrint ??= createHash('sha256')
    .update(checkerFingerprint())
    .update('\0')
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update('\0')
    .update(readFileSync(join(builtinWorkflowDir('polly-task'), 'workflow.yaml')))
    .digest('hex');
  return compilerPrint;
}

let pollyTaskCache: Workflow | null = null;
function pollyTask(): Workflow {
  pollyTaskCache ??= loadWorkflow(builtinWorkflowDir('polly-task'));
  return pollyTaskCache;
}

/**
 * The bounds from config (and the plan) that shape a task's workflow: they go into the model
 * before admission, so the checker proves termination with the bounds the run obeys.
 */
export interface TaskBounds {
  /** Worker attempts before the task fails: the first plus fix rounds on red acceptance (config `acceptance.max_attempts`, 1-20). */
  maxAttempts: number;
  /** Review rounds with blocking findings sent back to the implementer before the task fails (config `review.max_rounds`, 0-20). */
  reviewRounds: number;
  /** Seconds the `run_acceptance` order is leased: every command's timeout (config `acceptance.timeout`) plus 60 s of slack. */
  acceptanceLeaseSeconds: number;
  /** Fix rounds after the PR is ready before the task is parked (config `pr.max_fix_rounds`, 0-10, default {@link DEFAULT_MAX_FIX_ROUNDS}). */
  fixRounds: number;
  /**
   * Re-offers of an implement turn whose remote host was lost (workflow variable `host_losses`,
   * docs/hosts.md): each re-offer is one more dispatch, so it is what the dispatch bound of a turn
   * (`policies.spawn_bounds.max_dispatches_per_turn`) leaves after the first dispatch and the
   * reviews (`review.max_rounds` + 1), at most {@link MAX_HOST_REOFFERS}; 0: a lost host fails the task.
   */
  hostReoffers: number;
}

/** The most re-offers after lost hosts a task gets (the built-in polly-task's `host_losses` max). */
export const MAX_HOST_REOFFERS = 2;

/** Config `pr.max_fix_rounds` when a plan record predates it. */
export const DEFAULT_MAX_FIX_ROUNDS = 3;

/** The config keys that shape a plan's workflows (`pr` is optional: plan records admitted before it existed). */
export type PlanShapingInput = Pick<PollyConfig, 'policies' | 'review' | 'acceptance'> & Partial<Pick<PollyConfig, 'pr'>>;

/** The part of `config` that shapes a plan's workflows, as stored on the plan record at admission (`PlanRecord.admittedWith`). */
export function planShapingConfig(config: PlanShapingInput): PlanShapingConfig {
  return {
    maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn,
    acceptance: structuredClone(config.acceptance),
    review: structuredClone(config.review),
    pr: { max_fix_rounds: config.pr?.max_fix_rounds ?? DEFAULT_MAX_FIX_ROUNDS },
  };
}

/** The bounds of one plan task under `config` (its acceptance commands, else the config's default commands). */
export function taskBounds(
  config: Pick<PollyConfig, 'acceptance' | 'review'> & { pr?: { max_fix_rounds: number }; policies?: Pick<PollyConfig['policies'], 'spawn_bounds'>; maxDispatchesPerTurn?: number },
  task: Pick<Plan['tasks'][number], 'acceptance'>,
): TaskBounds {
  const commands = task.acceptance.commands.length > 0 ? task.acceptance.commands.length : Math.max(config.acceptance.commands.length, 1);
  const dispatches = config.maxDispatchesPerTurn ?? config.policies?.spawn_bounds.max_dispatches_per_turn ?? 5;
  return {
    maxAttempts: config.acceptance.max_attempts,
    reviewRounds: config.review.max_rounds,
    acceptanceLeaseSeconds: commands * config.acceptance.timeout + 60,
    fixRounds: config.pr?.max_fix_rounds ?? DEFAULT_MAX_FIX_ROUNDS,
    // The first dispatch and review.max_rounds + 1 review dispatches come first within the bound.
    hostReoffers: Math.max(0, Math.min(MAX_HOST_REOFFERS, dispatches - 2 - config.review.max_rounds)),
  };
}

/**
 * The polly-task workflow specialised to one task of a plan: START's vendor is the plan's worker,
 * PR_OPENED's reviewer is the plan's reviewer, no guard hides a same-vendor review, and the
 * attempt / review-round / fix-round counters and the acceptance lease take `bounds` (see
 * {@link TaskBounds}): every `fix_rounds < N` guard of the post-PR states gets N = `bounds.fixRounds`.
 * @throws PollyError `internal` if the built-in polly-task no longer has the shape this relies on.
 */
/**
 * The reviewer a task's workflow is compiled with: {@link reviewerFor} (brain/plan/plan-agents.ts),
 * else the worker itself, so that a task nobody can review is refused at admission by
 * `reviewer-vendor-differs` with a counterexample rather than compiled without a review. Pure.
 */
export function compiledReviewer(task: Pick<Plan['tasks'][number], 'worker' | 'reviewer'>, pairs: PlanShapingConfig['review']['pairs']): string {
  return reviewerFor(task, pairs) ?? task.worker;
}

export function compileTaskWorkflow(planId: string, task: Plan['tasks'][number], fallbackReviewer: string, bounds: TaskBounds): Workflow {
  const base = structuredClone(pollyTask());
  const reviewer = task.reviewer ?? fallbackReviewer;
  const start = base.actions.find((a) => a.name === 'START');
  const opened = base.actions.find((a) => a.name === 'PR_OPENED');
  const vendorField = start?.data.find((d) => d.name === 'vendor');
  const reviewerField = opened?.data.find((d) => d.name === 'reviewer');
  const attempts = base.variables.find((v) => v.name === 'attempts');
  const rounds = base.variables.find((v) => v.name === 'rounds');
  const fixRounds = base.variables.find((v) => v.name === 'fix_rounds');
  const redRetry = base.transitions.find((t) => t.action === 'TESTS_RED' && t.from.includes('testing') && t.when !== null);
  const blockingRetry = base.transitions.find((t) => t.action === 'REVIEW_BLOCKING' && t.from.includes('reviewing') && t.when !== null);
  // Every guard that bounds the fix rounds, alone or beside another condition (FEEDBACK's author).
  const fixGuards = base.transitions.filter((t) => t.when !== null && /\bfix_rounds < \d+\b/.test(t.when));
  const hostLosses = base.variables.find((v) => v.name === 'host_losses');
  const hostGuards = base.transitions.filter((t) => t.when !== null && /^host_losses < \d+$/.test(t.when));
  const acceptance = base.effects.find((e) => e.kind === 'run_acceptance');
  if (
    vendorField?.type !== 'enum' ||
    !reviewerField ||
    reviewerField.type !== 'enum' ||
    attempts?.type !== 'int' ||
    rounds?.type !== 'int' ||
    fixRounds?.type !== 'int' ||
    fixGuards.length === 0 ||
    hostLosses?.type !== 'int' ||
    hostGuards.length === 0 ||
    !redRetry ||
    !blockingRetry ||
    !acceptance
  ) {
    throw new PollyError(
      'internal',
      'the built-in polly-task workflow changed: it needs START.vendor and PR_OPENED.reviewer enum data, int variables attempts, rounds, fix_rounds and host_losses, guarded TESTS_RED and REVIEW_BLOCKING retries, fix_rounds and host_losses guards and a run_acceptance effect',
    );
  }
  vendorField.values = [task.worker];
  reviewerField.values = [reviewer];
  for (const t of base.transitions) if (t.action === 'PR_OPENED') t.when = null;
  // attempts counts fix rounds (attempts after the first); rounds counts blocking reviews sent back.
  attempts.max = Math.max(bounds.maxAttempts - 1, 0);
  redRetry.when = `attempts < ${bounds.maxAttempts - 1}`;
  rounds.max = Math.max(bounds.reviewRounds, 0);
  blockingRetry.when = `rounds < ${bounds.reviewRounds}`;
  fixRounds.max = Math.max(bounds.fixRounds, 0);
  for (const t of fixGuards) t.when = t.when!.replace(/\bfix_rounds < \d+\b/g, `fix_rounds < ${bounds.fixRounds}`);
  // Re-offers after a lost host: within what the dispatch bound leaves (checked like the rest).
  hostLosses.max = Math.max(bounds.hostReoffers, 0);
  for (const t of hostGuards) t.when = `host_losses < ${bounds.hostReoffers}`;
  acceptance.retry = { ...acceptance.retry, lease_seconds: bounds.acceptanceLeaseSeconds };
  base.name = planTaskWorkflowName(planId, task.key);
  base.file = `plan:${planId}/${task.key}`;
  base.positions = {};
  return base;
}

/** The workflow name of a plan task's run: `plan-<planId>-<key>`, lowercased. */
export function planTaskWorkflowName(planId: string, key: string): string {
  return `plan-${planId}-${key}`.toLowerCase();
}

/** The workflow name of a plan's schedule run: `plan-<planId>`, lowercased. */
export function planScheduleWorkflowName(planId: string): string {
  return `plan-${planId}`.toLowerCase();
}

/** The schedule workflow's variable (and action suffix) for the plan's `i`-th task: `t0`, `t1`, … */
export function scheduleTaskVar(i: number): string {
  return `t${i}`;
}

/** The values of a schedule task variable, in order (see {@link compileScheduleWorkflow}). */
export const SCHEDULE_TASK_STATES = ['waiting', 'dispatching', 'running', 'done', 'failed'] as const;

/** The effect tool a schedule hands out per dispatch: start the task (its run or its read-only turn). */
export const DISPATCH_TASK_TOOL = 'dispatch_task';

/** The globs a task may change: its `paths` and its declared `protected_paths`; null for an unbounded (no `paths`) or read-only task. */
export function taskFootprint(task: Pick<Plan['tasks'][number], 'purpose' | 'paths' | 'protectedPaths'>): string[] | null {
  if (task.purpose !== 'implement' || task.paths === undefined) return null;
  return [...task.paths, ...(task.protectedPaths ?? [])];
}

/** Two tasks of a plan whose declared paths may overlap, by key, and where (a witness path when one was found). */
export interface PathOverlap {
  a: string;
  b: string;
  overlap: GlobOverlap;
}

/** Every pair of the plan's tasks (in plan order) whose footprints ({@link taskFootprint}) may overlap. Pure. */
export function pathOverlaps(tasks: Plan['tasks']): PathOverlap[] {
  const out: PathOverlap[] = [];
  const prints = tasks.map(taskFootprint);
  for (let i = 0; i < tasks.length; i++) {
    for (let j = i + 1; j < tasks.length; j++) {
      const [fi, fj] = [prints[i], prints[j]];
      if (!fi || !fj) continue;
      const overlap = globSetsMayOverlap(fi, fj);
      if (overlap) out.push({ a: tasks[i]!.key, b: tasks[j]!.key, overlap });
    }
  }
  return out;
}

/** The name of the schedule invariant for two tasks with overlapping paths: `overlapping-paths-in-order/A+B`. */
export function pathOverlapInvariantName(a: string, b: string): string {
  return `overlapping-paths-in-order/${a}+${b}`;
}

/**
 * The schedule invariant of two tasks (indexes `i`, `j`) whose paths may overlap: never a
 * dispatch of either while both are dispatching or running (state after the step).
 */
export function pathOverlapInvariant(o: PathOverlap, i: number, j: number): InvariantDecl {
  const vi = scheduleTaskVar(i);
  const vj = scheduleTaskVar(j);
  return {
    name: pathOverlapInvariantName(o.a, o.b),
    pattern: 'never',
    event: { names: [`dispatch_${vi}`, `dispatch_${vj}`], tools: [], when: `${vi} in ["dispatching", "running"] && ${vj} in ["dispatching", "running"]` },
    scope: { kind: 'global' },
  };
}

/** The explanation of a refused {@link pathOverlapInvariant}, for the Brain and the human: the two tasks, a shared path, the fix. */
export function pathOverlapDetail(o: PathOverlap): string {
  const where = o.overlap.witness
    ? `may both change ${o.overlap.witness}`
    : `may both change paths ${o.overlap.region ? `starting with ${o.overlap.region}` : 'anywhere in the repository'} (Polly cannot show the globs disjoint, so it counts them as overlapping)`;
  return `tasks ${o.a} and ${o.b} ${where} — ${o.a}: ${o.overlap.a}; ${o.b}: ${o.overlap.b} — and can run at the same time. Order them (depends_on: [${o.a}] on ${o.b}) or give them disjoint paths.`;
}

/**
 * The plan's schedule as a workflow, run by the Brain on the runtime (one run per approved plan,
 * input `{plan}`). It starts at the plan gate (state `gate`): APPROVED is the gate's approval,
 * whoever gave it — the terminal, the dashboard, `polly plan approve`, `--yes`, or a maintainer's
 * `/polly approve` comment on the goal's issue (issue 30): one action, the front end is only its
 * payload (`by`) — and REJECTED / EXPIRED close the run; the {@link PLAN_APPROVAL_INVARIANT}
 * (no `dispatch_task` effect before APPROVED) is checked on every path. Then the Brain signals
 * TURN_START, then the dispatches of the turn (DISPATCH_tN or
 * DISPATCH_BATCH_B), then TURN_END; each dispatch emits a `dispatch_tN` order (tool
 * `dispatch_task`) whose completion STARTED_tN / FAIL_tN says whether the task started; the
 * task's end comes back as the signal DONE_tN or FAIL_tN; SKIP_tN settles a task whose
 * dependency failed or was skipped; FINISH ends the run once every task has settled.
 *
 * Per task variable `tN` (N = index in `plan.tasks`): waiting → dispatching → running → done |
 * failed, or waiting → failed by SKIP_tN (a skipped task blocks its dependants as a failed one
 * does; one value for both keeps the state space at 5 values per task). `dispatched` counts this turn's dispatches (at most `maxPerTurn`
 * single dispatches; a pinned batch dispatches alone as its turn's first step). Tasks whose
 * declared paths may overlap get a {@link pathOverlapInvariant} each.
 * @throws PollyError `internal` if the generated workflow does not validate (a bug).
 */
export function compileScheduleWorkflow(planId: string, plan: Pick<Plan, 'tasks' | 'batches'>, maxPerTurn: number): Workflow {
  const tasks = plan.tasks;
  const ident = scheduleTaskVar;
  const index = new Map(tasks.map((t, i) => [t.key, i]));
  const variables: Record<string, unknown> = {
    dispatched: { type: 'int', min: 0, max: Math.max(tasks.length, 1), initial: 0 },
  };
  // The plan gate: one approval action whatever front end gave it (its `by` is payload, journaled).
  const actions: Record<string, unknown> = { APPROVED: { extra: 'payload' }, REJECTED: { extra: 'payload' }, EXPIRED: {}, TURN_START: {}, TURN_END: {}, FINISH: {} };
  const effects: Record<string, unknown> = {};
  const transitions: unknown[] = [
    { action: 'APPROVED', from: 'gate', to: 'idle' },
    { action: 'REJECTED', from: 'gate', to: 'closed' },
    { action: 'EXPIRED', from: 'gate', to: 'closed' },
  ];
  const depsDone = (i: number): string[] => tasks[i]!.dependsOn.map((d) => `${ident(index.get(d)!)} == "done"`);
  const ready = (i: number): string => [`${ident(i)} == "waiting"`, ...depsDone(i)].join(' && ');
  const pinned = new Set(Object.keys(plan.batches));

  tasks.forEach((t, i) => {
    const v = ident(i);
    variables[v] = { type: 'enum', values: [...SCHEDULE_TASK_STATES], initial: 'waiting' };
    actions[`STARTED_${v}`] = {};
    actions[`DONE_${v}`] = {};
    actions[`FAIL_${v}`] = {};
    actions[`SKIP_${v}`] = {};
    effects[`dispatch_${v}`] = {
      tool: DISPATCH_TASK_TOOL,
      on_ok: `STARTED_${v}`,
      on_failure: `FAIL_${v}`,
      on_exhausted: `FAIL_${v}`,
      retry: { max_attempts: 1, backoff_seconds: 0, lease_seconds: 300 },
    };
    if (!pinned.has(t.key)) {
      actions[`DISPATCH_${v}`] = {};
      transitions.push({
        action: `DISPATCH_${v}`,
        from: 'turn',
        when: `${ready(i)} && dispatched < ${maxPerTurn}`,
        set: { [v]: 'dispatching', dispatched: 'dispatched + 1' },
        emit: [`dispatch_${v}`],
      });
    }
    transitions.push({ action: `STARTED_${v}`, from: ['idle', 'turn'], when: `${v} == "dispatching"`, set: { [v]: 'running' } });
    transitions.push({ action: `DONE_${v}`, from: ['idle', 'turn'], when: `${v} == "running"`, set: { [v]: 'done' } });
    transitions.push({ action: `FAIL_${v}`, from: ['idle', 'turn'], when: `${v} in ["dispatching", "running"]`, set: { [v]: 'failed' } });
    if (t.dependsOn.length > 0) {
      const blocked = t.dependsOn.map((d) => `${ident(index.get(d)!)} == "failed"`).join(' || ');
      transitions.push({ action: `SKIP_${v}`, from: ['idle', 'turn'], when: `${v} == "waiting" && (${blocked})`, set: { [v]: 'failed' } });
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
    for (const i of members) set[ident(i)] = 'dispatching';
    transitions.push({
      action: `DISPATCH_BATCH_${b}`,
      from: 'turn',
      when: `dispatched == 0 && ${members.map(ready).join(' && ')}`,
      set,
      emit: members.map((i) => `dispatch_${ident(i)}`),
    });
  }

  const dispatchable = tasks.map((_t, i) => `(${ready(i)})`).join(' || ');
  const allSettled = tasks.map((_t, i) => `${ident(i)} in ["done", "failed"]`).join(' && ');
  transitions.push({ action: 'TURN_START', from: 'idle', to: 'turn', when: dispatchable });
  transitions.push({ action: 'TURN_END', from: 'turn', to: 'idle', when: 'dispatched > 0', set: { dispatched: 0 } });
  transitions.push({ action: 'FINISH', from: 'idle', to: 'finished', when: allSettled });

  const raw = {
    name: planScheduleWorkflowName(planId),
    description: `Schedule of plan ${planId}: dispatch order, dependencies and turns.`,
    input: { plan: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$' } },
    key: 'plan:{plan}',
    states: ['gate', 'idle', 'turn', 'finished', 'closed'],
    initial: 'gate',
    terminal: ['finished', 'closed'],
    variables,
    actions,
    effects,
    transitions,
    invariants: [],
    polly: { turn: { start: ['TURN_START'], end: ['TURN_END'] }, tasks: [] },
  };
  const wf = validateWorkflow(raw, { file: `plan:${planId}/schedule` });
  wf.invariants.push(planApprovalInvariant());
  for (const o of pathOverlaps(tasks)) wf.invariants.push(pathOverlapInvariant(o, index.get(o.a)!, index.get(o.b)!));
  return wf;
}

/** The name of {@link planApprovalInvariant}. */
export const PLAN_APPROVAL_INVARIANT = 'dispatch-only-after-plan-approval';

/**
 * No plan task is dispatched before the plan gate's approval: every `dispatch_task` effect of the
 * schedule is preceded by APPROVED (issue 30: an approval by a maintainer's comment on the issue is
 * this same action, so no front end has a path around it).
 */
export function planApprovalInvariant(): InvariantDecl {
  return {
    name: PLAN_APPROVAL_INVARIANT,
    pattern: 'requires_before',
    event: { names: [], tools: [DISPATCH_TASK_TOOL], when: null },
    requires: [{ names: ['APPROVED'], tools: [], when: null }],
    reset_by: null,
    scope: { kind: 'global' },
  };
}

/**
 * Compile `plan` and model-check every part with Polly's guarantees.
 * @param planId  the plan's id (names the workflows, e.g. `plan-p1-t1`).
 * @returns the admission verdict; refused plans carry every violation with its shortest trace.
 */
export function admitPlan(planId: string, plan: Plan, config: PlanShapingInput): PlanAdmission {
  const policy = { maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn };
  const parts: CompiledPart[] = [];
  const schedule = withPollyGuarantees(compileScheduleWorkflow(planId, plan, policy.maxDispatchesPerTurn), policy);
  parts.push({ part: 'schedule', workflow: schedule, key: admissionKey(schedule), result: checkWorkflow(schedule) });
  for (const task of plan.tasks) {
    if (task.purpose !== 'implement') continue;
    const wf = withPollyGuarantees(compileTaskWorkflow(planId, task, compiledReviewer(task, config.review.pairs), taskBounds(config, task)), policy);
    parts.push({ part: task.key, workflow: wf, key: admissionKey(wf), result: checkWorkflow(wf) });
  }
  const pathsExplored = parts.reduce((n, p) => n + p.result.pathsExplored, 0);
  const statesSeen = parts.reduce((n, p) => n + p.result.statesSeen, 0);
  const details = new Map(pathOverlaps(plan.tasks).map((o) => [pathOverlapInvariantName(o.a, o.b), pathOverlapDetail(o)]));
  const violations = parts.flatMap((p) =>
    p.result.violations.map((v) => {
      const detail = p.part === 'schedule' ? details.get(v.invariant) : undefined;
      return { ...v, ...(detail ? { detail } : {}), part: p.part, invariant: `${p.part}/${v.invariant}` };
    }),
  );
  const admitted = parts.every((p) => p.result.admitted);
  const name = planScheduleWorkflowName(planId);
  const line = admitted ? `admitted: ${name} — paths explored: ${pathsExplored} · states seen: ${statesSeen} · exhaustive within declared domains` : `REFUSED: ${name}`;
  return { admitted, line, pathsExplored, statesSeen, violations, parts };
}
