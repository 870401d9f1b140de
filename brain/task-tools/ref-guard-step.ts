/**
 * The ref guard around a task step (an agent turn, an acceptance run, a review turn): snapshot the
 * repository's refs, its path remotes' refs and its git metadata files before, compare after
 * (workers/git/ref-guard.ts). Any change other than the task's own branch (and other than Polly's
 * own writes for parallel tasks) is put back at once, journaled as `guard.ref_changed`
 * `{taskId, orderId, step, changes, restored, failed, quarantined}`, and fails the task loudly:
 * status `failed`, reason `ref guard: during <step>: <ref> changed, <old> → <new>; …`. The tool then
 * returns a permanent failure, and `send_followup` does not resume a failed task, so the run ends
 * `failed`, never `ready`.
 *
 * Works with or without a sandbox: it reads git, not the agent's words.
 */
import { createGitRunner, type GitRunner } from '../../workers/git/git.js';
import { createRefGuard, describeChanges, diffSnapshots, type RefChange, type RestoreReport } from '../../workers/git/ref-guard.js';
import type { TaskToolContext, TaskToolOutcome } from './types.js';
import { transitionTask } from '../registry/task-lifecycle.js';

/** What the guard saw during one step; null fields when nothing changed. */
export interface GuardViolation {
  step: string;
  changes: RefChange[];
  report: RestoreReport;
  /** The task's reason: `ref guard: during <step>: …`. */
  reason: string;
}

export interface RefGuardStepOptions {
  git?: GitRunner;
  /** Local refs the step may move. Default: the task's own branch. */
  allowLocal?: readonly string[];
}

/** What {@link withRefGuard} needs of a tool context (the Brain's read-only task runner passes the same). */
export type RefGuardContext = Pick<TaskToolContext, 'repoRoot' | 'store' | 'progress'> & {
  task: Pick<TaskToolContext['task'], 'id' | 'branch'>;
  order: Pick<TaskToolContext['order'], 'id'>;
};

/**
 * Run `step` between two snapshots; restore and journal whatever it changed (see the module doc).
 * @param label  what ran, for the reason and the journal (`the implementer turn`, `acceptance`, …).
 * @returns the step's value, and the violation (null when refs and metadata are unchanged).
 * @throws whatever `step` throws (after nothing is compared), and PollyError `git_failed` when the
 *   refs cannot be listed.
 */
export async function withRefGuard<T>(
  ctx: RefGuardContext,
  label: string,
  step: () => Promise<T>,
  options: RefGuardStepOptions = {},
): Promise<{ value: T; violation: GuardViolation | null }> {
  const guard = createRefGuard({ git: options.git ?? createGitRunner(), repoRoot: ctx.repoRoot });
  const before = await guard.snapshot();
  const value = await step();
  const after = await guard.snapshot(before.remotes);
  const allowLocal = options.allowLocal ?? [`refs/heads/${ctx.task.branch ?? `polly/${ctx.task.id}`}`];
  const changes = diffSnapshots(before, after, { allowLocal });
  if (changes.length === 0) return { value, violation: null };
  const report = await guard.restore(before, changes);
  const undone = report.failed.length === 0 ? 'all put back' : `put back except: ${report.failed.map((f) => `${f.change.name} (${f.reason})`).join('; ')}`;
  const reason = `ref guard: during ${label}: ${describeChanges(changes)} (${undone}${report.quarantined.length > 0 ? `; overwritten values kept under refs/polly/quarantine/` : ''})`;
  await ctx.store.update((draft, tx) => {
    tx.emit('guard.ref_changed', {
      taskId: ctx.task.id,
      orderId: ctx.order.id,
      step: label,
      changes,
      restored: report.restored.length,
      failed: report.failed.map((f) => ({ name: f.change.name, reason: f.reason })),
      quarantined: report.quarantined,
    });
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: new Date().toISOString(), reason: reason.slice(0, 2000) });
  });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { value, violation: { step: label, changes, report, reason } };
}

/** The tool outcome for a violation: a permanent failure whose note is the reason. */
export function guardFailure(violation: GuardViolation): TaskToolOutcome {
  return { outcome: 'failure', permanent: true, note: violation.reason };
}

/**
 * Mark the task failed with the violation's reason again (a tool that records its own status after
 * the step, e.g. `recordTurn`, would otherwise overwrite it).
 */
export async function reassertGuardFailure(ctx: RefGuardContext, violation: GuardViolation): Promise<void> {
  await ctx.store.update((draft) => {
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: new Date().toISOString(), reason: violation.reason.slice(0, 2000) });
  });
}
