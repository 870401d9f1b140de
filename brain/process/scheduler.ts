/**
 * The plan scheduler: which tasks of the approved plans start now. It is a hand-written copy of the
 * plan's checked schedule workflow (`brain/plan/plan-compiler.ts` compiles it; the Brain does not
 * run it on the runtime yet), kept as one module so it can be replaced by running that workflow.
 *
 * Input: the registry as read this loop turn and the per-plan state of the previous turns. Output:
 * runtime runs started (one per task, `workflowFor(plan, key)`), task status `dispatched` (or
 * `failed` when the runtime refuses, `cancelled` when a dependency can never be met), journaled.
 */
import type { Registry, TaskRecord } from '../registry/registry-schema.js';
import { DEPENDENCY_MET_STATUSES, FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import type { BrainProcessDeps } from './brain-process.js';

/** Per plan id: whether the last turn used the whole dispatch bound, and how many tasks were final then. */
export type ScheduleState = Map<string, { lastTurnFull: boolean; finishedAtLastTurn: number }>;

/**
 * One scheduling turn per approved plan: dispatch up to `max_dispatches_per_turn` tasks whose
 * dependencies are met. A turn that used the whole bound ends; the next turn starts only after a
 * task of the plan has finished (an event), as the plan's schedule workflow models it.
 */
export async function scheduleTurns(
  deps: BrainProcessDeps,
  reg: Registry,
  state: ScheduleState,
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
          transitionTask(t, 'cancelled', { reason: 'skipped: a task it depends on did not finish', at: now().toISOString(), finished: true });
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
          transitionTask(t, 'failed', { reason: `the runtime refused to start ${wf}: ${started.instruction}`, at: now().toISOString(), finished: true });
          tx.emit('task.failed', { taskId: t.id, status: 'failed', reason: t.statusReason });
        });
        continue;
      }
      if (started.run.state && (started.run.state as { state?: string }).state === 'planned') {
        await deps.runtime.signal(started.run.id, 'START', { vendor: task.worker });
      }
      await deps.store.update((draft, tx) => {
        const t = draft.tasks[task.id]!;
        t.startedAt = now().toISOString();
        transitionTask(t, 'dispatched', { at: t.startedAt });
        tx.emit('task.started', { taskId: t.id, worker: t.worker, reviewer: t.reviewer, run: started.run!.id });
      });
      log(`[polly] dispatched ${task.id} (${task.title}) to ${task.worker}`);
    }
    state.set(plan.id, { lastTurnFull: batch.length >= max, finishedAtLastTurn: finished });
  }
}
