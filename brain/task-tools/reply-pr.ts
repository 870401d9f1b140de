/**
 * Tool `reply_pr` (effect `reply_on_pr` of polly-task): after a fix round's plain push, one comment
 * on the PR saying what changed — the events the round answers (`task.fixRound.summary`), the
 * commits pushed since the round started (`git log <startHead>..<head>`, read from git, never from
 * the agent's words), the base merged in, the acceptance result and the re-review.
 *
 * Idempotent per order id: the comment body carries `<!-- polly:fix-round <task> <round> -->`, and
 * a journaled `task.pr_reply` for this order means it was posted (a Brain killed after posting
 * re-runs the order and posts nothing).
 */
import { isPollyError } from '../core/errors.js';
import { createGitRunner, type GitRunner } from '../../workers/git/git.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';

export interface ReplyPrToolOptions {
  git?: GitRunner;
}

/** The reply's text (markdown). `commits`: `sha subject` lines, oldest first. Pure. */
export function fixRoundReply(task: Pick<TaskRecord, 'id' | 'fixRound' | 'checks' | 'reviews' | 'reviewer'>, commits: readonly string[]): string {
  const round = task.fixRound;
  const what: Record<string, string> = { FEEDBACK: 'the requested changes', CHECKS_FAILED: 'the failing checks', CONFLICTS: 'the conflict with the base' };
  const lines = [`<!-- polly:fix-round ${task.id} ${round?.round ?? 0} -->`, `**Polly fix round ${round?.round ?? '?'}:** ${round ? what[round.action] : 'a fix'}.`, ''];
  if (round?.summary.length) lines.push('Answering:', ...round.summary.map((s) => `- ${s}`), '');
  if (round?.baseMerge) {
    const m = round.baseMerge;
    lines.push(
      `Merged \`${m.ref}\` (${m.commit.slice(0, 12)}) into the branch${m.files.length ? `; conflicts resolved in ${m.files.map((f) => `\`${f}\``).join(', ')}` : ' (no conflicts)'}.`,
      '',
    );
  }
  lines.push(
    commits.length ? `Pushed ${commits.length} commit${commits.length === 1 ? '' : 's'} (a plain push, no force):` : 'No new commit was needed.',
    ...commits.map((c) => `- ${c}`),
    '',
  );
  const checks = task.checks ?? [];
  if (checks.length) lines.push(`Acceptance (run by Polly): ${checks.every((c) => c.exitCode === 0) ? 'green' : 'red'} — ${checks.map((c) => `\`${c.command}\``).join(', ')}.`);
  const review = task.reviews.at(-1);
  if (review) lines.push(`Re-review by ${review.reviewer}: ${review.blocking.length === 0 ? 'no blocking finding' : `${review.blocking.length} blocking finding(s)`}.`);
  return `${lines.join('\n').trim()}\n`;
}

/** Create the `reply_pr` tool. */
export function createReplyPrTool(options: ReplyPrToolOptions = {}): TaskTool {
  const git = options.git ?? createGitRunner();
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const task = (await ctx.store.read()).tasks[ctx.task.id] ?? ctx.task;
    if (!task.pr) return { outcome: 'failure', permanent: true, note: `reply_pr: task ${task.id} has no pull request` };
    const journal = await ctx.store.journal();
    if (journal.some((e) => e.kind === 'task.pr_reply' && e.data.taskId === task.id && e.data.orderId === ctx.order.id)) {
      return { outcome: 'ok', note: `reply_pr: already replied on PR #${task.pr.number} for this round` };
    }
    let commits: string[] = [];
    const start = task.fixRound?.startHead;
    if (start && task.headCommit && task.worktree) {
      try {
        const log = await git.run(['log', '--reverse', '--format=%h %s', `${start}..${task.headCommit}`], { cwd: task.worktree, okExitCodes: [128] });
        commits = log.stdout.split('\n').filter(Boolean);
      } catch {
        commits = [];
      }
    }
    try {
      const { id } = await ctx.forge.comment(task.pr.number, fixRoundReply(task, commits));
      await ctx.store.update((_draft, tx) =>
        tx.emit('task.pr_reply', { taskId: task.id, number: task.pr!.number, round: task.fixRound?.round ?? null, commentId: id, commits: commits.length, orderId: ctx.order.id }),
      );
      ctx.progress(`${task.id}: replied on PR #${task.pr.number} (${commits.length} commit(s))`);
      return { outcome: 'ok', note: `replied on PR #${task.pr.number}: ${commits.length} commit(s) pushed in fix round ${task.fixRound?.round ?? '?'}` };
    } catch (error) {
      return { outcome: 'failure', note: `reply_pr: commenting on PR #${task.pr.number} failed: ${isPollyError(error) ? error.message : String(error)}` };
    }
  };
}

/** The `reply_pr` tool. */
export const replyPrTool: TaskTool = createReplyPrTool();
