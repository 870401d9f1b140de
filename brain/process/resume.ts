/**
 * Restart and resume: what a start does with what a stopped or crashed Brain left.
 *
 * - {@link reconcileDeadBrain}: a `brain` row whose pid is gone is cleared (journal
 *   `brain.reaped`) at every start of a command, before anything is shown, so `polly status` never
 *   shows a dead Brain as running. Worker rows are the next Brain's to reconcile (it adopts live
 *   runners and reads the results of finished ones; workers/supervisor/worker-supervisor.ts).
 * - {@link planContentKey} / {@link findPlanByContent}: `polly run` recognises a plan file it has
 *   run before by its content, and re-attaches instead of proposing it again (which would open a
 *   second PR per task).
 * - {@link resumablePlans}: the approved plans with unfinished tasks, for `polly resume`.
 */
import { createHash } from 'node:crypto';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { planTaskId } from '../registry/task-record.js';
import type { PlanRecord, Registry } from '../registry/registry-schema.js';

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

/** The fields of a plan task that make up its content (what the human wrote). */
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
 * The newest plan whose content equals `tasks` and that is still live: approved, or pending at the
 * gate. Refused, rejected and expired plans do not count (running the file again proposes anew).
 */
export function findPlanByContent(reg: Registry, tasks: readonly PlanTaskContent[]): PlanRecord | null {
  const key = planContentKey(tasks);
  const live = Object.values(reg.plans).filter((p) => (p.gate === 'approved' || p.gate === 'pending') && planContentKey(p.tasks) === key);
  return live.sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0] ?? null;
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
