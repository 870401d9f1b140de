/**
 * The Brain process: one per repository. It owns the registry's `brain` row, supervises workers,
 * runs the tasks of approved plans on the durable runtime, runs read-only ad-hoc tasks, honours
 * cancels, expires plan asks, notices human merges, and hosts the LLM brain of each open goal.
 *
 * Event-driven: the loop sleeps on the journal (`store.waitForJournal`, fs.watch underneath) and
 * on its own in-flight work; nothing polls a model.
 *
 * Crash safety: every step of a task is a runtime step (one atomic registry write + journal line)
 * and every tool is idempotent per work-order id (brain/task-tools/types.ts). After a SIGKILL a new
 * Brain adopts live workers (workers/worker-supervisor.ts), claims the same open orders under the
 * same owner name, and finishes the run: no dispatch is repeated and nothing is merged.
 */
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { join } from 'node:path';
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';
import type { Runtime } from '../../workflows/run/runtime.js';
import { watchMerges } from '../forge/after-merge.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError, isPollyError } from '../core/errors.js';
import type { Forge } from '../forge/forge.js';
import { expirePlanAsks } from '../plan/plan-gate.js';
import type { PlanLibrary } from '../plan/plan-library.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { GoalRecord, PlanRecord, Registry, RunRecord, TaskRecord, WorkOrderRecord } from '../registry/registry-schema.js';
import { DEPENDENCY_MET_STATUSES, FINAL_TASK_STATUSES, isGoalFinal, type TaskStatus } from '../core/vocabulary.js';
import { promptMarker } from '../task-tools/dispatch.js';
import { withRefGuard } from '../task-tools/ref-guard-step.js';
import { newTaskRecord } from '../registry/task-record.js';
import type { TaskTool, TaskToolContext, WorkerSupervisor } from '../task-tools/types.js';
import { toInboxEvents, type InboxEvent } from '../mcp/brain-tools.js';
import type { GateContext } from '../../gate/types.js';

/** The lease owner name of the repository's Brain: stable across restarts, so a new Brain renews the old one's leases. */
export const BRAIN_OWNER = 'polly-brain';


/** What a task shows while an order of each tool runs. */
const STATUS_FOR_TOOL: Record<string, TaskStatus> = {
  dispatch: 'running',
  send_followup: 'fixing',
  run_acceptance: 'checking',
  push: 'green',
  open_draft_pr: 'pr_open',
  dispatch_review: 'reviewing',
  mark_ready: 'reviewing',
};

/** The LLM brain the process hosts per goal (brain/llm-brain.ts), behind a narrow interface. */
export interface GoalBrain {
  pid: number;
  sessionId(): string | null;
  turn(text: string): Promise<{ ok: boolean; text: string; sessionId: string | null }>;
  close(): Promise<void>;
}

export interface BrainProcessDeps {
  repoRoot: string;
  pollyDir: string;
  store: RegistryStore;
  config: PollyConfig;
  runtime: Runtime;
  library: PlanLibrary;
  supervisor: WorkerSupervisor;
  worktrees: WorktreeManager;
  forge: Forge;
  /** Effect tool name → implementation (brain/task-tools/index.ts). */
  tools: Record<string, TaskTool>;
  /** Env for agent processes (model endpoints). */
  agentEnv: Record<string, string>;
  gateContext: GateContext;
  /**
   * Start the LLM brain of a goal, or null to run without one (plans come from `polly run`).
   * `resumeSessionId` continues the goal's session after a restart.
   */
  startGoalBrain?: ((goal: GoalRecord, resumeSessionId: string | null) => GoalBrain) | null;
  /** First message for a goal's brain and the wake-up digest of inbox events. */
  messages?: { first(goal: GoalRecord): string; wake(events: InboxEvent[]): string };
  /** Exit once nothing is open (no open goal, no pending or running work). */
  exitWhenIdle?: boolean;
  /** Seconds between after-merge passes (default 30). */
  mergeWatchSeconds?: number;
  /** One line per notable step, for the live view / log (stderr). */
  log?: (line: string) => void;
  /** Called with every agent event of every worker (for the live view). */
  onWorkerEvent?: (taskId: string, event: AgentEvent) => void;
  clock?: () => Date;
  signal?: AbortSignal;
}


/**
 * Take the repository's Brain row for this process.
 * @throws PollyError `already_running` naming the live Brain's pid.
 * @returns the previous Brain row (a crashed Brain's), if any, so its leftovers can be reaped.
 */
export async function claimBrain(store: RegistryStore, now: () => Date, pid = process.pid): Promise<Registry['brain']> {
  return store.update((draft, tx) => {
    const previous = draft.brain;
    if (previous && previous.pid !== pid && pidAlive(previous.pid)) {
      throw new PollyError('already_running', `a Brain already runs for this repository (pid ${previous.pid}, started ${previous.startedAt}). Stop it first (kill ${previous.pid}) or let it finish; one Brain per repository.`, {
        details: { pid: previous.pid },
      });
    }
    const at = now().toISOString();
    draft.brain = { pid, startedAt: at, heartbeatAt: at };
    tx.emit('brain.started', { pid, previous: previous ? { pid: previous.pid, startedAt: previous.startedAt } : null });
    return previous;
  });
}

/** A task record for one task of an approved plan. */
export function planTaskRecord(plan: PlanRecord, spec: PlanRecord['tasks'][number], config: PollyConfig, at: string): TaskRecord {
  return newTaskRecord(
    {
      id: `${plan.id}-${spec.key}`,
      planId: plan.id,
      title: spec.title,
      purpose: spec.purpose,
      worker: spec.worker,
      model: spec.model,
      reviewer: spec.purpose === 'implement' ? spec.reviewer ?? config.review.pairs[spec.worker]?.[0] ?? null : null,
      prompt: spec.prompt,
      acceptance: spec.acceptance,
      dependsOn: spec.dependsOn.map((d) => `${plan.id}-${d}`),
    },
    at,
  );
}

/** Why nothing more will happen: the registry holds no open goal and no unfinished work. */
export function isIdle(reg: Registry): boolean {
  const openGoal = Object.values(reg.goals).some((g) => !isGoalFinal(g.status));
  const pendingPlan = Object.values(reg.plans).some((p) => p.gate === 'pending');
  const openTask = Object.values(reg.tasks).some((t) => !FINAL_TASK_STATUSES.has(t.status));
  return !openGoal && !pendingPlan && !openTask;
}

/**
 * Run the Brain until `signal` aborts (or, with `exitWhenIdle`, until nothing is open).
 * @throws PollyError `already_running` when another live Brain owns the repository.
 */
export async function runBrainProcess(deps: BrainProcessDeps): Promise<void> {
  const now = deps.clock ?? (() => new Date());
  const log = deps.log ?? (() => {});
  const inflight = new Map<string, Promise<void>>();
  const goalBrains = new Map<string, { brain: GoalBrain; busy: boolean; cursor: number }>();
  const scheduledPlans = new Map<string, { lastTurnFull: boolean; finishedAtLastTurn: number }>();
  let wake: () => void = () => {};
  let wakePromise = new Promise<void>((r) => (wake = r));
  const poke = () => {
    wake();
    wakePromise = new Promise<void>((r) => (wake = r));
  };

  const previous = await claimBrain(deps.store, now);
  if (previous && previous.pid !== process.pid) log(`[polly] the previous Brain (pid ${previous.pid}) is gone; adopting its work`);
  await reapPreviousGoalBrains(deps, log);
  const reconciled = await deps.supervisor.reconcile();
  if (reconciled.adopted.length || reconciled.reaped.length) log(`[polly] workers adopted: ${reconciled.adopted.join(', ') || 'none'}; reaped: ${reconciled.reaped.join(', ') || 'none'}`);

  let cursor = (await deps.store.journal()).at(-1)?.seq ?? 0;
  let lastMergePass = 0;
  let lastHeartbeat = Date.now();

  const spawnWork = (key: string, work: () => Promise<void>) => {
    if (inflight.has(key)) return;
    const p = work()
      .catch((error: unknown) => log(`[polly] ${key}: ${isPollyError(error) ? error.message : String((error as Error)?.stack ?? error)}`))
      .finally(() => {
        inflight.delete(key);
        poke();
      });
    inflight.set(key, p);
  };

  try {
    for (;;) {
      if (deps.signal?.aborted) break;
      await expirePlanAsks(deps.store, deps.config, now());
      let reg = await deps.store.read();

      await handleCancels(deps, reg, log);
      reg = await createPlanTasks(deps, reg, now);
      await scheduleTurns(deps, reg, scheduledPlans, log, now);
      reg = await deps.store.read();
      for (const plan of Object.values(reg.plans)) if (plan.gate === 'approved') deps.library.addPlan(plan);

      // Drive every run of our plan tasks: claim the open order and perform its tool.
      for (const run of await deps.runtime.list({ status: 'running' })) {
        const taskId = String(run.input.task ?? '');
        const order = run.openOrder;
        if (!taskId || !order || inflight.has(order.id)) continue;
        if (order.availableAt && Date.parse(order.availableAt) > now().getTime()) continue;
        spawnWork(order.id, () => executeOrder(deps, run, order, log, now));
      }
      // Runs that ended: reflect their outcome on the task.
      await finishTasksOfEndedRuns(deps, now);

      // Read-only ad-hoc tasks (explore, search, review dispatched by sys_session_send).
      reg = await deps.store.read();
      for (const task of Object.values(reg.tasks)) {
        if (task.purpose === 'implement' || task.cancelRequested) continue;
        if (task.status === 'queued' || task.status === 'running') spawnWork(`adhoc:${task.id}`, () => runReadOnlyTask(deps, task.id, log, now));
      }

      await completeGoals(deps, now);

      // The LLM brains of open goals.
      reg = await deps.store.read();
      if (deps.startGoalBrain) {
        for (const goal of Object.values(reg.goals)) {
          if (goal.mode === 'plan') continue; // a human-written plan: no LLM brain
          const open = !isGoalFinal(goal.status);
          const hosted = goalBrains.get(goal.id);
          if (!open) {
            if (hosted && !hosted.busy) {
              goalBrains.delete(goal.id);
              void hosted.brain.close();
            }
            continue;
          }
          if (!hosted) {
            const resume = goal.brainSessionId ?? null;
            let brain: GoalBrain;
            try {
              brain = deps.startGoalBrain(goal, resume);
            } catch (error) {
              // The LLM brain cannot start (root without allow_root_sandbox, a missing CLI…): the goal
              // fails with the reason instead of the Brain dying and being restarted in a loop.
              await failGoal(deps, goal.id, isPollyError(error) ? `${error.code}: ${error.message}` : String((error as Error)?.message ?? error));
              continue;
            }
            const entry = { brain, busy: false, cursor: reg.inboxCursor ?? cursor };
            goalBrains.set(goal.id, entry);
            await deps.store.update((draft, tx) => {
              const g = draft.goals[goal.id];
              if (g) g.brainPid = brain.pid;
              tx.emit('brain.goal_session', { goalId: goal.id, pid: brain.pid, resumed: resume !== null });
            });
            const first = resume ? deps.messages!.wake(toInboxEvents(await deps.store.journal(entry.cursor))) : deps.messages!.first(goal);
            spawnWork(`brain:${goal.id}`, () => brainTurn(deps, goal.id, entry, first, now));
            continue;
          }
          if (!hosted.busy) {
            const events = toInboxEvents(await deps.store.journal(Math.max(hosted.cursor, reg.inboxCursor ?? 0)));
            if (events.length > 0) {
              hosted.cursor = events[events.length - 1]!.seq;
              spawnWork(`brain:${goal.id}`, () => brainTurn(deps, goal.id, hosted, deps.messages!.wake(events), now));
            }
          }
        }
      }

      if (Date.now() - lastMergePass > (deps.mergeWatchSeconds ?? 30) * 1000) {
        lastMergePass = Date.now();
        const report = await watchMerges({ store: deps.store, forge: deps.forge, worktrees: deps.worktrees, progress: log });
        for (const d of report.done) log(`[polly] ${d.taskId}: PR #${d.number} was merged by a human; task done, worktree removed after backup ${d.backupRef ?? ''}`);
      }
      if (Date.now() - lastHeartbeat > 10_000) {
        lastHeartbeat = Date.now();
        await deps.store.update((draft) => {
          if (draft.brain?.pid === process.pid) draft.brain.heartbeatAt = now().toISOString();
        });
      }

      reg = await deps.store.read();
      if (deps.exitWhenIdle && inflight.size === 0 && isIdle(reg)) {
        log('[polly] nothing open: the Brain exits');
        break;
      }
      // Sleep until the journal moves, in-flight work ends, or a timer is due.
      const entries = await Promise.race([
        deps.store.waitForJournal(cursor, 5000, deps.signal),
        wakePromise.then(() => [] as const),
      ]);
      if (entries.length) cursor = entries[entries.length - 1]!.seq;
    }
  } finally {
    for (const { brain } of goalBrains.values()) await brain.close().catch(() => {});
    await Promise.allSettled(inflight.values());
    await deps.store
      .update((draft, tx) => {
        if (draft.brain?.pid === process.pid) {
          draft.brain = null;
          tx.emit('brain.stopped', { pid: process.pid });
        }
      })
      .catch(() => {});
  }
}

/** End a goal as failed with a reason the user sees (`polly goal` prints it and exits 1). */
async function failGoal(deps: BrainProcessDeps, goalId: string, reason: string): Promise<void> {
  deps.log?.(`[polly] goal ${goalId} failed: ${reason}`);
  await deps.store.update((draft, tx) => {
    const goal = draft.goals[goalId];
    if (!goal || isGoalFinal(goal.status)) return;
    goal.status = 'failed';
    goal.brainReport = reason;
    tx.emit('goal.done', { goalId, status: 'failed', reason });
  });
}

/** Kill the process group of an LLM brain a crashed Brain left behind (recorded on its goal). */
async function reapPreviousGoalBrains(deps: BrainProcessDeps, log: (l: string) => void): Promise<void> {
  const reg = await deps.store.read();
  for (const goal of Object.values(reg.goals)) {
    if (goal.brainPid && goal.brainPid !== process.pid && pidAlive(goal.brainPid)) {
      try {
        process.kill(-goal.brainPid, 'SIGTERM');
      } catch {
        try {
          process.kill(goal.brainPid, 'SIGTERM');
        } catch {
          // gone
        }
      }
      log(`[polly] stopped the LLM brain a previous Brain left running (pid ${goal.brainPid}); its session resumes`);
    }
  }
}

async function brainTurn(deps: BrainProcessDeps, goalId: string, entry: { brain: GoalBrain; busy: boolean; cursor: number }, text: string, now: () => Date): Promise<void> {
  entry.busy = true;
  try {
    await deps.store.update((draft, tx) => {
      const seq = (draft.turn?.seq ?? 0) + 1;
      draft.turn = { seq, startedAt: now().toISOString(), dispatches: 0 };
      tx.emit('brain.turn', { goalId, turn: seq });
    });
    const result = await entry.brain.turn(text);
    const sessionId = result.sessionId ?? entry.brain.sessionId();
    const goalNow = (await deps.store.read()).goals[goalId];
    if (!result.ok && goalNow && goalNow.planIds.length === 0 && !goalNow.brainSessionId) {
      // The first turn failed before any plan (e.g. no API key: "Not logged in"): say so and stop.
      await failGoal(deps, goalId, `the Brain's model session failed: ${result.text.slice(0, 1000)}`);
      return;
    }
    await deps.store.update((draft, tx) => {
      const goal = draft.goals[goalId];
      if (goal) {
        goal.brainSessionId = sessionId;
        goal.brainReport = result.text;
        if (goal.status === 'open') goal.status = 'planning';
      }
      tx.emit('brain.turn_ended', { goalId, ok: result.ok, text: result.text.slice(0, 2000) });
    });
  } finally {
    entry.busy = false;
  }
}

/** Create task records (queued) for every approved plan that has none yet. */
async function createPlanTasks(deps: BrainProcessDeps, reg: Registry, now: () => Date): Promise<Registry> {
  const missing = Object.values(reg.plans).filter((p) => p.gate === 'approved' && p.tasks.some((t) => !reg.tasks[`${p.id}-${t.key}`]));
  if (missing.length === 0) return reg;
  await deps.store.update((draft, tx) => {
    const at = now().toISOString();
    for (const plan of missing) {
      for (const spec of plan.tasks) {
        const id = `${plan.id}-${spec.key}`;
        if (draft.tasks[id]) continue;
        draft.tasks[id] = planTaskRecord(plan, spec, deps.config, at);
        tx.emit('task.created', { taskId: id, planId: plan.id, purpose: spec.purpose, worker: spec.worker });
      }
    }
  });
  return deps.store.read();
}

/**
 * One scheduling turn per approved plan: dispatch up to `max_dispatches_per_turn` tasks whose
 * dependencies are met. A turn that used the whole bound ends; the next turn starts only after a
 * task of the plan has finished (an event), as the plan's schedule workflow models it.
 */
async function scheduleTurns(
  deps: BrainProcessDeps,
  reg: Registry,
  state: Map<string, { lastTurnFull: boolean; finishedAtLastTurn: number }>,
  log: (l: string) => void,
  now: () => Date,
): Promise<void> {
  const max = deps.config.policies.spawn_bounds.max_dispatches_per_turn;
  for (const plan of Object.values(reg.plans)) {
    if (plan.gate !== 'approved') continue;
    const tasks = plan.tasks.map((s) => reg.tasks[`${plan.id}-${s.key}`]).filter((t): t is TaskRecord => Boolean(t));
    const finished = tasks.filter((t) => FINAL_TASK_STATUSES.has(t.status)).length;
    const s = state.get(plan.id) ?? { lastTurnFull: false, finishedAtLastTurn: -1 };
    if (s.lastTurnFull && finished === s.finishedAtLastTurn) continue;
    const ready = tasks.filter(
      (t) => t.status === 'queued' && t.purpose === 'implement' && !t.cancelRequested && t.dependsOn.every((d) => DEPENDENCY_MET_STATUSES.has(reg.tasks[d]?.status ?? 'queued')),
    );
    // Dependants of failed tasks can never run.
    const blocked = tasks.filter((t) => t.status === 'queued' && t.dependsOn.some((d) => { const st = reg.tasks[d]?.status; return st !== undefined && FINAL_TASK_STATUSES.has(st) && !DEPENDENCY_MET_STATUSES.has(st); }));
    if (blocked.length) {
      await deps.store.update((draft, tx) => {
        for (const b of blocked) {
          const t = draft.tasks[b.id]!;
          t.status = 'cancelled';
          t.statusReason = 'skipped: a task it depends on did not finish';
          t.finishedAt = now().toISOString();
          tx.emit('task.failed', { taskId: t.id, status: t.status, reason: t.statusReason });
        }
      });
    }
    if (ready.length === 0) continue;
    const batch = ready.slice(0, max);
    for (const task of batch) {
      const wf = deps.library.workflowFor(plan.id, task.id.slice(plan.id.length + 1));
      deps.library.addPlan(plan);
      const started = await deps.runtime.start(wf, { task: task.id });
      if (started.status === 'refused' || !started.run) {
        await deps.store.update((draft, tx) => {
          const t = draft.tasks[task.id]!;
          t.status = 'failed';
          t.statusReason = `the runtime refused to start ${wf}: ${started.instruction}`;
          t.finishedAt = now().toISOString();
          tx.emit('task.failed', { taskId: t.id, status: 'failed', reason: t.statusReason });
        });
        continue;
      }
      if (started.run.state && (started.run.state as { state?: string }).state === 'planned') {
        await deps.runtime.signal(started.run.id, 'START', { vendor: task.worker });
      }
      await deps.store.update((draft, tx) => {
        const t = draft.tasks[task.id]!;
        t.status = 'dispatched';
        t.startedAt = now().toISOString();
        t.updatedAt = t.startedAt;
        tx.emit('task.started', { taskId: t.id, worker: t.worker, reviewer: t.reviewer, run: started.run!.id });
      });
      log(`[polly] dispatched ${task.id} (${task.title}) to ${task.worker}`);
    }
    state.set(plan.id, { lastTurnFull: batch.length >= max, finishedAtLastTurn: finished });
  }
}

/** Perform one work order with its tool and report the outcome to the runtime. */
async function executeOrder(deps: BrainProcessDeps, run: RunRecord, order: WorkOrderRecord, log: (l: string) => void, now: () => Date): Promise<void> {
  const claimed = await deps.runtime.claim(run.id, { owner: BRAIN_OWNER });
  if (!claimed || claimed.id !== order.id) return;
  const taskId = String(run.input.task);
  const reg = await deps.store.read();
  const task = reg.tasks[taskId];
  if (!task) {
    await deps.runtime.report(run.id, claimed.id, { outcome: 'failure', permanent: true, note: `no task ${taskId} in the registry`, attempt: claimed.attempt });
    return;
  }
  const tool = deps.tools[claimed.tool];
  const status = STATUS_FOR_TOOL[claimed.tool];
  if (status && task.status !== status) {
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[taskId];
      if (!t || FINAL_TASK_STATUSES.has(t.status)) return;
      t.status = status;
      t.updatedAt = now().toISOString();
      tx.emit('task.status', { taskId, status, tool: claimed.tool });
    });
  }
  const controller = new AbortController();
  const ctx: TaskToolContext = {
    repoRoot: deps.repoRoot,
    store: deps.store,
    config: deps.config,
    task: (await deps.store.read()).tasks[taskId]!,
    order: { id: claimed.id, kind: claimed.kind, tool: claimed.tool, attempt: claimed.attempt },
    worktrees: deps.worktrees,
    supervisor: deps.supervisor,
    forge: deps.forge,
    agentEnv: deps.agentEnv,
    progress: (line) => log(`[polly] ${line}`),
    signal: deps.signal ?? controller.signal,
  };
  let outcome: Awaited<ReturnType<TaskTool>>;
  if (!tool) {
    outcome = { outcome: 'failure', permanent: true, note: `no tool "${claimed.tool}" is wired into the Brain` };
  } else {
    try {
      outcome = await tool(ctx);
    } catch (error) {
      outcome = { outcome: 'failure', note: isPollyError(error) ? error.message : String((error as Error)?.message ?? error) };
    }
  }
  log(`[polly] ${taskId}: ${claimed.tool} → ${outcome.outcome}: ${outcome.note}`);
  const result = await deps.runtime.report(run.id, claimed.id, {
    outcome: outcome.outcome,
    ...(outcome.data ? { data: outcome.data } : {}),
    note: outcome.note,
    ...(outcome.permanent ? { permanent: true } : {}),
    attempt: claimed.attempt,
  });
  if (!result.accepted) log(`[polly] ${taskId}: report not applied (${result.code}): ${result.reason}`);
}

/** Final run states → task statuses (journaled once, as inbox events). */
async function finishTasksOfEndedRuns(deps: BrainProcessDeps, now: () => Date): Promise<void> {
  const finished = await deps.runtime.list({ status: 'finished' });
  const reg = await deps.store.read();
  // A task is finished once: `finishedAt` marks it (a tool may already have set a final status).
  const updates = finished.filter((run) => {
    const t = reg.tasks[String(run.input.task ?? '')];
    return t && !t.finishedAt;
  });
  if (updates.length === 0) return;
  await deps.store.update((draft, tx) => {
    for (const run of updates) {
      const t = draft.tasks[String(run.input.task)];
      if (!t || t.finishedAt) continue;
      const outcome = run.outcome ?? (run.state as { state?: string }).state ?? 'failed';
      if (!FINAL_TASK_STATUSES.has(t.status) || outcome !== 'ready') t.status = outcome === 'ready' ? 'ready' : outcome === 'cancelled' ? 'cancelled' : 'failed';
      if (t.status === 'failed' && !t.statusReason) t.statusReason = `the task's workflow ended in "${outcome}"`;
      t.finishedAt = now().toISOString();
      t.updatedAt = t.finishedAt;
      tx.emit(t.status === 'ready' ? 'task.finished' : 'task.failed', {
        taskId: t.id,
        status: t.status,
        reason: t.statusReason,
        pr: t.pr ? { number: t.pr.number, url: t.pr.url, state: t.pr.state } : null,
      });
    }
  });
}

/** Cancel requested tasks: stop the worker group, back up the work, cancel the run. */
async function handleCancels(deps: BrainProcessDeps, reg: Registry, log: (l: string) => void): Promise<void> {
  for (const task of Object.values(reg.tasks)) {
    if (!task.cancelRequested || task.status === 'cancelled') continue;
    const stopped = await deps.supervisor.cancelTask(task.id);
    let backupRef: string | null = null;
    if (task.worktree || task.branch) {
      try {
        const removed = await deps.worktrees.remove({ id: task.id, reason: 'cancelled' });
        backupRef = removed.ref;
      } catch (error) {
        log(`[polly] ${task.id}: backup on cancel failed: ${isPollyError(error) ? error.message : String(error)}`);
      }
    }
    const run = (await deps.runtime.list({})).find((r) => r.input.task === task.id && r.status === 'running');
    if (run) await deps.runtime.signal(run.id, 'CANCEL');
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[task.id]!;
      t.status = 'cancelled';
      t.statusReason = 'cancelled by sys_cancel_task';
      t.finishedAt = new Date().toISOString();
      if (backupRef) t.backupRefs = [...t.backupRefs, backupRef];
      tx.emit('task.cancelled', { taskId: t.id, workersStopped: stopped.cancelled, backupRef });
    });
    log(`[polly] ${task.id}: cancelled; work kept in ${backupRef ?? '(no worktree)'}`);
  }
}

/** Run one read-only ad-hoc task (explore, search, review) in the main checkout; idempotent per task. */
async function runReadOnlyTask(deps: BrainProcessDeps, taskId: string, log: (l: string) => void, now: () => Date): Promise<void> {
  const task = (await deps.store.read()).tasks[taskId];
  if (!task || FINAL_TASK_STATUSES.has(task.status)) return;
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[taskId]!;
    if (t.status === 'queued') {
      t.status = 'running';
      t.startedAt = now().toISOString();
      tx.emit('task.status', { taskId, status: 'running' });
    }
  });
  log(`[polly] ${taskId}: ${task.purpose} on ${task.worker} (read-only)`);
  // Read-only work runs in the main checkout: no ref may move (the ref guard puts back any that did).
  const guardCtx = { repoRoot: deps.repoRoot, store: deps.store, progress: log, task: { id: taskId, branch: null }, order: { id: `adhoc:${taskId}` } };
  const { value: result, violation } = await withRefGuard(guardCtx, `the ${task.worker} ${task.purpose} turn`, () => deps.supervisor.runTurn(
    {
      taskId,
      orderId: `adhoc:${taskId}`,
      harness: task.worker,
      purpose: task.purpose,
      role: task.purpose as 'explore' | 'search' | 'review',
      cwd: deps.repoRoot,
      prompt: `${promptMarker(task)} ${task.title}\n\n${task.prompt}\n\nYou are read-only: read and report; do not change any file. End with a short report.`,
      resumeSessionId: null,
      model: task.model,
      gateContext: { ...deps.gateContext, worktree: deps.repoRoot },
      env: deps.agentEnv,
    },
    { onEvent: (e) => deps.onWorkerEvent?.(taskId, e) },
  ), { allowLocal: [] });
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[taskId]!;
    t.sessionId = result.sessionId;
    t.report = result.finalText;
    t.status = violation ? 'failed' : result.status === 'ok' ? 'done' : result.status === 'cancelled' ? 'cancelled' : 'failed';
    t.statusReason = violation ? violation.reason : result.status === 'ok' ? null : `${result.status}: ${result.message ?? result.stderr.slice(-500)}`;
    t.finishedAt = now().toISOString();
    tx.emit(t.status === 'done' ? 'task.finished' : 'task.failed', { taskId, status: t.status, report: result.finalText.slice(0, 4000), reason: t.statusReason });
  });
}

/** A goal is done when its approved plan's tasks have all reached a final state. */
async function completeGoals(deps: BrainProcessDeps, now: () => Date): Promise<void> {
  const reg = await deps.store.read();
  const done = Object.values(reg.goals).filter((g) => {
    if (isGoalFinal(g.status)) return false;
    const plans = g.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => Boolean(p));
    if (plans.some((p) => p.gate === 'rejected' || p.gate === 'expired') && !plans.some((p) => p.gate === 'approved' || p.gate === 'pending')) return true;
    const approved = plans.filter((p) => p.gate === 'approved');
    if (approved.length === 0) return false;
    // Settled: a final status and its finish recorded (the task.finished/failed event was journaled).
    return approved.every((p) => p.tasks.every((s) => {
      const t = reg.tasks[`${p.id}-${s.key}`];
      return t !== undefined && FINAL_TASK_STATUSES.has(t.status) && Boolean(t.finishedAt);
    }));
  });
  if (done.length === 0) return;
  await deps.store.update((draft, tx) => {
    for (const g of done) {
      const goal = draft.goals[g.id]!;
      const tasks = goal.planIds.flatMap((pid) => Object.values(draft.tasks).filter((t) => t.planId === pid));
      const ok = tasks.length > 0 && tasks.every((t) => ['ready', 'merged', 'done'].includes(t.status));
      goal.status = ok ? 'done' : 'failed';
      tx.emit('goal.done', { goalId: goal.id, status: goal.status, at: now().toISOString(), tasks: tasks.map((t) => ({ id: t.id, status: t.status, pr: t.pr })) });
    }
  });
}

/** The default location of a goal brain's private state. */
export function goalStateDir(pollyDir: string, goalId: string): string {
  return join(pollyDir, 'brain', goalId);
}

