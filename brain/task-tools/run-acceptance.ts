/**
 * Tool `run_acceptance` (effect `run_acceptance` of polly-task): Polly itself runs the task's
 * acceptance commands (or `acceptance.commands` of the config) in the worktree, each with the
 * configured timeout, inside Polly's OS sandbox with an allowlisted environment (no network unless
 * `acceptance.network`; fail closed unless `workers.allow_unconfined`).
 *
 * - green → `worktrees.commitAll` with the message `<title>\n\nPolly-Task: <id>` (everything the
 *   agent left, including when its own `git commit` failed in a sandbox: orchestration case 8, test/workers/supervisor/orchestration-workers.test.ts;
 *   not what the checks themselves wrote, recorded as Polly's artifacts: workers/git/polly-artifacts.ts),
 *   record `headCommit`, `checks`, clear `feedback` → ok;
 * - red → store {@link formatCheckFeedback} as the task's `feedback` for `send_followup`, record
 *   `checks` → a permanent failure: TESTS_RED at once (the workflow bounds the fix attempts);
 * - green, but Polly's own staging or commit fails (git refuses) → the task fails at once naming the
 *   git command and its output ({@link commitFailureReason}), journaled as `task.commit_failed`:
 *   Polly's step, not the code, so no attempt is spent and the agent is not told its green code is red;
 * - a check that cannot run (its runner, interpreter, module or dependencies missing: exit 127 or
 *   126, `No module named X` for `python -m X`, node_modules not installed, …; the signatures in
 *   workers/check-runner.ts, and for a red check matching none, the runner probe run in the same
 *   sandbox) → the task fails at once with a reason naming the command, what is missing and what to
 *   do ({@link cannotRunReason}), journaled as `task.checks` `{green: false, failed, cannotRun:
 *   {kind, missing}}`: the agent cannot fix the environment, so none of its attempts is spent;
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
 * Green work that breaks the task's path contract (undeclared protected paths, or files outside its
 * declared `paths`) commits nothing: the worker is told once, then the task parks
 * ({@link pathContractRefusal}).
 *
 * Idempotent: a re-run after a crash finds nothing left to commit and records the branch tip.
 */
import { followStep } from '../registry/task-progress.js';
import { recordChecks } from '../registry/task-record.js';
import { DEFAULT_PROTECTED_PATHS } from '../../workers/git/protected-paths.js';
import { existsSync } from 'node:fs';
import { formatCheckFeedback, runAcceptance, runCheck } from '../../workers/acceptance.js';
import { classifyCannotRun, commandProgram, runnerProbe, type CannotRun } from '../../workers/check-runner.js';
import type { AgentSandbox } from '../../workers/agents/agent-adapter.js';
import { createGitRunner } from '../../workers/git/git.js';
import { recordArtifacts, untrackedPaths } from '../../workers/git/polly-artifacts.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { isPollyError } from '../core/errors.js';
import { TASK_CONTENT_TRAILER, taskContentKey, type TaskContent } from '../registry/task-record.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';
import type { CommandResult } from '../../workers/proc/shell-command.js';
import { visibleLine, visibleText } from '../core/visible-text.js';
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
export function fixCommitMessage(task: Pick<TaskRecord, 'id' | 'title' | 'fixRound' | 'branch'> & TaskContent, merging: boolean): string {
  const round = task.fixRound!;
  const first =
    merging && round.baseMerge
      ? `Merge ${round.baseMerge.ref} into ${task.branch ?? `polly/${task.id}`}`
      : `Fix round ${round.round}: ${round.summary[0]?.slice(0, 60) ?? 'review feedback'}`;
  const body = round.summary.map((s) => `- ${s}`).join('\n');
  return `${first}\n\n${task.title.trim()}${body ? `\n\n${body}` : ''}\n\n${taskTrailers(task)}`;
}

/**
 * The commit message Polly writes for a task's work: the title, then the trailers `Polly-Task: <id>`
 * and `Polly-Task-Content: <key>` ({@link taskContentKey}); the second lets a later run recognise
 * the branch as this task's after the registry was lost (./adopt-branch.ts).
 */
export function taskCommitMessage(task: TaskContent): string {
  return `${task.title.trim() || `Task ${task.id}`}\n\n${taskTrailers(task)}`;
}

/** The trailer lines of every commit Polly makes for `task` (git-interpret-trailers(1) form), ending in a newline. */
function taskTrailers(task: TaskContent): string {
  return `Polly-Task: ${task.id}\n${TASK_CONTENT_TRAILER}: ${taskContentKey(task)}\n`;
}

/**
 * The exit status of a command the shell could not find (POSIX `sh`, "Command Search and
 * Execution": https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_09_01_01).
 */
export const COMMAND_NOT_FOUND = 127;

/**
 * The task's reason when acceptance command `result` cannot run (`why`, from
 * workers/check-runner.ts): the command, its exit code (none before the checks ran: a probe), the output line that shows it (≤ 200
 * characters, control characters shown as `\xNN`), what is missing and what to do. `sandboxed`: the
 * command ran in Polly's sandbox, which hides the real HOME (workers/sandbox/sandbox-profiles.ts),
 * so a program found there in the user's shell (pyenv, asdf, nvm shims) is not found by Polly;
 * unconfined, a program not found is not installed or not on the PATH Polly passes. Pure.
 */
export function cannotRunReason(result: Pick<CommandResult, 'command' | 'exitCode'>, why: CannotRun, sandboxed: boolean): string {
  const how = [result.exitCode !== null ? `exit ${result.exitCode}` : null, why.evidence ? `(${visibleText(why.evidence)})` : null].filter(Boolean).join(' ');
  const fix = why.kind === 'not_found' && !sandboxed ? 'it is not installed or not on the PATH Polly passes to commands: install it, or fix the command' : why.fix;
  return (
    `acceptance command "${visibleLine(result.command).slice(0, 200)}" cannot run here${how ? `: ${how}` : ''}, ` +
    `${visibleText(why.missing)} is missing. This is the environment, not the code, so no agent attempt was spent on it. Fix: ${fix}. ` +
    "Run polly doctor (it probes acceptance.commands in the checks' sandbox), fix acceptance.commands or the task's own commands, then plan the task again."
  );
}

/** The Python project files whose dependency lists name what a check may need (read as text, regular files only). */
const PYTHON_DECLARATIONS = ['requirements.txt', 'requirements-dev.txt', 'requirements-test.txt', 'pyproject.toml', 'setup.cfg', 'setup.py', 'Pipfile', 'tox.ini'];

/** Whether the project in `cwd` names Python distribution `name` in its dependency files (a word match). */
function pythonDeclared(cwd: string): (name: string) => boolean {
  const texts = PYTHON_DECLARATIONS.map((f) => readFileBelow(cwd, join(cwd, f)) ?? '');
  return (name) => texts.some((t) => new RegExp(`(^|[^\\w.-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\w.-])`, 'm').test(t));
}

/**
 * Why a red run cannot run, or null when it is the code's: the first failed result matching a
 * signature (workers/check-runner.ts `classifyCannotRun`); else the runner probe of the first
 * failed command, run once in the same sandbox and environment, classified against the same command.
 */
async function cannotRun(
  results: readonly CommandResult[],
  probeOptions: Omit<Parameters<typeof runCheck>[1], 'timeoutSeconds'>,
): Promise<{ result: CommandResult; why: CannotRun } | null> {
  const declared = pythonDeclared(probeOptions.cwd);
  for (const r of results) {
    const why = classifyCannotRun(r, declared);
    if (why) return { result: r, why };
  }
  const failed = results.find((r) => r.exitCode !== 0 && !r.timedOut);
  const probe = failed ? runnerProbe(failed.command) : null;
  if (!failed || probe === null) return null;
  const p = await runCheck(probe, { ...probeOptions, timeoutSeconds: 30 });
  if (p.exitCode === 0 || p.timedOut) return null;
  const why = classifyCannotRun({ command: failed.command, exitCode: p.exitCode, timedOut: false, output: p.output }, declared);
  return why ? { result: failed, why: { ...why, evidence: `Polly's runner probe in the checks' sandbox: ${why.evidence ?? `exit ${p.exitCode}`}` } } : null;
}

/**
 * Before an implement task's first agent turn (after its worktree and setup): the runner probe of
 * each acceptance command whose program is found by PATH (`commandProgram` without a `/`: a
 * script inside the repository may be what the task writes), in the checks' sandbox and
 * environment, classified as a failed check would be (a `python -m` module only when it is a runner
 * or declared). One cheap sandboxed command per acceptance command; it saves the agent's first
 * attempt when the check could never run.
 * @returns the first command that cannot run and why, or null when every probed runner starts.
 */
export async function probeRunnersBeforeAgent(
  commands: readonly string[],
  run: { cwd: string; env: Record<string, string>; sandbox: AgentSandbox | null; signal?: AbortSignal },
): Promise<{ command: string; why: CannotRun } | null> {
  const declared = pythonDeclared(run.cwd);
  for (const command of commands) {
    const program = commandProgram(command);
    const probe = runnerProbe(command);
    if (program === null || program.includes('/') || probe === null) continue;
    const p = await runCheck(probe, { ...run, timeoutSeconds: 30 });
    if (p.exitCode === 0 || p.timedOut) continue;
    const why = classifyCannotRun({ command, exitCode: p.exitCode, timedOut: false, output: p.output }, declared);
    if (why) return { command, why: { ...why, evidence: `Polly's runner probe in the checks' sandbox: ${why.evidence ?? `exit ${p.exitCode}`}` } };
  }
  return null;
}

/**
 * The checks' sandbox and environment for task worktree `worktree` (workers/sandbox/command-sandbox.ts):
 * no network unless `acceptance.network`, fail closed unless `workers.allow_unconfined`.
 * @throws PollyError `sandbox_unavailable` when the sandbox cannot start and unconfined runs are not allowed.
 */
export function checkConfinement(ctx: Pick<TaskToolContext, 'repoRoot' | 'config'>, worktree: string): ReturnType<typeof commandSandbox> {
  return commandSandbox({
    repoRoot: ctx.repoRoot,
    worktree,
    worktreesDir: resolveWorktreesDir(ctx.repoRoot, ctx.config.worktrees.dir),
    network: ctx.config.acceptance.network ?? false,
    allowUnconfined: ctx.config.workers.allow_unconfined ?? false,
    passthrough: ctx.config.workers.env_passthrough ?? [],
    toolPaths: ctx.config.workers.tool_paths ?? [],
    limits: ctx.config.workers.limits ?? {},
  });
}

/**
 * Fail the task at once for a check that cannot run (see {@link cannotRunReason}): status
 * `failed`, its checks recorded, no feedback stored (send_followup then does not resume the
 * agent), journaled as `task.checks` `{green: false, failed, cannotRun: {kind, missing}}`.
 */
async function cannotRunFailure(ctx: TaskToolContext, found: { result: CommandResult; why: CannotRun }, results: CommandResult[], sandboxed: boolean): Promise<TaskToolOutcome> {
  return failAtOnce(ctx, results, cannotRunReason(found.result, found.why, sandboxed), 'task.checks', {
    green: false,
    failed: `${found.result.command} exited ${found.result.exitCode ?? 'without starting'}`,
    cannotRun: { kind: found.why.kind, missing: found.why.missing },
  });
}

/**
 * Fail the task at once for a cause that is not the code's: status `failed` with `reason`, the
 * checks `results` recorded, no feedback stored (send_followup then does not resume the agent, and
 * no attempt is spent), journaled as `event` `{taskId, orderId, ...data}`.
 * @returns the permanent failure the tool returns.
 */
async function failAtOnce(ctx: TaskToolContext, results: CommandResult[], reason: string, event: string, data: Record<string, unknown>): Promise<TaskToolOutcome> {
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    recordChecks(t, results, ctx.clock().toISOString());
    t.feedback = null;
    transitionTask(t, 'failed', { reason, at: ctx.clock().toISOString() });
    tx.emit(event, { taskId: t.id, orderId: ctx.order.id, ...data });
  });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { outcome: 'failure', permanent: true, note: `run_acceptance: ${reason}` };
}

/**
 * The task's reason when Polly's own staging or commit of green work fails (`error`: the
 * `git_failed` of workers/git/git.ts, details `{command, exitCode, stderr}`): the git command, its
 * exit code and the last lines of its output (≤ 600 characters, control characters shown as
 * `\xNN`), and that it is Polly's step, not the code. Pure.
 */
export function commitFailureReason(taskId: string, error: { message: string; details?: Record<string, unknown> | undefined }): string {
  const d = error.details ?? {};
  const command = typeof d.command === 'string' ? d.command : 'git';
  const exit = typeof d.exitCode === 'number' ? `exit ${d.exitCode}` : 'no exit code';
  const output = typeof d.stderr === 'string' && d.stderr.trim() ? d.stderr : error.message;
  const tail = visibleText(output.trim().split('\n').slice(-6).join(' | ')).slice(-600);
  return (
    `staging failed: the acceptance checks were green, but Polly could not commit the work (${command}, ${exit}: ${tail}). ` +
    `This is Polly's commit step, not the code, so no agent attempt was spent on it; the work is still in the worktree. ` +
    `Fix what git names, then run polly retry ${taskId}.`
  );
}

/**
 * Fail the task when Polly's commit of green work fails (see {@link commitFailureReason}): status
 * `failed`, the green checks recorded, no feedback stored (send_followup then does not resume the
 * agent: the code is green), journaled as `task.commit_failed` `{taskId, orderId, command,
 * exitCode, stderr}` (stderr ≤ 2,000 characters).
 */
async function commitFailure(ctx: TaskToolContext, results: CommandResult[], error: { message: string; details?: Record<string, unknown> | undefined }): Promise<TaskToolOutcome> {
  return failAtOnce(ctx, results, commitFailureReason(ctx.task.id, error), 'task.commit_failed', {
    command: error.details?.command ?? null,
    exitCode: error.details?.exitCode ?? null,
    stderr: typeof error.details?.stderr === 'string' ? error.details.stderr.slice(-2000) : null,
  });
}

/**
 * Green work that breaks the task's path contract (workers/git/protected-paths.ts): protected
 * paths its plan did not declare, or, when the plan declares the task's `paths`, files outside
 * them. Nothing is committed. The first time, the worker is told which files and why and gets its
 * next turn (status `fixing`, like red checks); the second time the task parks (its worktree
 * backed up under `refs/polly/backup/` and kept in place), the reason naming the files.
 * Journaled as `task.protected_paths_refused` `{taskId, orderId, paths, protected, outside,
 * refusals}`, and `task.parked` on the second.
 */
async function pathContractRefusal(ctx: TaskToolContext, results: CommandResult[], details: Record<string, unknown> | undefined): Promise<TaskToolOutcome> {
  const list = (k: string): string[] => (Array.isArray(details?.[k]) ? (details[k] as unknown[]).map(String) : []);
  const prot = list('protected');
  const outside = list('outside');
  const allowed = list('allowed');
  const paths = [...prot, ...outside];
  const show = (ps: readonly string[]): string => ps.map((p) => visibleText(p)).join(', ');
  const what = [
    prot.length ? `protected paths changed: ${show(prot)}` : null,
    outside.length ? `paths outside the task's paths (${show(allowed)}) changed: ${show(outside)}` : null,
  ]
    .filter((x) => x !== null)
    .join('; ');
  const refusals = (ctx.task.protectedRefusals ?? 0) + 1;
  const event = { taskId: ctx.task.id, orderId: ctx.order.id, paths, protected: prot, outside, refusals };
  if (refusals > 1) {
    const next = [
      prot.length ? 'a change to protected paths needs a plan task that names them in protected_paths (the plan gate shows it)' : null,
      outside.length ? "a change outside the task's paths needs a plan whose task declares them in paths" : null,
    ]
      .filter((x) => x !== null)
      .join('; ');
    const reason = `${what}, again after the worker was told. Nothing was committed; the work is kept in the worktree ${ctx.task.worktree ?? ''} and a backup ref. If the goal needs these files changed, ${next}; or revert them in the worktree and commit the rest yourself.`;
    let backupRef: string | null = null;
    try {
      backupRef = (await ctx.worktrees.backup({ id: ctx.task.id, reason: 'path contract refused' })).ref;
    } catch (error) {
      ctx.progress(`${ctx.task.id}: backup before parking failed: ${isPollyError(error) ? error.message : String(error)}`);
    }
    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[ctx.task.id];
      if (!t) return;
      recordChecks(t, results, ctx.clock().toISOString());
      t.feedback = null;
      t.protectedRefusals = refusals;
      if (backupRef) t.backupRefs = [...t.backupRefs, backupRef];
      // Not `finished`: the run's end is still held to its admitted workflow (brain/process/order-executor.ts keeps the task parked).
      transitionTask(t, 'parked', { reason, at: ctx.clock().toISOString() });
      tx.emit('task.protected_paths_refused', event);
      tx.emit('task.parked', { taskId: t.id, reason, backupRef, worktree: t.worktree ?? null });
    });
    ctx.progress(`${ctx.task.id}: parked: ${reason}`);
    return { outcome: 'failure', permanent: true, note: `run_acceptance: ${what} (parked)` };
  }
  const told: string[] = [];
  if (prot.length) {
    told.push(`These files are protected: they steer Polly, CI or the code host, and your task may not change them:\n\n${prot.map((p) => `- ${visibleText(p)}`).join('\n')}`);
  }
  if (outside.length) {
    told.push(`These files are outside the paths your task may change (${show(allowed)}):\n\n${outside.map((p) => `- ${visibleText(p)}`).join('\n')}`);
  }
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    recordChecks(t, results, ctx.clock().toISOString());
    t.protectedRefusals = refusals;
    t.feedback =
      `The checks are green, but nothing was committed. ${told.join('\n\n')}\n\n` +
      'Undo your changes to these files (restore tracked ones with git checkout -- FILE, delete new ones) and keep the rest of your work. Do not try another path to the same effect; if the task cannot be done without them, say so in your answer.';
    transitionTask(t, 'fixing', { reason: what, at: ctx.clock().toISOString() });
    tx.emit('task.protected_paths_refused', event);
  });
  return { outcome: 'failure', permanent: true, note: `run_acceptance: ${what}` };
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
    if (t && t.status !== 'checking') transitionTask(t, 'checking', { at: ctx.clock().toISOString() });
  });
  let confinement: Awaited<ReturnType<typeof commandSandbox>>;
  try {
    confinement = await checkConfinement(ctx, task.worktree);
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
        transitionTask(t, 'fixing', { reason: `acceptance red: ${why}`, at: ctx.clock().toISOString() });
        tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: false, failed: why });
      });
      return { outcome: 'failure', permanent: true, note: `run_acceptance: red (${why})` };
    }
  }
  // The runner probe of a red check runs under the same ref guard as the checks.
  const {
    value: { outcome, found },
    violation,
  } = await withRefGuard(
    ctx,
    'acceptance',
    async () => {
      const run = { cwd: task.worktree!, env: confinement.env, sandbox: confinement.sandbox, ...(ctx.signal ? { signal: ctx.signal } : {}) };
      // What the checks write (bytecode, caches, reports) is Polly's, never committed (workers/git/polly-artifacts.ts).
      const untrackedBefore = await untrackedPaths(git, task.worktree!);
      // Which check runs and its output as it comes, for polly ui and status --watch.
      const step = followStep(join(ctx.repoRoot, '.polly'), task.id, 'checks', 'checks');
      const outcome = await runAcceptance({ ...run, commands, timeoutSeconds: ctx.config.acceptance.timeout, onCommand: step.command, onOutput: step.output }).finally(() =>
        step.end(),
      );
      const found = outcome.green ? null : await cannotRun(outcome.results, run);
      await recordArtifacts(git, task.worktree!, untrackedBefore);
      return { outcome, found };
    },
    // The acceptance commands ran with the sandbox's mounts (none when unconfined).
    { confinement: () => (confinement.sandbox ? appliedMounts(confinement.sandbox.spec, existsSync) : null) },
  );
  // A ref moved while the checks ran (a worker-written test, unconfined or through a hole): nothing
  // is committed, the task fails.
  if (violation) return guardFailure(violation);
  // A resource bound hit (workers.limits): the task fails at once with the bound named.
  const bounded = outcome.results.find((r) => (r.bounds?.length ?? 0) > 0);
  if (bounded) {
    const hit = bounded.bounds![0]!;
    return failAtOnce(ctx, outcome.results, `acceptance command ${JSON.stringify(bounded.command)}: ${hit.message}`, 'task.bound_exceeded', {
      phase: 'acceptance',
      bound: hit.bound,
      limit: hit.limit,
      key: hit.key,
    });
  }
  const refused = refusalLines(outcome.results.map((r) => r.output));
  if (refused.length > 0) return sandboxRefusalFailure(ctx, 'acceptance', refused);
  // A check that cannot run (runner, interpreter, module, dependencies missing) is the environment,
  // not the code: no agent attempt is spent on it.
  if (found) return cannotRunFailure(ctx, found, outcome.results, confinement.sandbox !== null);
  if (!outcome.green) {
    const feedback = formatCheckFeedback(outcome.results);
    const failed = outcome.results.find((r) => r.exitCode !== 0);
    const why = failed ? `${failed.command} ${failed.timedOut ? 'timed out' : `exited ${failed.exitCode ?? 'without starting'}`}` : 'not every command ran';
    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t) return;
      recordChecks(t, outcome.results, ctx.clock().toISOString());
      t.feedback = feedback;
      transitionTask(t, 'fixing', { reason: `acceptance red: ${why}`, at: ctx.clock().toISOString() });
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
  let commit: string;
  try {
    const contract = {
      protectedPatterns: ctx.config.worktrees.protected_paths ?? DEFAULT_PROTECTED_PATHS,
      declaredProtected: task.protectedPaths ?? [],
      paths: task.paths ?? null,
    };
    commit = (await ctx.worktrees.commitAll({ id: task.id, message, contract })) ?? (await git.run(['rev-parse', 'HEAD'], { cwd: task.worktree })).stdout.trim();
  } catch (error) {
    if (isPollyError(error, 'protected_path')) return pathContractRefusal(ctx, outcome.results, error.details);
    if (!isPollyError(error, 'git_failed')) throw error;
    return commitFailure(ctx, outcome.results, error);
  }
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return;
    recordChecks(t, outcome.results, ctx.clock().toISOString());
    t.feedback = null;
    t.headCommit = commit;
    transitionTask(t, 'green', { reason: null, at: ctx.clock().toISOString() });
    tx.emit('task.checks', { taskId: t.id, orderId: ctx.order.id, green: true, headCommit: commit });
  });
  return { outcome: 'ok', note: `run_acceptance: green (${commands.length} command(s)); committed ${commit.slice(0, 12)} on ${task.branch ?? `polly/${task.id}`}` };
};
