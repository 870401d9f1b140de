/**
 * The plan's schedule, run on the runtime: each approved plan has one run of its admitted schedule
 * workflow (`plan-<id>`, compiled by brain/plan/plan-compiler.ts `compileScheduleWorkflow`, input
 * `{plan}`), and every dispatch decision of the Brain is a step of that run. So the spawn bound,
 * the dependencies and the batches the checker admitted are the ones enforced: an action the
 * admitted model does not allow is rejected by the runtime (journaled `run.rejected`) and nothing
 * is dispatched.
 *
 * Per loop turn and approved plan, `driveSchedule`:
 * 1. starts (or attaches to) the schedule run, and passes its plan gate with APPROVED (who approved
 *    as payload: the same gate action from every front end);
 * 2. reports each task's end as DONE_tN (ready / merged / done) or FAIL_tN (any other final status);
 * 3. settles dependants of failed or skipped tasks with SKIP_tN (the task is cancelled, saying why;
 *    the model counts a skipped task as failed);
 * 4. opens a turn (TURN_START) when a task is dispatchable and this is the first turn or a task has
 *    settled since the last one; fires every enabled DISPATCH_BATCH_B / DISPATCH_tN in declaration
 *    order (the model stops it at the spawn bound); performs the emitted `dispatch_tN` orders
 *    (tool `dispatch_task`: start the task's own run, or hand a read-only task to the read-only
 *    runner) and reports them (STARTED_tN, or FAIL_tN when the task cannot start); TURN_END;
 * 5. FINISH once every task has settled, then validates the run's journal against the schedule
 *    workflow (workflows/run/trace-validation.ts); a divergence fails the plan's goal.
 *
 * The Brain's choice among enabled actions is deterministic; the model is the bound.
 */
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { RunState } from '../../workflows/run/interpreter.js';
import { DEPENDENCY_MET_STATUSES, FINAL_TASK_STATUSES, isGoalFinal, type TaskStatus } from '../core/vocabulary.js';
import { type SCHEDULE_TASK_STATES, scheduleTaskVar } from '../plan/plan-compiler.js';
import type { PlanRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { planTaskId } from '../registry/task-record.js';
import type { BrainProcessDeps } from './brain-deps.js';
import { BRAIN_OWNER, validateEndedRun } from './order-executor.js';
import { recordPlanAdded } from '../plan/plan-library.js';
import { endGoal } from '../registry/goal-lifecycle.js';
import { recordPreGateApproval } from './schedule-gate-upgrade.js';
import { claimPlanTask } from './work-queue.js';
import { isPollyError } from '../core/errors.js';

/**
 * Per plan id: how many tasks had settled when the Brain's last schedule turn ended (null: no turn
 * ended in this process), and whether this process has looked for a gate passed before the
 * schedule run's journal (brain/process/schedule-gate-upgrade.ts).
 */
export type ScheduleMemory = Map<string, { settledAtTurnEnd: number | null; upgradeChecked?: boolean }>;

type ScheduleTaskState = (typeof SCHEDULE_TASK_STATES)[number];
const SETTLED: ReadonlySet<string> = new Set<ScheduleTaskState>(['done', 'failed']);

function vars(run: RunRecord): Record<string, unknown> {
  return (run.state as unknown as RunState).vars;
}

function control(run: RunRecord): string {
  return (run.state as unknown as RunState).state;
}

/** The task id of a plan's `i`-th task. */
function taskIdOf(plan: PlanRecord, i: number): string {
  return planTaskId(plan, plan.tasks[i]!.key);
}

/**
 * Drive every approved plan's schedule run one step further (see the module doc).
 * Runtime rejects are logged and journaled by the runtime; faults (`lock_timeout`, …) propagate.
 */
export async function driveSchedules(deps: BrainProcessDeps, memory: ScheduleMemory, log: (l: string) => void, now: () => Date): Promise<void> {
  const reg = await deps.store.read();
  for (const plan of Object.values(reg.plans)) {
    if (plan.gate !== 'approved') continue;
    // Task records come first (a retry plan's: taken over from the plan they stopped in).
    if (plan.tasks.some((s) => !reg.tasks[planTaskId(plan, s.key)] || (plan.retries?.[s.key] && reg.tasks[planTaskId(plan, s.key)]!.planId !== plan.id))) continue;
    await driveSchedule(deps, plan, memory, log, now);
  }
}

/** One plan's schedule run (see the module doc). */
export async function driveSchedule(deps: BrainProcessDeps, plan: PlanRecord, memory: ScheduleMemory, log: (l: string) => void, now: () => Date): Promise<void> {
  await recordPlanAdded(deps.store, deps.library.addPlan(plan));
  const workflow = deps.library.scheduleFor(plan.id);
  const started = await deps.runtime.start(workflow, { plan: plan.id });
  if (started.status === 'refused' || !started.run) {
    await failPlanTasks(deps, plan, `the runtime refused to start the plan's schedule ${workflow}: ${started.instruction}`, now);
    return;
  }
  let run = started.run;
  if (run.status === 'finished') return;
  // A run begun by a Polly whose schedule had no gate state (it is past the gate without an
  // APPROVED step): recorded once when the plan was approved before its first step.
  if (control(run) !== 'gate' && !plan.gatePassedBeforeUpgrade && !memory.get(plan.id)?.upgradeChecked) {
    if (await recordPreGateApproval(deps.store, plan, run, await deps.runtime.journal(run.id), now)) {
      log(
        `[polly] plan ${plan.id}: its schedule run ${run.id} began before the plan gate was a step of the schedule; the approval (${plan.decidedBy ?? 'unknown'}, ${plan.decidedAt}) is held as passed before its journal`,
      );
    }
    memory.set(plan.id, { settledAtTurnEnd: memory.get(plan.id)?.settledAtTurnEnd ?? null, upgradeChecked: true });
  }
  const signal = async (action: string, data?: Record<string, unknown>): Promise<boolean> => {
    const r = await deps.runtime.signal(run.id, action, data);
    run = r.run;
    if (!r.accepted) log(`[polly] plan ${plan.id}: the schedule refused ${action} (${r.code}): ${r.reason}`);
    return r.accepted;
  };
  // 0. The plan gate's approval is the run's first step: one action whoever approved (the terminal,
  //    the dashboard, polly plan approve, --yes, a maintainer's /polly approve comment), its `by`
  //    journaled as payload. The admitted schedule dispatches nothing before it.
  if (control(run) === 'gate' && !(await signal('APPROVED', { by: plan.decidedBy ?? 'unknown', at: plan.decidedAt ?? '' }))) return;

  // 1. Task ends → DONE_tN / FAIL_tN.
  const reg = await deps.store.read();
  for (let i = 0; i < plan.tasks.length; i++) {
    const v = scheduleTaskVar(i);
    const task = reg.tasks[taskIdOf(plan, i)];
    if (vars(run)[v] !== 'running' || !task) continue;
    // A task a retry plan took over (polly retry) ended here as failed; the retry plan runs it on.
    const handedOver = task.planId !== plan.id;
    if (!handedOver && (!FINAL_TASK_STATUSES.has(task.status) || !task.finishedAt)) continue;
    await signal(`${!handedOver && DEPENDENCY_MET_STATUSES.has(task.status) ? 'DONE' : 'FAIL'}_${v}`);
  }

  // 2. Dependants of failed or skipped tasks → SKIP_tN (until none is enabled: a skip can skip more).
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = 0; i < plan.tasks.length; i++) {
      const v = scheduleTaskVar(i);
      if (vars(run)[v] !== 'waiting') continue;
      const blocker = plan.tasks[i]!.dependsOn.find((d) => {
        const j = plan.tasks.findIndex((t) => t.key === d);
        return vars(run)[scheduleTaskVar(j)] === 'failed'; // failed or skipped
      });
      if (!blocker || !(await signal(`SKIP_${v}`))) continue;
      changed = true;
      const id = taskIdOf(plan, i);
      await deps.store.update((draft, tx) => {
        const t = draft.tasks[id];
        if (!t || t.planId !== plan.id || FINAL_TASK_STATUSES.has(t.status)) return;
        const blockerTask = draft.tasks[planTaskId(plan, blocker)];
        const why = `skipped: it depends on ${planTaskId(plan, blocker)}, which ended ${blockerTask?.status ?? 'without running'}${blockerTask?.statusReason ? ` (${blockerTask.statusReason})` : ''}`;
        transitionTask(t, 'cancelled', { reason: why, at: now().toISOString(), finished: true });
        tx.emit('task.failed', { taskId: t.id, status: t.status, reason: t.statusReason });
      });
    }
  }

  // 3. A turn: TURN_START, the dispatches the model allows, their orders, TURN_END.
  const settled = (): number => plan.tasks.filter((_s, i) => SETTLED.has(String(vars(run)[scheduleTaskVar(i)]))).length;
  const remembered = memory.get(plan.id);
  const view = await deps.runtime.state(run.id);
  const canStart = view.enabled.some((e) => e.action === 'TURN_START');
  if (control(run) === 'idle' && canStart && (remembered?.settledAtTurnEnd == null || settled() > remembered.settledAtTurnEnd)) await signal('TURN_START');
  if (control(run) === 'turn') {
    const wf = deps.library.get(workflow)!.workflow!;
    const dispatchActions = wf.actions.map((a) => a.name).filter((a) => a.startsWith('DISPATCH_BATCH_') || a.startsWith('DISPATCH_'));
    const batchesFirst = [...dispatchActions.filter((a) => a.startsWith('DISPATCH_BATCH_')), ...dispatchActions.filter((a) => !a.startsWith('DISPATCH_BATCH_'))];
    for (const action of batchesFirst) {
      const enabled = (await deps.runtime.state(run.id)).enabled.some((e) => e.action === action);
      if (enabled) await signal(action);
    }
    await performDispatchOrders(deps, plan, run.id, log, now);
    run = (await deps.runtime.state(run.id)).run;
    if (Number(vars(run).dispatched ?? 0) > 0 && (await signal('TURN_END'))) memory.set(plan.id, { ...memory.get(plan.id), settledAtTurnEnd: settled() });
  }
  // Orders left open by a Brain that stopped mid-turn.
  await performDispatchOrders(deps, plan, run.id, log, now);
  run = (await deps.runtime.state(run.id)).run;

  // 4. FINISH, then hold the whole run to the admitted schedule.
  if (control(run) === 'idle' && (await deps.runtime.state(run.id)).enabled.some((e) => e.action === 'FINISH')) {
    await signal('FINISH');
    const verdict = await validateEndedRun(deps, run.id);
    if (!verdict.conforms && plan.goalId) {
      const goalId = plan.goalId;
      await deps.store.update((draft, tx) => {
        const goal = draft.goals[goalId];
        if (!goal || isGoalFinal(goal.status)) return;
        goal.brainReport = `the plan's schedule run diverged from its admitted workflow: ${verdict.reason}`;
        endGoal(goal, 'failed', tx, { reason: goal.brainReport });
      });
    }
  }
}

/** Claim, perform and report every open `dispatch_tN` order of the schedule run, one at a time. */
async function performDispatchOrders(deps: BrainProcessDeps, plan: PlanRecord, runId: string, log: (l: string) => void, now: () => Date): Promise<void> {
  for (;;) {
    const order = await deps.runtime.claim(runId, { owner: BRAIN_OWNER });
    if (!order) return;
    const i = Number(/^dispatch_t(\d+)$/.exec(order.kind)?.[1] ?? -1);
    const spec = plan.tasks[i];
    const outcome = spec ? await dispatchTask(deps, plan, spec.key, log, now) : { ok: false, note: `order kind ${order.kind} names no task of plan ${plan.id}` };
    const result = await deps.runtime.report(runId, order.id, { outcome: outcome.ok ? 'ok' : 'failure', permanent: true, note: outcome.note, attempt: order.attempt });
    if (!result.accepted) {
      log(`[polly] plan ${plan.id}: report of ${order.kind} not applied (${result.code}): ${result.reason}`);
      return;
    }
  }
}

/**
 * Tool `dispatch_task`: start one plan task. An implement task gets its own run of its admitted
 * task workflow (the runtime hands out its orders from then on); any other purpose is read-only
 * work, marked `dispatched` for the read-only runner (`runReadOnlyTask`). Idempotent: a task already started is reported started.
 */
async function dispatchTask(deps: BrainProcessDeps, plan: PlanRecord, key: string, log: (l: string) => void, now: () => Date): Promise<{ ok: boolean; note: string }> {
  const id = planTaskId(plan, key);
  const task = (await deps.store.read()).tasks[id];
  if (!task) return { ok: false, note: `no task ${id} in the registry` };
  if (task.planId !== plan.id) return { ok: false, note: `${id} was handed to retry plan ${task.planId} before it was dispatched` };
  if (task.cancelRequested || task.status === 'cancelled') return { ok: false, note: `${id} was cancelled before it was dispatched` };
  if (task.status !== 'queued') return { ok: true, note: `${id} already started (${task.status})` };
  // Several Pollys on one shared run store: the task runs where its work claim was granted (brain/process/work-queue.ts).
  if (deps.claims) {
    let claimed: Awaited<ReturnType<typeof claimPlanTask>>;
    try {
      claimed = await claimPlanTask(deps, plan, key, now);
    } catch (error) {
      // Unclaimed work is never run: the store decides who runs it, and it could not be asked.
      const reason = `the shared work claim could not be taken: ${isPollyError(error) ? error.message : String(error)}`;
      await deps.store.update((draft, tx) => {
        const t = draft.tasks[id]!;
        transitionTask(t, 'failed', { reason, at: now().toISOString(), finished: true });
        tx.emit('task.failed', { taskId: id, status: 'failed', reason });
      });
      return { ok: false, note: reason };
    }
    if (claimed !== 'mine') {
      log(`[polly] ${id} (${task.title}) is run by another Polly on the shared run store: ${claimed.label}`);
      return { ok: true, note: `${id}: run by ${claimed.label}` };
    }
  }
  return startPlanTask(deps, plan, key, log, now);
}

/**
 * Start plan task `key` here (its status `queued`, or `dispatched` when taken over from another
 * Polly): an implement task's own run of its admitted task workflow; any other purpose is marked
 * `dispatched` for the read-only runner.
 */
export async function startPlanTask(deps: BrainProcessDeps, plan: PlanRecord, key: string, log: (l: string) => void, now: () => Date): Promise<{ ok: boolean; note: string }> {
  const id = planTaskId(plan, key);
  const task = (await deps.store.read()).tasks[id];
  if (!task) return { ok: false, note: `no task ${id} in the registry` };
  const mark = async (status: TaskStatus, reason: string | null, event: string, data: Record<string, unknown>) =>
    deps.store.update((draft, tx) => {
      const t = draft.tasks[id]!;
      const at = now().toISOString();
      if (status !== 'failed') t.startedAt = at;
      transitionTask(t, status, { reason, at, finished: status === 'failed' });
      tx.emit(event, { taskId: id, ...data, ...(reason ? { reason } : {}) });
    });
  if (task.purpose !== 'implement') {
    await mark('dispatched', null, 'task.started', { worker: task.worker, purpose: task.purpose });
    log(`[polly] dispatched ${id} (${task.title}) to ${task.worker}, read-only`);
    return { ok: true, note: `${id}: ${task.purpose} on ${task.worker} (read-only)` };
  }
  const wf = deps.library.workflowFor(plan.id, key);
  const started = await deps.runtime.start(wf, { task: id });
  if (started.status === 'refused' || !started.run) {
    const reason = `the runtime refused to start ${wf}: ${started.instruction}`;
    await mark('failed', reason, 'task.failed', { status: 'failed' });
    return { ok: false, note: reason };
  }
  if ((started.run.state as { state?: string }).state === 'planned') await deps.runtime.signal(started.run.id, 'START', { vendor: task.worker });
  await mark('dispatched', null, 'task.started', { worker: task.worker, reviewer: task.reviewer, run: started.run.id });
  log(`[polly] dispatched ${id} (${task.title}) to ${task.worker}`);
  return { ok: true, note: `${id}: run ${started.run.id} of ${wf}` };
}

/** Fail every unfinished task of a plan with `reason` (the schedule could not run at all). */
async function failPlanTasks(deps: BrainProcessDeps, plan: PlanRecord, reason: string, now: () => Date): Promise<void> {
  await deps.store.update((draft, tx) => {
    for (const spec of plan.tasks) {
      const t = draft.tasks[planTaskId(plan, spec.key)];
      if (t?.planId !== plan.id) continue; // handed to a retry plan
      if (!t || FINAL_TASK_STATUSES.has(t.status)) continue;
      transitionTask(t, 'failed', { reason, at: now().toISOString(), finished: true });
      tx.emit('task.failed', { taskId: t.id, status: 'failed', reason });
    }
  });
}
