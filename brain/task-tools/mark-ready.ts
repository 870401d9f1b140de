/**
 * Tool `mark_ready` (effect `mark_pr_ready` of polly-task): the checks are green and the last review
 * has no blocking finding, so the task's draft PR is marked ready for a human's review.
 *
 * Before marking it ready, the PR gets one comment with its final state (the PR body of
 * brain/pr-body.ts rendered again: the last check results and every review round), since the body
 * written when the draft was opened still says the review is pending.
 *
 * Idempotent: `Forge.markReady` is a no-op on a PR that is already ready; the task's `pr.state` and
 * status become `ready`. A PR a human already merged is reported `ok` (it is recorded as merged and
 * the after-merge pass finishes the task); a PR closed without merging is a permanent failure.
 * Polly never merges.
 */
import { isPollyError } from '../core/errors.js';
import { prBodyInputOf, renderPrBody } from '../forge/pr-body.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';
import { transitionTask } from '../registry/task-lifecycle.js';

/** Create the `mark_ready` tool. */
export function createMarkReadyTool(): TaskTool {
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const { task } = ctx;
    if (!task.pr) return { outcome: 'failure', permanent: true, note: `task ${task.id} has no pull request to mark ready; open_draft_pr must run first.` };
    const number = task.pr.number;
    try {
      const info = await ctx.forge.getPullRequest(number);
      if (info.state === 'merged' || info.state === 'closed') {
        await ctx.store.update((draft, tx) => {
          const t = draft.tasks[task.id];
          if (!t?.pr || t.pr.state === info.state) return;
          t.pr.state = info.state;
          t.updatedAt = ctx.clock().toISOString();
          tx.emit('task.pr_state', { taskId: t.id, number, state: info.state });
        });
        if (info.state === 'merged') return { outcome: 'ok', note: `PR #${number} was already merged by a human; nothing to mark ready` };
        return { outcome: 'failure', permanent: true, note: `PR #${number} was closed without merging; it cannot be marked ready. Reopen it on the forge or cancel the task.` };
      }
      if (info.state !== 'ready') {
        const reg = await ctx.store.read();
        const t = reg.tasks[task.id] ?? task;
        const body = renderPrBody(prBodyInputOf(t, reg));
        // The description was written when the draft opened ("Review: pending"): it gets the final state too.
        await ctx.forge.updateBody(number, body);
        await ctx.forge.comment(number, `**Final state: ready for review.**\n\n${body}`);
        await ctx.forge.markReady(number);
      }
    } catch (error) {
      const permanent = isPollyError(error) && error.code === 'not_found';
      return { outcome: 'failure', ...(permanent ? { permanent } : {}), note: `marking PR #${number} ready failed: ${isPollyError(error) ? error.message : String(error)}` };
    }
    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t?.pr) return;
      if (t.pr.state === 'ready' && t.status === 'ready') return;
      t.pr.state = 'ready';
      transitionTask(t, 'ready', { reason: null, at: ctx.clock().toISOString() });
      t.feedback = null;
      // `fixRound`: the fix round this ready ends (null the first time), so a notification can say the feedback was handled.
      tx.emit('task.pr_ready', { taskId: t.id, number, url: t.pr.url, orderId: ctx.order.id, fixRound: t.fixRound?.round ?? null });
    });
    ctx.progress(`${task.id}: PR #${number} ready for review (${task.pr.url})`);
    return { outcome: 'ok', note: `PR #${number} is ready for a human's review` };
  };
}

/** The `mark_ready` tool. */
export const markReadyTool: TaskTool = createMarkReadyTool();
