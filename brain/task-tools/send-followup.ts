/**
 * Tool `send_followup` (effect `send_followup` of polly-task): send the task's stored `feedback`
 * (red-check output, blocking review findings) to the implementer's SAME session
 * (`resumeSessionId = task.sessionId`), in its worktree.
 *
 * Idempotent per order id through the supervisor (a worker already started for this order is
 * adopted). The feedback is kept on the task (run_acceptance clears it when the checks are green).
 */
import { existsSync } from 'node:fs';
import { implementTurn, progressAndWatch, promptMarker, recordHostLoss, recordTurn } from './dispatch.js';
import { createBudgetWatch, parkForBudget, withMeter } from './turn-budget.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import type { TaskTool } from './types.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { guardFailure, reassertGuardFailure, withRefGuard } from './ref-guard-step.js';
import { ownGitAdminDir, sandboxRefusalFailure, turnRefusals } from './sandbox-refusals.js';

/** The follow-up prompt: the marker line, then the feedback verbatim. */
export function followupPrompt(task: Pick<TaskRecord, 'id' | 'purpose' | 'attempts'>, feedback: string): string {
  return `${promptMarker(task)} follow-up after attempt ${task.attempts}\n\n${feedback.trim()}\n`;
}

/** The `send_followup` tool (see the module doc). */
export const sendFollowup: TaskTool = async (ctx) => {
  const task = ctx.task;
  const feedback = task.feedback ?? null;
  if (FINAL_TASK_STATUSES.has(task.status)) {
    // E.g. the ref guard failed it during acceptance or review: a failed task is not resumed.
    return {
      outcome: 'failure',
      permanent: true,
      note: `send_followup: task ${task.id} is ${task.status}${task.statusReason ? ` (${task.statusReason})` : ''}; it is not resumed`,
    };
  }
  if (!feedback) {
    return { outcome: 'failure', permanent: true, note: `send_followup: task ${task.id} has no feedback to send (run_acceptance or a review stores it first)` };
  }
  if (!task.sessionId) {
    return { outcome: 'failure', permanent: true, note: `send_followup: task ${task.id} has no agent session to resume (dispatch it first)` };
  }
  if (!task.worktree || !existsSync(task.worktree)) {
    return { outcome: 'failure', permanent: true, note: `send_followup: the worktree of task ${task.id} (${task.worktree ?? 'none recorded'}) is gone; dispatch it again` };
  }
  await ctx.store.update((draft) => {
    const t = draft.tasks[task.id];
    if (t && t.status !== 'running') transitionTask(t, 'running', { at: ctx.clock().toISOString() });
  });
  const watch = await createBudgetWatch(ctx, ctx.signal);
  const spentAlready = watch.stopped();
  if (spentAlready) return parkForBudget(ctx, spentAlready);
  ctx.progress(`${task.id}: feedback to ${task.worker} (session ${task.sessionId})`);
  const request = implementTurn(ctx, task, followupPrompt(task, feedback), task.sessionId);
  const { value: result, violation } = await withRefGuard(
    ctx,
    `the ${task.worker} follow-up turn`,
    () => ctx.supervisor.runTurn(withMeter(request, watch, ctx.config), { signal: watch.signal, onEvent: (e) => progressAndWatch(ctx, task.id, watch, e) }),
    { confinement: (r) => r.sandboxMounts },
  );
  const stop = watch.stopped();
  if (result.hostLost?.started && !violation && !stop) return recordHostLoss(ctx, result, 'send_followup');
  const outcome = await recordTurn(ctx, result, 'send_followup', stop);
  if (violation) {
    await reassertGuardFailure(ctx, violation);
    return guardFailure(violation);
  }
  if (stop) return parkForBudget(ctx, stop, { workerId: result.workerId, sessionId: result.sessionId });
  const refused = turnRefusals(
    result.events ?? [],
    [ownGitAdminDir(ctx.task.worktree)].filter((d): d is string => d !== null),
  );
  if (refused.length > 0) return sandboxRefusalFailure(ctx, `the ${task.worker} follow-up turn`, refused);
  return outcome;
};
