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
 *   `checks` → a permanent failure: TESTS_RED at once (the workflow bounds the fix attempts);
 * - a command not found (exit 127: a program not installed, or hidden by the sandbox) → the task
 *   fails at once with a reason naming the command and what to do ({@link commandNotFoundReason}):
 *   the agent cannot fix the environment, so none of its attempts is spent;
 *
 * The run is wrapped in the ref guard (./ref-guard-step.ts): a ref or git metadata file changed by
 * the checks fails the task at once, and nothing is committed.
 *
 * In a fix round after the PR was ready (`task.fixRound`), the commit says so (`Fix round N: …`);
 * with the base being merged in (integrate_base left MERGE_HEAD), the checks are red at once while
 * a conflict marker is left in a file of the merge (`<<<<<<<`, `=======`, `>>>>>>>` lines: the worker
 * must resolve every conflict, never drop a side), and green commits the merge itself: a merge
 * commit with two parents (`Merge <remote>/<base> into polly/<id>`).
 *
 * Idempotent: a re-run after a crash finds nothing left to commit and records the branch tip.
 */
import { existsSync } from 'node:fs';
import { formatCheckFeedback, runAcceptance } from '../../workers/acceptance.js';
import { createGitRunner } from '../../workers/git/git.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { isPollyError } from '../core/errors.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';
import type { CommandResult } from '../../workers/proc/shell-command.js';
import { visibleText } from '../core/visible-text.js';
import { guardFailure, withRefGuard } from './ref-guard-step.js';
import { secretScanStep } from './secret-scan-step.js';
import { refusalLines, sandboxRefusalFailure } from './sandbox-refusals.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { readFileBelow } from '../../workers/agents/state-dir-files.js';
import { join } from 'node:path';
import { appliedMounts } from '../../workers/sandbox/sandbox-spec.js';
import { mergeHead, unmergedFiles } from './integrate-base.js';
import type { TaskRecord } from '../registry/registry-schema.js';

const MARKER = /^(<{7}|>{7})( |$)|^={7}$/;

/**
 * Conflict-marker lines left in `files` under `cwd`: `file:line: text`, at most 20. Only regular
 * files reached through real directories are read (workers/agents/state-dir-files.ts
 * `readFileBelow`): the worktree is the worker's, and a file it turned into a symlink (to a secret)
 * or a FIFO (which would block this synchronous read, and the Brain with it) is not followed.
 */
export function conflictMarkers(cwd: string, files: readonly string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    // null: deleted on one side and resolved by deleting, or not a regular file: no marker read.
    const text = readFileBelow(cwd, join(cwd, f));
    if (text === null) continue;
    text.split('\n').forEach((l, i) => {
      if (MARKER.test(l) && out.length < 20) out.push(`${f}:${i + 1}: ${l.slice(0, 60)}`);
    });
  }
  return out;
}

/** The commit message of a fix round's work, or of the base merged in. */
export function fixCommitMessage(task: Pick<TaskRecord, 'id' | 'title' | 'fixRound' | 'branch'>, merging: boolean): string {
  const round = task.fixRound!;
  const first =
    merging && round.baseMerge
      ? `Merge ${round.baseMerge.ref} into ${task.branch ?? `polly/${task.id}`}`
      : `Fix round ${round.round}: ${round.summary[0]?.slice(0, 60) ?? 'review feedback'}`;
  const body = round.summary.map((s) => `- ${s}`).join('\n');
  return `${first}\n\n${task.title.trim()}${body ? `\n\n${body}` : ''}\n\nPolly-Task: ${task.id}\n`;
}

/** The commit message Polly writes for a task's work. */
export function taskCommitMessage(task: { id: string; title: string }): string {
  return `${task.title.trim() || `Task ${task.id}`}\n\nPolly-Task: ${task.id}\n`;
}

/**
 * The exit status of a command the shell could not find (POSIX `sh`, "Command Search and
 * Execution": https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_09_01_01).
 */
export const COMMAND_NOT_FOUND = 127;

/**
 * The task's reason when acceptance command `result` exited {@link COMMAND_NOT_FOUND}: the
 * command, its exit code, the shell's own line (e.g. `sh: 1: python: not found`, ≤ 200 characters,
 * control characters shown as `\xNN`) and what to do. `sandboxed`: the command ran in Polly's
 * sandbox, which hides the real HOME (workers/sandbox/sandbox-profiles.ts), so a program found
 * there in the user's shell (pyenv, asdf, nvm shims) is not found by Polly. Pure.
 */
export function commandNotFoundReason(result: Pick<CommandResult, 'command' | 'output'>, sandboxed: boolean): string {
  const said = result.output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /not found|no such file/i.test(l))
    .pop();
  const where = sandboxed
    ? "it is not installed, or it resolves under your home directory (pyenv, asdf or nvm shims), which Polly's sandbox hides: install it outside HOME (a system package, or a virtualenv or node_modules/.bin inside the repository)"
    : 'it is not installed or not on the PATH Polly passes to commands';
  return (
    `acceptance command "${visibleText(result.command).slice(0, 200)}" exited ${COMMAND_NOT_FOUND} (command not found${said ? `: ${visibleText(said).slice(0, 200)}` : ''}): ` +
    `this is the environment, not the code, so no agent attempt was spent on it. The program ${where}. ` +
    "Run polly doctor (it names such commands), fix acceptance.commands or the task's own commands, then plan the task again."
  );
}

/**
 * Fail the task at once for a command that was not found (see {@link commandNotFoundReason}):
 * status `failed`, its checks recorded, no feedback stored (send_followup then does not resume the
 * agent), journaled as `task.checks` `{green: false, failed, notFound: true}`.
 */
async function commandNotFoundFailure(ctx: TaskToolContext, missing: CommandResult, results: CommandResult[], sandboxed: boolean): Promise<TaskToolOutcome> {
  const reason = commandNotFoundReason(missing, sandboxed);
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    t.checks = results;
    t.feedback = null;
    transitionTask(t, 'failed', { reason, at: new Date().toISOString() });
    tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: false, failed: `${missing.command} exited ${COMMAND_NOT_FOUND}`, notFound: true });
  });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { outcome: 'failure', permanent: true, note: `run_acceptance: ${reason}` };
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
  // The base being merged in: no conflict marker may be left in a file of the merge.
  const git = createGitRunner();
  const merging = (await mergeHead(git, task.worktree)) !== null;
  if (merging) {
    const files = [...new Set([...(task.fixRound?.baseMerge?.files ?? []), ...(await unmergedFiles(git, task.worktree))])];
    const left = conflictMarkers(task.worktree, files);
    if (left.length > 0) {
      const why = `conflict markers left in ${[...new Set(left.map((l) => l.split(':')[0]))].join(', ')}`;
      await ctx.store.update((draft, tx) => {
        const t = draft.tasks[task.id];
        if (!t) return;
        t.feedback = `The merge of the base is not resolved: conflict markers are left in these lines:\n\n${left.map((l) => `- ${l}`).join('\n')}\n\nResolve each conflict keeping both sides' intent and remove every marker; do not commit, Polly commits the merge once the checks are green.`;
        transitionTask(t, 'fixing', { reason: `acceptance red: ${why}`, at: new Date().toISOString() });
        tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: false, failed: why });
      });
      return { outcome: 'failure', permanent: true, note: `run_acceptance: red (${why})` };
    }
  }
  const { value: outcome, violation } = await withRefGuard(
    ctx,
    'acceptance',
    () =>
      runAcceptance({
        cwd: task.worktree!,
        commands,
        timeoutSeconds: ctx.config.acceptance.timeout,
        env: confinement.env,
        sandbox: confinement.sandbox,
        signal: ctx.signal,
      }),
    // The acceptance commands ran with the sandbox's mounts (none when unconfined).
    { confinement: () => (confinement.sandbox ? appliedMounts(confinement.sandbox.spec, existsSync) : null) },
  );
  // A ref moved while the checks ran (a worker-written test, unconfined or through a hole): nothing
  // is committed, the task fails.
  if (violation) return guardFailure(violation);
  const refused = refusalLines(outcome.results.map((r) => r.output));
  if (refused.length > 0) return sandboxRefusalFailure(ctx, 'acceptance', refused);
  // Command not found (127) is the environment, not the code: no agent attempt is spent on it.
  const missing = outcome.results.find((r) => r.exitCode === COMMAND_NOT_FOUND && !r.timedOut);
  if (missing) return commandNotFoundFailure(ctx, missing, outcome.results, confinement.sandbox !== null);
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
  const message = task.fixRound ? fixCommitMessage(task, merging) : taskCommitMessage(task);
  const commit = (await ctx.worktrees.commitAll({ id: task.id, message })) ?? (await git.run(['rev-parse', 'HEAD'], { cwd: task.worktree })).stdout.trim();
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
