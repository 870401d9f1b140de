/**
 * Tool `push` (effect `push_branch` of polly-task): a plain `git push origin polly/<id>` of the
 * task branch, through workers/git.ts, from the task's worktree.
 *
 * - Never a force: the refspec has no leading `+`, no `--force*` flag; a non-fast-forward rejection
 *   is a permanent failure whose note quotes git's reason (retrying cannot fix it, and Polly never
 *   force-pushes).
 * - Idempotent: when the remote already has the branch at the local tip, the outcome is `ok`
 *   without pushing (a Brain killed after the push re-runs this order).
 * - Refuses to push the base or the remote's default branch (only `polly/<id>` goes out), and a
 *   branch still at the task's base commit (the worker made no change: nothing is pushed).
 * - Records `task.headCommit` (the pushed commit) and journals `task.pushed`. No action data (the
 *   PUSHED action takes none; the runtime refuses unknown data fields).
 */
import { existsSync } from 'node:fs';
import { isPollyError } from '../core/errors.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { recordPollyRefWrite } from '../../workers/git/ref-guard.js';
import { secretScanStep } from './secret-scan-step.js';
import { NO_CHANGE, type TaskTool, type TaskToolContext, type TaskToolOutcome } from './types.js';

export interface PushToolOptions {
  git?: GitRunner;
  /** Remote name (default `origin`). */
  remote?: string;
}

/** The branch a task pushes: its recorded branch, else `polly/<id>`. */
export function taskBranch(task: { id: string; branch: string | null }): string {
  return task.branch ?? `polly/${task.id}`;
}

/** Create the `push` tool. */
export function createPushTool(options: PushToolOptions = {}): TaskTool {
  const git = options.git ?? createGitRunner();
  const remote = options.remote ?? 'origin';
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const { task } = ctx;
    const branch = taskBranch(task);
    if (!/^polly\//.test(branch) || branch === task.baseBranch) {
      return {
        outcome: 'failure',
        permanent: true,
        note: `refusing to push ${branch}: Polly pushes only its task branches (polly/<id>), never the base ${task.baseBranch ?? '(none)'}.`,
      };
    }
    const cwd = task.worktree && existsSync(task.worktree) ? task.worktree : ctx.repoRoot;
    const tipRun = await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], { cwd, okExitCodes: [1, 128] });
    const tip = tipRun.exitCode === 0 ? firstLine(tipRun) : null;
    if (!tip) return { outcome: 'failure', permanent: true, note: `task branch ${branch} does not exist; nothing to push.` };
    if (task.baseCommit && tip === task.baseCommit) {
      return { outcome: 'failure', permanent: true, note: `${NO_CHANGE}: ${branch} is still at its base ${tip.slice(0, 12)}; nothing to push.` };
    }

    let remoteTip: string | null;
    try {
      const ls = await git.run(['ls-remote', '--heads', remote, `refs/heads/${branch}`], { cwd, timeoutMs: 60_000 });
      remoteTip =
        ls.stdout
          .split('\n')
          .map((l) => l.split('\t'))
          .find((p) => p[1] === `refs/heads/${branch}`)?.[0] ?? null;
    } catch (error) {
      return { outcome: 'failure', note: `cannot read ${remote}: ${isPollyError(error) ? error.message : String(error)}` };
    }
    if (remoteTip === tip) {
      await record(ctx, branch, tip, true);
      return { outcome: 'ok', note: `${remote} already has ${branch} at ${tip.slice(0, 12)}` };
    }
    // What goes out is scanned again (a worker without a sandbox may have committed itself).
    const secrets = await secretScanStep(ctx, 'push', tip, git);
    if (secrets) return secrets;
    recordPollyRefWrite('remote', `refs/heads/${branch}`, tip, ctx.repoRoot);
    // A plain push of the one branch: no "+" in the refspec, no --force of any kind; no pre-push
    // hook (--no-verify, and the runner's core.hooksPath=/dev/null).
    const push = await git.run(['push', '--porcelain', '--no-verify', remote, `refs/heads/${branch}:refs/heads/${branch}`], { cwd, okExitCodes: [1, 128], timeoutMs: 300_000 });
    if (push.exitCode !== 0) {
      const text = `${push.stdout}\n${push.stderr}`;
      const nonFastForward = /\[rejected\]|non-fast-forward|fetch first|\(stale info\)/.test(text);
      const reason = (push.stderr.trim() || push.stdout.trim()).split('\n').slice(-4).join(' | ').slice(0, 600);
      if (nonFastForward) {
        return {
          outcome: 'failure',
          permanent: true,
          note: `git push ${remote} ${branch} was rejected as a non-fast-forward (${remote} has ${remoteTip?.slice(0, 12) ?? 'another commit'}, local ${tip.slice(0, 12)}): ${reason}. Polly never force-pushes; integrate ${remote}/${branch} into the task branch first.`,
        };
      }
      return { outcome: 'failure', note: `git push ${remote} ${branch} failed (exit ${push.exitCode}): ${reason}` };
    }
    await record(ctx, branch, tip, false);
    ctx.progress(`${task.id}: pushed ${branch} at ${tip.slice(0, 12)}`);
    return { outcome: 'ok', note: `pushed ${branch} to ${remote} at ${tip.slice(0, 12)}` };
  };
}

async function record(ctx: TaskToolContext, branch: string, commit: string, already: boolean): Promise<void> {
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    if (t.headCommit === commit && t.branch === branch && already) return;
    t.headCommit = commit;
    t.branch = branch;
    t.updatedAt = ctx.clock().toISOString();
    tx.emit('task.pushed', { taskId: t.id, branch, commit, orderId: ctx.order.id, already });
  });
}

/** The `push` tool with the default git runner. */
export const pushTool: TaskTool = createPushTool();
