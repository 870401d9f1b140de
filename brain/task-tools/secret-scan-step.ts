/**
 * The secret scan as a task step (workers/git/secret-scan.ts): before Polly commits a task's work
 * (`run_acceptance`) and before it pushes (`push`). A finding fails the task: status `failed`,
 * reason `secret scan before <commit|push>: <file>:<line>:<column> <rule>: <masked message>; …`,
 * journaled as `guard.secret_found` `{taskId, orderId, stage, findings}`; nothing is committed or
 * pushed, and the files stay in the worktree for the user to look at.
 */
import { createGitRunner, type GitRunner } from '../../workers/git/git.js';
import { describeFindings, scanForSecrets } from '../../workers/git/secret-scan.js';
import type { TaskToolContext, TaskToolOutcome } from './types.js';
import { transitionTask } from '../registry/task-lifecycle.js';

/**
 * Scan the task's changes since its base commit: the worktree (`head` null) or up to `head`.
 * @returns null when clean (or the task has no worktree or base to compare with), else the
 *   permanent failure to return from the tool.
 * @throws PollyError `git_failed` when git cannot list the changes.
 */
export async function secretScanStep(ctx: TaskToolContext, stage: 'commit' | 'push', head: string | null, git: GitRunner = createGitRunner()): Promise<TaskToolOutcome | null> {
  const task = ctx.task;
  if (!task.worktree || !task.baseCommit) return null;
  const scan = await scanForSecrets({ git, cwd: task.worktree, base: task.baseCommit, head });
  if (scan.findings.length === 0) return null;
  const reason = `secret scan before ${stage}: ${describeFindings(scan.findings)}. Nothing was ${stage === 'commit' ? 'committed' : 'pushed'}; remove the secret from the worktree (and rotate it if it is real).`;
  await ctx.store.update((draft, tx) => {
    tx.emit('guard.secret_found', { taskId: task.id, orderId: ctx.order.id, stage, findings: scan.findings });
    const t = draft.tasks[task.id];
    if (t) transitionTask(t, 'failed', { at: ctx.clock().toISOString(), reason: reason.slice(0, 2000) });
  });
  ctx.progress(`${task.id}: ${reason}`);
  return { outcome: 'failure', permanent: true, note: reason };
}
