/**
 * Tool `run_acceptance` (effect `run_acceptance` of polly-task): Polly itself runs the task's
 * acceptance commands (or `acceptance.commands` of the config) in the worktree, each with the
 * configured timeout, inside Polly's OS sandbox with an allowlisted environment (no network unless
 * `acceptance.network`; fail closed unless `workers.allow_unconfined`).
 *
 * - green → `worktrees.commitAll` with the message `<title>\n\nPolly-Task: <id>` (everything the
 *   agent left, including when its own `git commit` failed in a sandbox: orchestration case 8, test/workers/orchestration-workers.test.ts),
 *   record `headCommit`, `checks`, clear `feedback` → ok;
 * - red → store {@link formatCheckFeedback} as the task's `feedback` for `send_followup`, record
 *   `checks` → a permanent failure: TESTS_RED at once (the workflow bounds the fix attempts).
 *
 * The run is wrapped in the ref guard (./ref-guard-step.ts): a ref or git metadata file changed by
 * the checks fails the task at once, and nothing is committed.
 *
 * Idempotent: a re-run after a crash finds nothing left to commit and records the branch tip.
 */
import { existsSync } from 'node:fs';
import { formatCheckFeedback, runAcceptance } from '../../workers/acceptance.js';
import { createGitRunner } from '../../workers/git/git.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { isPollyError } from '../core/errors.js';
import type { TaskTool } from './types.js';
import { guardFailure, withRefGuard } from './ref-guard-step.js';
import { secretScanStep } from './secret-scan-step.js';
import { refusalLines, sandboxRefusalFailure } from './sandbox-refusals.js';
import { transitionTask } from '../registry/task-lifecycle.js';

/** The commit message Polly writes for a task's work. */
export function taskCommitMessage(task: { id: string; title: string }): string {
  return `${task.title.trim() || `Task ${task.id}`}\n\nPolly-Task: ${task.id}\n`;
}

/** The `run_acceptance` tool (see the module doc). */
export const runAcceptanceTool: TaskTool = async (ctx) => {
  const task = ctx.task;
  if (!task.worktree || !existsSync(task.worktree)) {
    return { outcome: 'failure', permanent: true, note: `run_acceptance: the worktree of task ${task.id} (${task.worktree ?? 'none recorded'}) is gone; dispatch it again` };
  }
  const commands = task.acceptance.commands.length > 0 ? task.acceptance.commands : ctx.config.acceptance.commands;
  ctx.progress(`${task.id}: running ${commands.length} acceptance command(s)`);
  await ctx.store.update((draft) => {
    const t = draft.tasks[task.id];
    if (t && t.status !== 'checking') transitionTask(t, 'checking', { at: new Date().toISOString() });
  });
  let confinement: ReturnType<typeof commandSandbox>;
  try {
    confinement = commandSandbox({
      repoRoot: ctx.repoRoot,
      worktree: task.worktree,
      worktreesDir: resolveWorktreesDir(ctx.repoRoot, ctx.config.worktrees.dir),
      network: ctx.config.acceptance.network ?? false,
      allowUnconfined: ctx.config.workers.allow_unconfined ?? false,
      passthrough: ctx.config.workers.env_passthrough ?? [],
    });
  } catch (error) {
    if (!isPollyError(error)) throw error;
    return { outcome: 'failure', permanent: true, note: `run_acceptance: ${error.message}` };
  }
  if (confinement.warning) ctx.progress(`${task.id}: ${confinement.warning}`);
  const { value: outcome, violation } = await withRefGuard(ctx, 'acceptance', () =>
    runAcceptance({
      cwd: task.worktree!,
      commands,
      timeoutSeconds: ctx.config.acceptance.timeout,
      env: confinement.env,
      sandbox: confinement.sandbox,
      signal: ctx.signal,
    }),
  );
  // A ref moved while the checks ran (a worker-written test, unconfined or through a hole): nothing
  // is committed, the task fails.
  if (violation) return guardFailure(violation);
  const refused = refusalLines(outcome.results.map((r) => r.output));
  if (refused.length > 0) return sandboxRefusalFailure(ctx, 'acceptance', refused);
  if (!outcome.green) {
    const feedback = formatCheckFeedback(outcome.results);
    const failed = outcome.results.find((r) => r.exitCode !== 0);
    const why = failed ? `${failed.command} ${failed.timedOut ? 'timed out' : `exited ${failed.exitCode ?? 'without starting'}`}` : 'not every command ran';
    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t) return;
      t.checks = outcome.results;
      t.feedback = feedback;
      transitionTask(t, 'fixing', { reason: `acceptance red: ${why}`, at: new Date().toISOString() });
      tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: false, failed: why });
    });
    // Red is a result, not a fault: it goes back to the agent at once (TESTS_RED), instead of
    // re-running the same code under the effect's retry policy.
    return { outcome: 'failure', permanent: true, note: `run_acceptance: red (${why})` };
  }
  // Before anything is committed: a token or key left in the worktree never enters a commit.
  const secrets = await secretScanStep(ctx, 'commit', null);
  if (secrets) return secrets;
  const commit =
    (await ctx.worktrees.commitAll({ id: task.id, message: taskCommitMessage(task) })) ??
    (await createGitRunner().run(['rev-parse', 'HEAD'], { cwd: task.worktree })).stdout.trim();
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return;
    t.checks = outcome.results;
    t.feedback = null;
    t.headCommit = commit;
    transitionTask(t, 'green', { reason: null, at: new Date().toISOString() });
    tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: true, headCommit: commit });
  });
  return { outcome: 'ok', note: `run_acceptance: green (${commands.length} command(s)); committed ${commit.slice(0, 12)} on ${task.branch ?? `polly/${task.id}`}` };
};
