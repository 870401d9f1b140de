/**
 * Tool `dispatch` (effect `dispatch_implementer` of polly-task): give the task its worktree and
 * run the implementer's first turn.
 *
 * Idempotent per order id: the worktree is created only when the task has none (a registered
 * `polly/<id>` worktree left by a Brain that died before recording it is adopted), and the turn
 * goes through the supervisor, which adopts a worker already started for this order.
 *
 * Before the first turn, after the worktree and its setup, the runner of each acceptance command
 * found by PATH is probed in the checks' sandbox (./run-acceptance.ts `probeRunnersBeforeAgent`):
 * a check that could never run fails the task (`task.checks_cannot_run`) without an agent turn.
 * Then the base check (./base-check.ts): the task's acceptance commands that are project checks
 * (listed in config `acceptance.commands`; a command only the plan names may name the test the
 * task writes, red before it by design) run on the base, cached per
 * (base commit, command); one red there that is not `acceptance.known_red` makes the task wait as
 * `base_red` (`task.base_red`), its worktree removed (nothing of an agent is in it), and no agent
 * turn is spent. A re-offered order finds the cached result; when the worktree no longer shows the
 * base (an agent turn began before a crash) an uncached command is not run on it.
 *
 * A task branch already on the remote that this registry never pushed (the plan ran before and
 * the registry was lost) is adopted when its commits are this task's, and the implementer is told
 * it builds on them; anyone else's commits fail the task before any agent turn (./adopt-branch.ts).
 */
import { join } from 'node:path';
import { followStep } from '../registry/task-progress.js';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import type { AgentEvent, AgentRunResult } from '../../workers/agents/agent-adapter.js';
import type { GateRole } from '../../gate/types.js';
import { isPollyError } from '../core/errors.js';
import { agentRootProblem } from '../../workers/agents/agent-preflight.js';
import { commandProblems } from '../config/project-detection.js';
import type { SetupResult } from '../../workers/git/worktree-manager.js';
import { setupInputs, setupRerunReason, type SetupStamp } from '../../workers/git/setup-inputs.js';
import { repositoryDefaultBranch } from '../../workers/git/repo.js';
import { createGitRunner, firstLine } from '../../workers/git/git.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { isReadOnlyRole, type TaskStatus } from '../core/vocabulary.js';
import type { PollyConfig } from '../config/config-schema.js';
import { NO_CHANGE, type TaskTool, type TaskToolContext, type TaskToolOutcome } from './types.js';
import type { WorkerTurnRequest, WorkerTurnResult } from '../../workers/worker-turn.js';
import { guardFailure, reassertGuardFailure, withRefGuard } from './ref-guard-step.js';
import { cannotRunReason, checkConfinement, probeRunnersBeforeAgent } from './run-acceptance.js';
import { ownGitAdminDir, sandboxRefusalFailure, turnRefusals } from './sandbox-refusals.js';
import { POLLY_COMMITS_LINE } from '../../workers/git/git-policy.js';
import { createBudgetWatch, modelEndpoint, parkForBudget, recordTurnUsage, withMeter, type BudgetStop, type BudgetWatch } from './turn-budget.js';
import { elideMiddle } from '../core/visible-text.js';
import { baseGreen, baseRedReason, blockingBaseRed, checkBase } from './base-check.js';
import { runCheck } from '../../workers/acceptance.js';
import { recordArtifacts, untrackedPaths } from '../../workers/git/polly-artifacts.js';
import { appliedMounts } from '../../workers/sandbox/sandbox-spec.js';
import { adoptRemoteBranch, resolveBaseTip, type BranchAdoption } from './adopt-branch.js';

/** Statuses that retrying cannot fix: the on_failure branch is taken at once. */
export const PERMANENT_AGENT_STATUSES: ReadonlySet<string> = new Set(['agent_missing', 'agent_refused', 'blocked_on_prompt', 'bound_exceeded']);

/** The first line of every prompt Polly gives an agent (the scripted model matches on it). */
export function promptMarker(task: Pick<TaskRecord, 'id' | 'purpose'>): string {
  return `[polly task=${task.id} role=${task.purpose}]`;
}

/** The implementer's first prompt: marker, title, the plan's prompt, the acceptance contract. */
export function implementPrompt(task: TaskRecord, defaultCommands: readonly string[]): string {
  const commands = task.acceptance.commands.length > 0 ? task.acceptance.commands : defaultCommands;
  return [
    `${promptMarker(task)} ${task.title}`,
    '',
    task.prompt.trim(),
    '',
    'Acceptance: when you are done, Polly runs these commands in this worktree; all must exit 0:',
    ...commands.map((c) => `  $ ${c}`),
    ...(task.acceptance.criteria.length > 0 ? ['Criteria:', ...task.acceptance.criteria.map((c) => `  - ${c}`)] : []),
    '',
    `Work only in this directory. ${POLLY_COMMITS_LINE}`,
  ].join('\n');
}

/**
 * The one way the Brain builds an agent turn (implement, follow-up, review, explore, search): the
 * gate role is the purpose, and whether the agent is read-only is decided here, once, from the
 * purpose and the config's `purpose_guard.read_only` (brain/core/vocabulary.ts `isReadOnlyRole`).
 */
export function workerTurnRequest(config: Pick<PollyConfig, 'policies'>, turn: Omit<WorkerTurnRequest, 'role' | 'readOnly'>): WorkerTurnRequest {
  return { ...turn, role: turn.purpose as GateRole, readOnly: isReadOnlyRole(turn.purpose, config.policies.purpose_guard.read_only) };
}

/** The turn request for the task's implementer in its worktree. */
export function implementTurn(ctx: TaskToolContext, task: TaskRecord, prompt: string, resumeSessionId: string | null, extraEnv: Record<string, string> = {}): WorkerTurnRequest {
  const worktree = task.worktree!;
  return workerTurnRequest(ctx.config, {
    taskId: task.id,
    orderId: ctx.order.id,
    harness: task.worker,
    purpose: task.purpose,
    cwd: worktree,
    prompt,
    resumeSessionId,
    model: task.model ?? ctx.config.workers[task.worker].model,
    gateContext: {
      repoRoot: ctx.repoRoot,
      worktree,
      branch: task.branch ?? `polly/${task.id}`,
      // The repository's default branch (one rule: workers/git/repo.ts), not the task's base: a
      // stacked task's base is another task's branch, and the gate's default-branch rule guards main.
      defaultBranch: repositoryDefaultBranch(ctx.repoRoot),
      home: homedir(),
    },
    env: { ...ctx.agentEnv, ...extraEnv },
    // A remote host that holds the task's worktree and session is tried first (workers/hosts/placement.ts).
    host: task.host ?? null,
    base: { branch: task.baseBranch, commit: task.baseCommit },
  });
}

/** The task status that names how a failed turn ended (orchestration case 1, test/workers/supervisor/orchestration-workers.test.ts). */
export function failedTurnStatus(status: AgentRunResult['status']): TaskStatus {
  if (status === 'agent_missing' || status === 'agent_exited' || status === 'blocked_on_prompt') return status;
  if (status === 'cancelled') return 'cancelled';
  return 'failed';
}

/**
 * Record a finished implementer turn on the task (its ledger entry, session, status, reason,
 * attempts = implement turns started for it) and turn it into the tool's outcome: ok when the agent
 * ended `ok`; otherwise a failure, permanent for agent_missing / agent_refused / blocked_on_prompt.
 * With `budgetStop` the status is left for {@link parkForBudget} to set.
 */
export async function recordTurn(ctx: TaskToolContext, result: WorkerTurnResult, verb: string, budgetStop: BudgetStop | null = null): Promise<TaskToolOutcome> {
  const ok = result.status === 'ok';
  const reason = ok ? null : `${result.status}: ${result.message ?? ''}`.trim();
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    recordTurnUsage(draft, tx, t.id, result, {
      role: verb === 'dispatch' ? t.purpose : 'followup',
      harness: t.worker,
      orderId: ctx.order.id,
      at: ctx.clock().toISOString(),
      endpoint: modelEndpoint(t.worker, ctx.config, ctx.agentEnv),
    });
    if (result.sessionId) t.sessionId = result.sessionId;
    // Where the task's remote worktree is now (its next turn goes there first); a turn here keeps none.
    if (result.host !== undefined && !result.hostLost) t.host = result.host ?? null;
    if (result.unconfined) {
      t.unconfined = result.unconfined;
      tx.emit('task.unconfined', { taskId: t.id, orderId: ctx.order.id, workerId: result.workerId, warning: result.unconfined });
    }
    t.attempts = Object.values(draft.workers).filter((w) => w.taskId === t.id && (w.purpose ?? 'implement') === 'implement').length;
    // A turn stopped by its budget is parked by parkForBudget (turn-budget.ts), not failed here.
    if (!budgetStop) transitionTask(t, ok ? 'checking' : failedTurnStatus(result.status), { reason, at: ctx.clock().toISOString() });
    tx.emit('task.turn_ended', {
      taskId: t.id,
      orderId: ctx.order.id,
      workerId: result.workerId,
      status: result.status,
      adopted: result.adopted,
      reason: budgetStop ? 'budget reached' : reason,
      ...(result.host ? { host: result.host } : {}),
    });
  });
  if (ok) return { outcome: 'ok', note: `${verb}: ${ctx.task.worker} finished its turn (${result.workerId}${result.adopted ? ', adopted' : ''}): ${oneLine(result.finalText)}` };
  return { outcome: 'failure', permanent: PERMANENT_AGENT_STATUSES.has(result.status), note: `${verb}: ${oneLine(reason ?? result.status)}` };
}

/**
 * Record an implement turn whose remote host was lost while it ran (workers/hosts/remote-turn.ts:
 * the host was given up only after its lease ran out, so its worker has stopped): its usage on the
 * ledger, the attempt counted, the task still running, `task.host_lost` journaled; the outcome
 * asks the run for `HOST_LOST`, which re-offers the turn as a new order to another host within
 * the plan's checked bound (workflows/polly-task/workflow.yaml `host_losses`).
 */
export async function recordHostLoss(ctx: TaskToolContext, result: WorkerTurnResult, verb: string): Promise<TaskToolOutcome> {
  const lost = result.hostLost!;
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    recordTurnUsage(draft, tx, t.id, result, {
      role: verb === 'dispatch' ? t.purpose : 'followup',
      harness: t.worker,
      orderId: ctx.order.id,
      at: ctx.clock().toISOString(),
      endpoint: modelEndpoint(t.worker, ctx.config, ctx.agentEnv),
    });
    t.attempts = Object.values(draft.workers).filter((w) => w.taskId === t.id && (w.purpose ?? 'implement') === 'implement').length;
    t.updatedAt = ctx.clock().toISOString();
    // The task goes on (re-offered); the reason stays for the record and for the run's end, should no re-offer be left.
    t.statusReason = oneLine(result.message ?? `host ${lost.host} lost: ${lost.reason}`);
    tx.emit('task.host_lost', { taskId: t.id, orderId: ctx.order.id, workerId: result.workerId, host: lost.host, reason: lost.reason });
  });
  ctx.progress(`${ctx.task.id}: host ${lost.host} was lost during the turn (${lost.reason}); the turn is offered to another host`);
  return { outcome: 'failure', signal: 'HOST_LOST', note: `${verb}: ${oneLine(result.message ?? `host ${lost.host} lost`)}` };
}

/** A live event of an implementer turn: a tool call goes to the live view; every event to the budget watch. */
export function progressAndWatch(ctx: Pick<TaskToolContext, 'progress'>, taskId: string, watch: BudgetWatch, e: AgentEvent): void {
  watch.onEvent(e);
  if (e.type === 'tool_call') ctx.progress(`${taskId}: ${e.tool}`);
}

/**
 * `text` on one line, at most `max` characters. A longer one loses its middle, not its end: Polly's
 * failure messages end with what to do (e.g. the config key that lets Claude Code run as root), and
 * that instruction must reach the task's reason whole.
 */
function oneLine(text: string, max = 1000): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return elideMiddle(line, max) || '(no text)';
}

/**
 * Output lines of a package manager or downloader that could not reach the network: a name that
 * does not resolve, a refused or unreachable connection, a timeout (npm's `EAI_AGAIN`/`ENOTFOUND`
 * codes, pip's `NewConnectionError`, curl's and git's `Could not resolve host`, Go's `dial tcp`).
 */
const NETWORK_FAILURE =
  /\b(EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH)\b|getaddrinfo|Temporary failure in name resolution|Could not resolve host|Name or service not known|Network is unreachable|NewConnectionError|Failed to establish a new connection|dial tcp|no such host|Could not connect to|Connection refused|Connection timed out/i;

/**
 * Why a setup command's failure ends the task: the command, how it ended, the last lines of its
 * output, the log file that holds all of it, and, when the output looks like a network failure,
 * what `worktrees.setup_network` says about it.
 * @param network  config `worktrees.setup_network`: whether the setup had network in its sandbox.
 * @param taskId   the task, for the retry command.
 */
export function setupFailureReason(setup: SetupResult, network: boolean, taskId: string, lines = 15): string {
  const how = setup.timedOut ? `timed out after ${Math.round(setup.durationMs / 1000)}s` : `exited ${setup.exitCode ?? 'without a code (it could not start or was killed)'}`;
  const tail = setup.output.trimEnd().split('\n').slice(-lines).join('\n');
  const offline = NETWORK_FAILURE.exec(setup.output);
  const hint = !offline
    ? []
    : network
      ? [`This looks like a network failure ("${offline[0]}") although worktrees.setup has network (worktrees.setup_network: true): check this machine's network, DNS or proxy.`]
      : [
          `This looks like a network failure ("${offline[0]}"): worktrees.setup runs without network (worktrees.setup_network is false). If it must fetch packages, set worktrees: {setup_network: true} in .polly/config.yaml.`,
        ];
  return [
    `worktrees.setup "${setup.command}" ${how}; the agent was not started. Full log: ${setup.logPath}`,
    ...(tail ? ['Last lines:', tail] : []),
    ...hint,
    `Fix the command in .polly/config.yaml (worktrees.setup) or the project, then run the task again: polly retry ${taskId}`,
  ].join('\n');
}

/**
 * Acceptance commands of an implement task that cannot run in this repository (`npm test` without
 * package.json, …; see `commandProblems`), as one reason, or null when all may run. Checked before
 * the worktree and the agent, so no attempt is spent on a check that can never go green.
 */
export function acceptanceCommandProblem(repoRoot: string, task: Pick<TaskRecord, 'purpose' | 'acceptance'>, defaultCommands: readonly string[]): string | null {
  if (task.purpose !== 'implement') return null;
  const fromPlan = task.acceptance.commands.length > 0;
  const problems = commandProblems(repoRoot, fromPlan ? task.acceptance.commands : defaultCommands);
  if (problems.length === 0) return null;
  const where = fromPlan ? "the plan task's acceptance.commands" : 'acceptance.commands in .polly/config.yaml';
  const list = problems.map((p) => `"${p.command}" needs ${p.missing}, which ${repoRoot} does not have`).join('; ');
  return `acceptance command cannot run in this repository: ${list}. Change ${where} to commands this project has (polly init suggests them; see polly doctor), then run the task again.`;
}

/**
 * Give the task a worktree (once) and record it: `worktree`, `branch`, `baseBranch`, `baseCommit`.
 * @returns the fresh task, the worker's PORT when the worktree was created now, and the setup
 *          command's outcome when it ran now (null otherwise).
 */
export async function ensureWorktree(ctx: TaskToolContext): Promise<{ task: TaskRecord; env: Record<string, string>; setup: SetupResult | null; adoption: BranchAdoption }> {
  let task = ctx.task;
  const none: BranchAdoption = { kind: 'none' };
  const again = setupAgain(task, ctx.config.worktrees.setup);
  if (again.action === 'rerun') {
    ctx.progress(`${task.id}: worktrees.setup "${ctx.config.worktrees.setup}" runs again in ${task.worktree}: ${again.reason}`);
    const setup = await ctx.worktrees.setup({ id: task.id });
    return { task: await recordSetup(ctx, setup), env: {}, setup, adoption: none };
  }
  let fresh = false;
  if (again.action === 'fresh') {
    // No agent ran in it: it holds the base as it was and a failed setup. A new one starts from the
    // base as it is now (the user may have committed the fix, e.g. a lockfile) and runs the setup.
    ctx.progress(`${task.id}: worktrees.setup "${ctx.config.worktrees.setup}" runs again, in a new worktree from the base as it is now: ${again.reason}`);
    await ctx.worktrees.remove({ id: task.id, reason: 'worktrees.setup failed there and no agent ran: a new worktree from the current base' });
    task = { ...task, worktree: null, branch: null, baseCommit: null };
    fresh = true;
  }
  if (task.worktree && existsSync(task.worktree) && task.branch && task.baseCommit) return { task, env: {}, setup: null, adoption: none };
  const registered = fresh ? undefined : (await ctx.worktrees.list()).find((w) => w.taskId === task.id && w.prunable === null && existsSync(w.path));
  let record: Pick<TaskRecord, 'worktree' | 'branch' | 'baseBranch' | 'baseCommit'>;
  const env: Record<string, string> = {};
  let setup: SetupResult | null = null;
  const git = createGitRunner();
  // The base's tip, for a branch found on the remote (below) and for a kept worktree the registry
  // has no base of (a Brain that died before recording it, or a registry lost since).
  let baseTip: string | null = null;
  if (registered) {
    const base = task.baseCommit ? null : await resolveBaseTip(git, ctx.repoRoot, task.baseBranch);
    baseTip = base?.commit ?? null;
    const mergeBase = base && registered.head ? await git.run(['merge-base', registered.head, base.commit], { cwd: ctx.repoRoot, okExitCodes: [1] }) : null;
    record = {
      worktree: registered.path,
      branch: registered.branch?.replace(/^refs\/heads\//, '') ?? `polly/${task.id}`,
      baseBranch: task.baseBranch ?? base?.branch ?? null,
      baseCommit: task.baseCommit ?? (mergeBase?.exitCode === 0 ? firstLine(mergeBase) : registered.head),
    };
  } else {
    ctx.progress(`${task.id}: creating worktree`);
    const created = await ctx.worktrees.create({
      id: task.id,
      ...(task.baseBranch ? { baseBranch: task.baseBranch } : {}),
      ...(task.baseCommit ? { baseCommit: task.baseCommit } : {}),
    });
    record = { worktree: created.path, branch: created.branch, baseBranch: created.baseBranch ?? task.baseBranch, baseCommit: created.baseCommit };
    baseTip = created.baseCommit;
    if (created.freshness?.warning) ctx.progress(`${task.id}: warning: ${created.freshness.warning}`);
    env.PORT = String(created.port);
    setup = created.setup;
  }
  // A branch of this task already on the remote that this registry never pushed (its plan ran
  // before and the registry was lost since): adopted and built on, or refused (./adopt-branch.ts).
  let adoption: BranchAdoption = none;
  if (task.purpose === 'implement' && !task.headCommit && !task.pr && record.worktree && record.branch && baseTip) {
    adoption = await adoptRemoteBranch({ repoRoot: ctx.repoRoot, task, worktree: record.worktree, branch: record.branch, created: !registered, baseTip, git });
    if (adoption.kind === 'adopted') record.baseCommit = adoption.baseCommit;
  }
  const found = adoption;
  const updated = await ctx.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return null;
    Object.assign(t, record, { updatedAt: ctx.clock().toISOString() });
    if (setup) t.setup = setupStamp(setup, ctx.clock());
    tx.emit('task.worktree', { taskId: t.id, orderId: ctx.order.id, ...record, adopted: Boolean(registered) });
    if (found.kind === 'adopted') {
      tx.emit('task.branch_adopted', {
        taskId: t.id,
        orderId: ctx.order.id,
        branch: record.branch,
        remoteTip: found.remoteTip,
        baseCommit: found.baseCommit,
        commits: found.commits,
        how: found.how,
      });
    }
    return structuredClone(t);
  });
  if (adoption.kind === 'adopted')
    ctx.progress(`${task.id}: adopted ${record.branch} from origin at ${adoption.remoteTip.slice(0, 12)} (${adoption.commits} commit(s) of an earlier run of this task)`);
  return { task: updated ?? { ...task, ...record }, env, setup, adoption };
}

/** The stamp of a setup run (workers/git/setup-inputs.ts). */
function setupStamp(setup: SetupResult, at: Date): SetupStamp {
  return { command: setup.command, ok: setup.exitCode === 0 && !setup.timedOut && !setup.refGuard, inputs: setup.inputs, at: at.toISOString() };
}

/** Record `setup` (run again in the kept worktree) on the task and journal it; returns the fresh task. */
async function recordSetup(ctx: TaskToolContext, setup: SetupResult | null): Promise<TaskRecord> {
  const fresh = await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return null;
    if (setup) t.setup = setupStamp(setup, ctx.clock());
    tx.emit('task.setup_again', { taskId: t.id, orderId: ctx.order.id, command: setup?.command ?? null, exitCode: setup?.exitCode ?? null, worktree: t.worktree });
    return structuredClone(t);
  });
  return fresh ?? ctx.task;
}

/** What {@link ensureWorktree} does about `worktrees.setup` in a task's kept worktree. */
export type SetupAgain = { action: 'none' } | { action: 'rerun' | 'fresh'; reason: string };

/**
 * Whether `worktrees.setup` (`command`) runs again for `task`, whose worktree is kept (a retry, or
 * a Brain that restarted): when {@link setupRerunReason} gives a reason (the command changed, it
 * failed there, its lockfiles changed, or there is no record of it). `fresh` when it failed and
 * no agent ran there (no session, no turn in the ledger, no PR): the worktree then holds only the
 * old base, so a new one is made from the base as it is now; else `rerun` in place, with the work.
 * Reads the worktree's lockfiles; `none` when there is no setup command or no worktree.
 */
export function setupAgain(task: Pick<TaskRecord, 'worktree' | 'setup' | 'retriedFrom' | 'sessionId' | 'ledger' | 'pr'>, command: string | null | undefined): SetupAgain {
  if (!command || !task.worktree || !existsSync(task.worktree)) return { action: 'none' };
  const reason = setupRerunReason(task.setup, command, setupInputs(task.worktree));
  if (!reason) return { action: 'none' };
  const failed = task.setup ? !task.setup.ok : (task.retriedFrom?.at(-1)?.reason?.startsWith('worktrees.setup') ?? false);
  const agentRan = Boolean(task.sessionId) || task.ledger !== undefined || task.pr !== null;
  return { action: failed && !agentRan ? 'fresh' : 'rerun', reason };
}

/**
 * The base check of `task` (see the module doc and ./base-check.ts): the outcome that makes it wait
 * as `base_red`, or null when no command blocks it. The commands run under the ref guard, and what
 * they write is recorded as Polly's artifacts (workers/git/polly-artifacts.ts), as in run_acceptance.
 */
async function baseCheck(
  ctx: TaskToolContext,
  task: TaskRecord,
  commands: readonly string[],
  confinement: Awaited<ReturnType<typeof checkConfinement>>,
): Promise<TaskToolOutcome | null> {
  const knownRed = [...(ctx.config.acceptance.known_red ?? []), ...(task.acceptance.knownRed ?? [])];
  const worktree = task.worktree!;
  const git = createGitRunner();
  const canRun = !(await worktreeChanged(task));
  const recheckRed = task.retriedFrom?.at(-1)?.status === 'base_red';
  const { value: checked, violation } = await withRefGuard(
    ctx,
    'base check',
    async () => {
      const untrackedBefore = await untrackedPaths(git, worktree);
      const run = {
        cwd: worktree,
        env: confinement.env,
        sandbox: confinement.sandbox,
        timeoutSeconds: ctx.config.acceptance.timeout,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      };
      // Which base check runs and its output as it comes, for polly ui and status --watch.
      const step = followStep(join(ctx.repoRoot, '.polly'), task.id, 'base check', 'base-check');
      const out = await checkBase({
        repoRoot: ctx.repoRoot,
        baseCommit: task.baseCommit!,
        commands,
        knownRed,
        canRun,
        recheckRed,
        now: ctx.clock,
        run: (command) => {
          ctx.progress(`${task.id}: base check: ${command}`);
          step.command(command);
          return runCheck(command, { ...run, onOutput: step.output });
        },
      }).finally(() => step.end());
      await recordArtifacts(git, worktree, untrackedBefore);
      return out;
    },
    { confinement: () => (confinement.sandbox ? appliedMounts(confinement.sandbox.spec, existsSync) : null) },
  );
  if (violation) return guardFailure(violation);
  for (const r of checked.results)
    if (!baseGreen(r) && knownRed.includes(r.command))
      ctx.progress(`${task.id}: base check: "${r.command}" is red on the base and listed in acceptance.known_red: the agent starts`);
  const red = blockingBaseRed(checked.results, knownRed);
  if (!red) return null;
  const reason = baseRedReason(task.id, red, task.baseBranch);
  // No agent ran: the worktree holds only the base and its setup. Removing it lets a retry start
  // from the base as it is then (fixed), not from this commit.
  await ctx.worktrees.remove({ id: task.id, reason: 'base red: no agent turn was spent' });
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return;
    Object.assign(t, { worktree: null, branch: null, baseCommit: null });
    transitionTask(t, 'base_red', { reason, at: ctx.clock().toISOString() });
    tx.emit('task.base_red', { taskId: t.id, orderId: ctx.order.id, command: red.command, exitCode: red.exitCode, timedOut: red.timedOut, baseCommit: red.baseCommit });
  });
  ctx.progress(`${task.id}: ${reason.split('\n')[0]}`);
  return { outcome: 'failure', permanent: true, note: `dispatch: ${reason.split('\n')[0]}` };
}

/** Fail the task for good before its agent starts (a setup or command problem no retry can fix). */
async function failBeforeAgent(ctx: TaskToolContext, kind: string, reason: string): Promise<TaskToolOutcome> {
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    transitionTask(t, 'failed', { reason, at: ctx.clock().toISOString() });
    tx.emit(kind, { taskId: t.id, orderId: ctx.order.id, reason });
  });
  return { outcome: 'failure', permanent: true, note: `dispatch: ${reason.split('\n')[0]}` };
}

/** What the implementer is told when its branch holds an earlier run's work (./adopt-branch.ts). */
export function adoptedWorkNote(task: Pick<TaskRecord, 'branch' | 'id'>, adoption: Extract<BranchAdoption, { kind: 'adopted' }>): string {
  return `\n\nThis branch (${task.branch ?? `polly/${task.id}`}) already holds ${adoption.commits} commit(s) from an earlier run of this same task, up to ${adoption.remoteTip.slice(0, 12)}. Check that work against the task and its acceptance and finish what is missing; if nothing is, change nothing.`;
}

/**
 * True when the worktree differs from the task's base: uncommitted or untracked files
 * (`git status --porcelain`, ignored files excluded) or commits on top of `baseCommit`.
 */
export async function worktreeChanged(task: Pick<TaskRecord, 'worktree' | 'baseCommit'>): Promise<boolean> {
  const git = createGitRunner();
  const status = await git.run(['status', '--porcelain', '--untracked-files=all'], { cwd: task.worktree! });
  if (status.stdout.trim() !== '') return true;
  if (!task.baseCommit) return false;
  const ahead = await git.run(['rev-list', '--count', `${task.baseCommit}..HEAD`], { cwd: task.worktree! });
  return Number(firstLine(ahead)) > 0;
}

/**
 * The `dispatch` tool (see the module doc). A worktree that cannot be made is a permanent failure
 * naming why; a first turn that ended ok but changed nothing in the worktree is a permanent
 * failure {@link NO_CHANGE} (WORKER_FAILED: the task fails, nothing is pushed).
 */
export const dispatch: TaskTool = async (ctx) => {
  const commandProblem = acceptanceCommandProblem(ctx.repoRoot, ctx.task, ctx.config.acceptance.commands);
  if (commandProblem) return failBeforeAgent(ctx, 'task.command_refused', commandProblem);
  // Claude Code as root without allow_root_sandbox refuses to start: say so now, with the whole fix,
  // instead of after a worktree and its setup.
  const rootProblem = agentRootProblem(ctx.task.worker, ctx.config.workers);
  if (rootProblem) return failBeforeAgent(ctx, 'task.agent_refused', `agent_refused: ${rootProblem.message}`);
  // The turn's runner boots (node, sandbox probes) while the worktree, its setup and the base check run.
  ctx.supervisor.prewarm?.();
  let prepared: Awaited<ReturnType<typeof ensureWorktree>>;
  try {
    prepared = await ensureWorktree(ctx);
  } catch (error) {
    if (!isPollyError(error) || !['bad_input', 'conflict', 'git_failed', 'not_found'].includes(error.code)) throw error;
    const reason = `worktree: ${error.message}`;
    await ctx.store.update((draft, tx) => {
      const t = draft.tasks[ctx.task.id];
      if (!t) return;
      transitionTask(t, 'failed', { reason, at: ctx.clock().toISOString() });
      tx.emit('task.worktree_failed', { taskId: t.id, orderId: ctx.order.id, code: error.code, reason });
    });
    return { outcome: 'failure', permanent: error.code !== 'git_failed', note: `dispatch: ${reason}` };
  }
  const { task, env, setup, adoption } = prepared;
  if (adoption.kind === 'refused') return failBeforeAgent(ctx, 'task.branch_refused', adoption.reason);
  if (setup?.refGuard)
    return failBeforeAgent(ctx, 'task.setup_failed', `${setup.refGuard}\nThe agent was not started. Full log of worktrees.setup "${setup.command}": ${setup.logPath}`);
  if (setup && (setup.exitCode !== 0 || setup.timedOut))
    return failBeforeAgent(ctx, 'task.setup_failed', setupFailureReason(setup, ctx.config.worktrees.setup_network ?? false, ctx.task.id));
  // A check whose runner cannot start here (python without pytest, go not installed…) can never go
  // green: say so before the agent's first attempt (the checks themselves classify it too).
  if (task.purpose === 'implement' && task.worktree) {
    const commands = task.acceptance.commands.length > 0 ? task.acceptance.commands : ctx.config.acceptance.commands;
    let confinement: Awaited<ReturnType<typeof checkConfinement>> | null = null;
    try {
      confinement = await checkConfinement(ctx, task.worktree);
    } catch (error) {
      if (!isPollyError(error, 'sandbox_unavailable')) throw error; // run_acceptance says so with its own reason
    }
    const found = confinement ? await probeRunnersBeforeAgent(commands, { cwd: task.worktree, env: confinement.env, sandbox: confinement.sandbox, signal: ctx.signal }) : null;
    if (found) return failBeforeAgent(ctx, 'task.checks_cannot_run', cannotRunReason({ command: found.command, exitCode: null }, found.why, confinement?.sandbox != null));
    // Only the project's own checks (config acceptance.commands) are run on the base: a command
    // the plan gives one task (`node --test test/new.test.js`) may name the test the task writes.
    const projectChecks = commands.filter((c) => ctx.config.acceptance.commands.includes(c));
    if (confinement && task.baseCommit && projectChecks.length > 0) {
      const red = await baseCheck(ctx, task, projectChecks, confinement);
      if (red) return red;
    }
  }
  await ctx.store.update((draft) => {
    const t = draft.tasks[task.id];
    if (t && t.status !== 'running') transitionTask(t, 'running', { reason: null, at: ctx.clock().toISOString() });
  });
  const watch = await createBudgetWatch({ store: ctx.store, task, repoRoot: ctx.repoRoot }, ctx.signal);
  const spentAlready = watch.stopped();
  if (spentAlready) return parkForBudget({ ...ctx, task }, spentAlready);
  ctx.progress(`${task.id}: ${task.worker} starts in ${task.worktree}`);
  const prompt = implementPrompt(task, ctx.config.acceptance.commands) + (adoption.kind === 'adopted' ? adoptedWorkNote(task, adoption) : '');
  const request = implementTurn(ctx, task, prompt, null, env);
  const { value: result, violation } = await withRefGuard(
    { ...ctx, task },
    `the ${task.worker} implementer turn`,
    () => ctx.supervisor.runTurn(withMeter(request, watch, ctx.config), { signal: watch.signal, onEvent: (e) => progressAndWatch(ctx, task.id, watch, e) }),
    { confinement: (r) => r.sandboxMounts },
  );
  const stop = watch.stopped();
  if (result.hostLost?.started && !violation && !stop) return recordHostLoss(ctx, result, 'dispatch');
  const outcome = await recordTurn(ctx, result, 'dispatch', stop);
  if (violation) {
    await reassertGuardFailure(ctx, violation);
    return guardFailure(violation);
  }
  if (stop) return parkForBudget({ ...ctx, task }, stop, { workerId: result.workerId, sessionId: result.sessionId });
  const refused = turnRefusals(
    result.events ?? [],
    [ownGitAdminDir(task.worktree)].filter((d): d is string => d !== null),
  );
  if (refused.length > 0) return sandboxRefusalFailure(ctx, `the ${task.worker} implementer turn`, refused);
  if (outcome.outcome !== 'ok' || (await worktreeChanged(task))) return outcome;
  // What the agent said is the clue (e.g. a scripted model whose script did not match says so).
  const said = result.finalText?.trim() ? `; the worker's last words: "${oneLine(result.finalText, 600)}"` : '';
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (!t) return;
    transitionTask(t, 'failed', { reason: `${NO_CHANGE}${said}`, at: ctx.clock().toISOString() });
    tx.emit('task.no_change', { taskId: t.id, orderId: ctx.order.id, worktree: task.worktree });
  });
  return {
    outcome: 'failure',
    permanent: true,
    note: `dispatch: ${NO_CHANGE} (${task.worker} ended its turn ok, but ${task.worktree} is unchanged from ${task.baseCommit?.slice(0, 12) ?? 'its base'})`,
  };
};
