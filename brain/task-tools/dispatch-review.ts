/**
 * Tool `dispatch_review` (effect `dispatch_reviewer` of polly-task): one cross-review round.
 *
 * 1. The diff `base...polly/<id>` is produced from the repository root and put in a review sandbox
 *    (workers/review-sandbox.ts: a scratch dir under the OS temp dir with DIFF.patch + CONTRACT.md;
 *    nothing in it or in the prompt names the worktree).
 * 2. The reviewer (`task.reviewer`, set by open_draft_pr) runs one turn through the worker
 *    supervisor with purpose `review`, gate role `review` (read-only), cwd = the scratch dir.
 * 3. Its final text is parsed with `parseFindings`; when it does not parse, one more turn in the
 *    same session asks for the JSON alone.
 * 4. The findings are recorded on the task (a ReviewRecord carrying this order's id) and posted as
 *    one PR review: line comments on diff lines, the rest in the body. The event is `COMMENT` on
 *    GitHub (GitHub refuses REQUEST_CHANGES/APPROVE from the PR's author, which is Polly's token) and
 *    `REQUEST_CHANGES` on the local forge when a finding is blocking.
 *
 * A review turn in which the reviewer tried anything its read-only role may never do (a write the
 * sandbox refused, a `blast_radius.*` command the gate refused, a call of a tool the role was not
 * given: ./review-attempts.ts) fails the task, naming it, before its findings are read.
 *
 * Outcomes: zero blocking → `ok` (REVIEW_CLEAN). Blocking → the findings become `task.feedback` for
 * `send_followup` (they go to the implementer's session) and the outcome is a permanent `failure`
 * (REVIEW_BLOCKING: a result, not a fault). A reviewer that did not finish, or whose answer never
 * held valid findings, is a transient `failure` (retried, then REVIEW_FAILED).
 *
 * Idempotent per order id: the supervisor adopts a reviewer run started by an earlier attempt of the
 * same order; a ReviewRecord already written for the order is reused, and its review is posted only
 * if it was not posted yet.
 */
import { homedir } from 'node:os';
import { isPollyError } from '../core/errors.js';
import type { ReviewInput } from '../forge/forge.js';
import type { ReviewRecord, TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import type { Harness } from '../core/vocabulary.js';
import { commentableLines, parseFindings, reviewFromFindings, type ReviewFindings } from '../../workers/review-findings.js';
import { repositoryDefaultBranch } from '../../workers/git/repo.js';
import { createGitRunner, type GitRunner } from '../../workers/git/git.js';
import { createReviewSandbox, produceReviewDiff, type ReviewSandbox } from '../../workers/review-sandbox.js';
import { chooseReviewer } from './open-draft-pr.js';
import { taskBranch } from './push.js';
import { guardFailure, withRefGuard } from './ref-guard-step.js';
import { decisionLogMark } from './gate-attempts.js';
import { reviewAttemptFailure, reviewTurnAttempts, triedAnything } from './review-attempts.js';
import { GATE_DECISIONS_FILE } from '../../gate/decision-log.js';
import { join } from 'node:path';
import { workerTurnRequest } from './dispatch.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';
import type { WorkerTurnResult } from '../../workers/worker-turn.js';
import { createBudgetWatch, modelEndpoint, parkForBudget, recordTurnUsage, withMeter, type BudgetStop, type BudgetWatch } from './turn-budget.js';

/**
 * A ReviewRecord as this tool writes it: plus the work order that produced it and the forge's
 * review id once posted (additive fields; readers of ReviewRecord ignore them).
 */
export type PollyReviewRecord = ReviewRecord & { orderId?: string; forgeReviewId?: number | null };

export interface DispatchReviewToolOptions {
  git?: GitRunner;
  /** Parent of the scratch directories (default: the OS temp dir). */
  sandboxRoot?: string;
  /** Keep the scratch directory after the round (default false: it is removed; the diff is in git). */
  keepSandbox?: boolean;
  /** Per-turn timeout of the reviewer, ms (default 20 minutes). */
  turnTimeoutMs?: number;
  /** Called with the sandbox before the reviewer starts (tests look at it). */
  onSandbox?: (sandbox: ReviewSandbox) => void;
}

/** The follow-up text the implementer gets for blocking findings (stored as `task.feedback`). Pure. */
export function blockingFeedback(taskId: string, reviewer: string, round: number, findings: ReviewFindings): string {
  const lines = [
    `The cross-review of task ${taskId} by ${reviewer} (round ${round}) found ${findings.blocking.length} blocking problem${findings.blocking.length === 1 ? '' : 's'}:`,
    ...findings.blocking.map((f) => `- ${f.file}:${f.line} — ${f.message}`),
  ];
  if (findings.nonBlocking.length) lines.push('', 'Non-blocking suggestions (optional):', ...findings.nonBlocking.map((f) => `- ${f.file}:${f.line} — ${f.message}`));
  lines.push('', 'Fix the blocking problems in your worktree and commit; the acceptance commands run again and a new review follows.');
  return lines.join('\n');
}

const JSON_RETRY_PROMPT = (error: string) =>
  [
    `Your answer did not hold valid review findings: ${error}`,
    'Reply now with only the JSON object {"blocking": [{"file", "line", "message"}], "non_blocking": [...]} and nothing else. Do not change any file.',
  ].join('\n');

function summarize(r: WorkerTurnResult): string {
  return `${r.status}${r.message ? `: ${r.message}` : ''}`.slice(0, 400);
}

/** Create the `dispatch_review` tool. */
export function createDispatchReviewTool(options: DispatchReviewToolOptions = {}): TaskTool {
  const git = options.git ?? createGitRunner();
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const { task, order } = ctx;
    if (!task.pr) return { outcome: 'failure', permanent: true, note: `task ${task.id} has no pull request to review; open_draft_pr must run first.` };
    let reviewer: Harness;
    if (task.reviewer && task.reviewer !== task.worker) reviewer = task.reviewer;
    else {
      const choice = chooseReviewer(task, ctx.config);
      if ('error' in choice) return { outcome: 'failure', permanent: true, note: choice.error };
      reviewer = choice.reviewer;
    }

    const earlier = (task.reviews as PollyReviewRecord[]).find((r) => r.orderId === order.id);
    if (earlier) {
      const findings: ReviewFindings = { blocking: earlier.blocking, nonBlocking: earlier.nonBlocking };
      if (earlier.forgeReviewId === null || earlier.forgeReviewId === undefined) {
        const diff = await produceDiff(ctx, git);
        const posted = await post(ctx, findings, reviewer, earlier.round, diff);
        if ('note' in posted) return posted;
      }
      return finish(ctx, reviewer, earlier.round, findings, true);
    }

    if (!task.baseBranch) return { outcome: 'failure', permanent: true, note: `task ${task.id} has no base branch; cannot produce the review diff.` };
    // A budget already spent: no review turn starts (the task is parked with its work).
    const spentAlready = (await createBudgetWatch(ctx, ctx.signal)).stopped();
    if (spentAlready) return parkForBudget(ctx, spentAlready);
    const round = task.reviews.length + 1;
    let diff: string;
    try {
      diff = await produceDiff(ctx, git);
    } catch (error) {
      return { outcome: 'failure', note: `cannot produce the diff to review: ${isPollyError(error) ? error.message : String(error)}` };
    }
    let sandbox: ReviewSandbox;
    try {
      sandbox = await createReviewSandbox({ task, diff, round, repoRoot: ctx.repoRoot, ...(options.sandboxRoot ? { stateRoot: options.sandboxRoot } : {}) });
    } catch (error) {
      return { outcome: 'failure', note: `cannot create the review sandbox: ${isPollyError(error) ? error.message : String(error)}` };
    }
    options.onSandbox?.(sandbox);
    let findings: ReviewFindings;
    /** Set when a review turn reached the task's (or goal's) budget: the task is parked. */
    let stopped: BudgetStop | null = null;
    try {
      await setStatus(ctx, 'reviewing');
      ctx.progress(`${task.id}: review round ${round} by ${reviewer}`);
      const turn = async (prompt: string, orderId: string, resume: string | null): Promise<WorkerTurnResult> => {
        const watch = await createBudgetWatch(ctx, ctx.signal);
        const result = await runReviewTurn(prompt, orderId, resume, watch);
        await ctx.store.update((draft, tx) =>
          recordTurnUsage(draft, tx, task.id, result, {
            role: 'review',
            harness: reviewer,
            orderId,
            at: ctx.clock().toISOString(),
            endpoint: modelEndpoint(reviewer, ctx.config, ctx.agentEnv),
          }),
        );
        stopped = watch.stopped();
        return result;
      };
      const runReviewTurn = (prompt: string, orderId: string, resume: string | null, watch: BudgetWatch) =>
        ctx.supervisor.runTurn(
          withMeter(
            workerTurnRequest(ctx.config, {
              taskId: task.id,
              orderId,
              harness: reviewer,
              purpose: 'review',
              cwd: sandbox.dir,
              prompt,
              resumeSessionId: resume,
              model: ctx.config.workers[reviewer].model ?? null,
              gateContext: { repoRoot: ctx.repoRoot, worktree: sandbox.dir, branch: taskBranch(task), defaultBranch: repositoryDefaultBranch(ctx.repoRoot), home: homedir() },
              env: ctx.agentEnv,
              timeoutMs: options.turnTimeoutMs ?? 20 * 60_000,
            }),
            watch,
            ctx.config,
          ),
          { signal: watch.signal, onEvent: (e) => watch.onEvent(e) },
        );
      const decisions = join(ctx.repoRoot, GATE_DECISIONS_FILE);
      const mark = decisionLogMark(decisions);
      const guarded = await withRefGuard(ctx, `the ${reviewer} review turn`, () => turn(sandbox.prompt, order.id, null), {
        allowLocal: [],
        confinement: (r) => r.sandboxMounts,
      });
      if (guarded.violation) return guardFailure(guarded.violation);
      if (stopped) return parkForBudget(ctx, stopped, { workerId: guarded.value.workerId });
      const first = guarded.value;
      const attempts = reviewTurnAttempts(first, reviewer, { path: decisions, mark, dir: sandbox.dir });
      if (triedAnything(attempts)) return reviewAttemptFailure(ctx, `the ${reviewer} review turn`, attempts);
      if (first.status !== 'ok') return { outcome: 'failure', note: `reviewer ${reviewer} did not finish: ${summarize(first)}` };
      try {
        findings = parseFindings(first.finalText);
      } catch (error) {
        const why = isPollyError(error) ? error.message : String(error);
        if (!first.sessionId) return { outcome: 'failure', note: `reviewer ${reviewer} answered without valid findings and without a session to ask again: ${why}` };
        const retryMark = decisionLogMark(decisions);
        const retried = await withRefGuard(ctx, `the ${reviewer} review turn (JSON retry)`, () => turn(JSON_RETRY_PROMPT(why), `${order.id}#json-retry`, first.sessionId), {
          allowLocal: [],
          confinement: (r) => r.sandboxMounts,
        });
        if (retried.violation) return guardFailure(retried.violation);
        if (stopped) return parkForBudget(ctx, stopped, { workerId: retried.value.workerId });
        const second = retried.value;
        const again = reviewTurnAttempts(second, reviewer, { path: decisions, mark: retryMark, dir: sandbox.dir });
        if (triedAnything(again)) return reviewAttemptFailure(ctx, `the ${reviewer} review turn (JSON retry)`, again);
        if (second.status !== 'ok') return { outcome: 'failure', note: `reviewer ${reviewer} did not finish the JSON retry: ${summarize(second)}` };
        try {
          findings = parseFindings(second.finalText);
        } catch (again) {
          return { outcome: 'failure', note: `reviewer ${reviewer} gave no valid findings after one retry: ${isPollyError(again) ? again.message : String(again)}` };
        }
      }
    } finally {
      if (!options.keepSandbox) await sandbox.dispose();
    }

    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t) return;
      const rec: PollyReviewRecord = {
        reviewer,
        round,
        blocking: findings.blocking,
        nonBlocking: findings.nonBlocking,
        at: ctx.clock().toISOString(),
        orderId: order.id,
        forgeReviewId: null,
      };
      t.reviews.push(rec);
      t.reviewRounds = round;
      t.updatedAt = rec.at;
      tx.emit('task.reviewed', { taskId: t.id, reviewer, round, blocking: findings.blocking.length, nonBlocking: findings.nonBlocking.length, orderId: order.id });
    });
    const posted = await post(ctx, findings, reviewer, round, diff);
    if ('note' in posted) return posted;
    return finish(ctx, reviewer, round, findings, false);
  };
}

async function produceDiff(ctx: TaskToolContext, git: GitRunner): Promise<string> {
  return (await produceReviewDiff({ repoRoot: ctx.repoRoot, baseBranch: ctx.task.baseBranch ?? 'main', head: taskBranch(ctx.task), git })).diff;
}

/** Post the findings as one review on the task's PR and remember the forge's review id. */
async function post(ctx: TaskToolContext, findings: ReviewFindings, reviewer: Harness, round: number, diff: string): Promise<{ id: number } | TaskToolOutcome> {
  const pr = ctx.task.pr!;
  const base = reviewFromFindings(findings, { reviewer, round, commentable: commentableLines(diff) });
  const review: ReviewInput = { ...base, event: ctx.forge.kind === 'local' && findings.blocking.length > 0 ? 'REQUEST_CHANGES' : 'COMMENT' };
  let id: number;
  try {
    id = (await ctx.forge.postReview(pr.number, review)).id;
  } catch (error) {
    return { outcome: 'failure', note: `posting the review on PR #${pr.number} failed: ${isPollyError(error) ? error.message : String(error)}` };
  }
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    const rec = (t?.reviews as PollyReviewRecord[] | undefined)?.find((r) => r.orderId === ctx.order.id);
    if (!t || !rec) return;
    rec.forgeReviewId = id;
    tx.emit('task.review_posted', { taskId: t.id, number: pr.number, reviewId: id, event: review.event, comments: review.comments.length });
  });
  return { id };
}

async function finish(ctx: TaskToolContext, reviewer: Harness, round: number, findings: ReviewFindings, reused: boolean): Promise<TaskToolOutcome> {
  const counts = `${findings.blocking.length} blocking, ${findings.nonBlocking.length} non-blocking`;
  if (findings.blocking.length === 0) {
    await ctx.store.update((draft) => {
      const t = draft.tasks[ctx.task.id];
      if (t?.feedback) t.feedback = null;
    });
    return { outcome: 'ok', note: `review round ${round} by ${reviewer}: ${counts}${reused ? ' (recorded earlier)' : ''}` };
  }
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    t.feedback = blockingFeedback(t.id, reviewer, round, findings);
    transitionTask(t, 'fixing', { reason: `review round ${round} by ${reviewer}: ${counts}`, at: ctx.clock().toISOString() });
    tx.emit('task.feedback', { taskId: t.id, source: 'review', round, blocking: findings.blocking.length });
  });
  return { outcome: 'failure', permanent: true, note: `review round ${round} by ${reviewer}: ${counts}; findings sent back to the implementer` };
}

async function setStatus(ctx: TaskToolContext, status: TaskRecord['status']): Promise<void> {
  await ctx.store.update((draft) => {
    const t = draft.tasks[ctx.task.id];
    if (t && t.status !== status) transitionTask(t, status, { at: ctx.clock().toISOString() });
  });
}

/** The `dispatch_review` tool with default options. */
export const dispatchReviewTool: TaskTool = createDispatchReviewTool();
