/**
 * Tool `open_draft_pr` (effect `open_pr_draft` of polly-task): open the task's draft pull request
 * against its base branch, with the body of brain/pr-body.ts, and choose the cross-reviewer.
 *
 * - Idempotent per task: a task that already has a PR gets it back; an open PR for `polly/<id>` →
 *   base found on the forge (`Forge.findOpenPullRequest`: opened by an attempt killed before
 *   it recorded, or by a run whose registry was lost since) is adopted, its body rewritten with this
 *   run's checks and reviews; a second PR for the same head is never opened.
 * - The reviewer: the task's planned reviewer, else the first of `config.review.pairs[<worker>]`.
 *   Never the worker's own vendor: a misconfiguration is a permanent failure that says what to fix,
 *   and is found before anything is opened.
 * - Ok data `{reviewer: <harness>}` (the PR_OPENED action's data). Records `task.pr`,
 *   `task.reviewer`, status `pr_open`; journals `task.pr_opened`.
 */
import { isPollyError } from '../core/errors.js';
import type { PollyConfig } from '../config/config-schema.js';
import { prBodyInputOf, renderPrBody } from '../forge/pr-body.js';
import { reviewerFor } from '../plan/plan-agents.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { HARNESSES, HARNESS_VENDOR, type Harness } from '../core/vocabulary.js';
import type { OpenedPullRequest } from '../forge/forge.js';
import { taskBranch } from './push.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';

/**
 * The reviewer of `task`: its planned reviewer, else the first of `review.pairs[worker]`. Pure.
 * @returns `{reviewer}` or `{error}` (a sentence naming the value at fault and where to fix it).
 */
export function chooseReviewer(task: Pick<TaskRecord, 'id' | 'worker' | 'reviewer'>, config: Pick<PollyConfig, 'review'>): { reviewer: Harness } | { error: string } {
  const planned = task.reviewer;
  const reviewer = reviewerFor(task, config.review.pairs);
  const where = planned ? `the plan's reviewer for task ${task.id}` : `review.pairs.${task.worker} in .polly/config.yaml`;
  if (!reviewer)
    return {
      error: `no reviewer for task ${task.id}: ${where} is empty. List at least one other vendor, e.g. review.pairs.${task.worker}: [${HARNESSES.filter((h) => h !== task.worker).join(', ')}].`,
    };
  if (!(HARNESSES as readonly string[]).includes(reviewer))
    return { error: `reviewer ${JSON.stringify(reviewer)} (${where}) is not a harness; use one of ${HARNESSES.join(', ')}.` };
  if (reviewer === task.worker || HARNESS_VENDOR[reviewer] === HARNESS_VENDOR[task.worker]) {
    return {
      error: `reviewer ${reviewer} (${where}) is the same vendor as the worker ${task.worker}; a cross-review needs another vendor. Use one of ${HARNESSES.filter((h) => HARNESS_VENDOR[h] !== HARNESS_VENDOR[task.worker]).join(', ')}.`,
    };
  }
  return { reviewer };
}

/** The PR title Polly uses. */
export function pullRequestTitle(task: Pick<TaskRecord, 'id' | 'title'>): string {
  return `${task.id}: ${task.title}`.slice(0, 250);
}

/** Create the `open_draft_pr` tool. */
export function createOpenDraftPrTool(): TaskTool {
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const { task } = ctx;
    const choice = chooseReviewer(task, ctx.config);
    if ('error' in choice) return { outcome: 'failure', permanent: true, note: choice.error };
    const { reviewer } = choice;
    if (task.pr) {
      await record(ctx, null, reviewer);
      return { outcome: 'ok', data: { reviewer }, note: `task ${task.id} already has PR #${task.pr.number} (${task.pr.url})` };
    }
    if (!task.baseBranch)
      return { outcome: 'failure', permanent: true, note: `task ${task.id} has no base branch recorded; its worktree must be created from a branch before a PR can target it.` };
    const head = taskBranch(task);

    let opened: OpenedPullRequest | null = null;
    let adopted = false;
    /** The issue line written into the body (`Fixes #N`), recorded with the PR for the landing sync. */
    let issueLine: string | null = null;
    try {
      const reg = await ctx.store.read();
      const fresh = reg.tasks[task.id] ?? task;
      const input = prBodyInputOf(fresh, reg);
      issueLine = input.issueLine ?? null;
      const body = renderPrBody(input);
      const found = await ctx.forge.findOpenPullRequest(head, task.baseBranch);
      if (found) {
        // The PR an earlier run opened (a Brain killed before it recorded it, or a registry lost
        // since): reused, its description brought up to this run's checks, never a second PR.
        await ctx.forge.updateBody(found.number, body);
        opened = { forge: found.forge, number: found.number, url: found.url, state: found.state, headSha: found.headSha };
        adopted = true;
      } else {
        opened = await ctx.forge.openDraftPullRequest({ head, base: task.baseBranch, title: pullRequestTitle(task), body });
      }
    } catch (error) {
      const message = isPollyError(error) ? error.message : String(error);
      const permanent = isPollyError(error) && (error.code === 'bad_input' || error.code === 'not_found');
      return { outcome: 'failure', ...(permanent ? { permanent } : {}), note: `opening the draft PR ${head} → ${task.baseBranch} failed: ${message}` };
    }
    await record(ctx, { opened, adopted, issueLine }, reviewer);
    ctx.progress(`${task.id}: draft PR #${opened.number} ${opened.url} (reviewer ${reviewer})`);
    return { outcome: 'ok', data: { reviewer }, note: `${adopted ? 'adopted' : 'opened'} draft PR #${opened.number} ${head} → ${task.baseBranch}; reviewer ${reviewer}` };
  };
}

async function record(ctx: TaskToolContext, pr: { opened: OpenedPullRequest; adopted: boolean; issueLine: string | null } | null, reviewer: Harness): Promise<void> {
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    if (pr && !t.pr) {
      t.pr = { forge: pr.opened.forge, number: pr.opened.number, url: pr.opened.url, state: pr.opened.state, ...(pr.issueLine ? { issueLine: pr.issueLine } : {}) };
      transitionTask(t, 'pr_open', { at: ctx.clock().toISOString() });
      tx.emit('task.pr_opened', { taskId: t.id, number: pr.opened.number, url: pr.opened.url, forge: pr.opened.forge, reviewer, adopted: pr.adopted, orderId: ctx.order.id });
    }
    if (t.reviewer !== reviewer) t.reviewer = reviewer;
    t.updatedAt = ctx.clock().toISOString();
  });
}

/** The `open_draft_pr` tool. */
export const openDraftPrTool: TaskTool = createOpenDraftPrTool();
