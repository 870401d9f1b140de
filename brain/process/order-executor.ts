/**
 * Executing the Brain's work: claimed runtime work orders run by their task tool (and reported back),
 * read-only ad-hoc tasks run in the main checkout, requested cancels, and settled runs mapped to
 * their tasks' final statuses (each held to its admitted workflow first, and a failure said in
 * words). A task's run settles when it ends, or when it reaches `watching` (its PR is ready and
 * watched for fix rounds: the task is `ready` and finished until a PR event starts a round, see
 * `pr-events.ts`). Every status change goes through `brain/registry/task-lifecycle.ts`.
 */
import { isCurrentTaskRun } from '../plan/plan-retry.js';
import { existsSync } from 'node:fs';
import { budgetReason, createBudgetWatch, modelEndpoint, recordTurnUsage, withMeter, type BudgetStop } from '../task-tools/turn-budget.js';
import { isPollyError } from '../core/errors.js';
import { ioFaultCode, ioFaultReason, releaseReserve } from '../core/io-fault.js';
import { createGitRunner } from '../../workers/git/git.js';
import { mergeHead } from '../task-tools/integrate-base.js';
import type { Registry, RunRecord, TaskRecord, WorkOrderRecord } from '../registry/registry-schema.js';
import type { RegistryTx } from '../registry/registry-store.js';
import type { RunJournalEntry } from '../../workflows/run/run-store.js';
import type { RunState } from '../../workflows/run/interpreter.js';
import { validateTrace } from '../../workflows/run/trace-validation.js';
import { schedulePreamble } from './schedule-gate-upgrade.js';
import { FINAL_TASK_STATUSES, type TaskStatus } from '../core/vocabulary.js';
import { promptMarker, workerTurnRequest } from '../task-tools/dispatch.js';
import { NO_CHANGE } from '../task-tools/types.js';
import { withRefGuard } from '../task-tools/ref-guard-step.js';
import { holdsWorkClaim } from './work-queue.js';
import { removeOnHost } from '../forge/after-merge.js';
import { withBaseCheckout } from '../../workers/git/base-checkout.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import type { WorkerTurnResult } from '../../workers/worker-turn.js';
import { canTransitionTask, transitionTask } from '../registry/task-lifecycle.js';
import type { TaskTool, TaskToolContext } from '../task-tools/types.js';
import type { BrainProcessDeps } from './brain-deps.js';

/** The lease owner name of the repository's Brain: stable across restarts, so a new Brain renews the old one's leases. */
export const BRAIN_OWNER = 'polly-brain';

/** What a task shows while an order of each tool runs. */
const STATUS_FOR_TOOL: Record<string, TaskStatus> = {
  dispatch: 'running',
  send_followup: 'fixing',
  run_acceptance: 'checking',
  push: 'green',
  open_draft_pr: 'pr_open',
  dispatch_review: 'reviewing',
  mark_ready: 'reviewing',
  integrate_base: 'fixing',
  reply_pr: 'reviewing',
};

/** The tools whose effect leaves this machine: run only while this Polly holds the task's work claim. */
const CLAIM_FENCED_TOOLS: ReadonlySet<string> = new Set(['push', 'open_draft_pr', 'mark_ready']);

/** The control state of a task run whose PR is ready and watched (workflows/polly-task/workflow.yaml). */
export const WATCHING_STATE = 'watching';

/** The PR signals that start a fix round from `watching` (workflows/polly-task/workflow.yaml). */
const ROUND_ACTIONS: ReadonlySet<string> = new Set(['FEEDBACK', 'CHECKS_FAILED', 'CONFLICTS', 'BASE_CHECKS_FAILED']);

/**
 * How many fix rounds this run has started: its `run.action` steps from `watching` on a PR signal
 * that did not park it. One round per batch of PR events, however many worker attempts it took
 * (those are the workflow's `fix_rounds` variable, which the bound `pr.max_fix_rounds` counts). Pure.
 */
export function fixRoundsStarted(runJournal: readonly RunJournalEntry[], runId: string): number {
  return runJournal.filter(
    (e) => e.kind === 'run.action' && e.data.run === runId && e.data.from === WATCHING_STATE && ROUND_ACTIONS.has(String(e.data.action)) && e.data.to !== 'parked',
  ).length;
}

/** The control state of a run (`run.state.state`). */
export function runControlState(run: Pick<RunRecord, 'state'>): string {
  return String((run.state as { state?: unknown }).state ?? '');
}

/**
 * Perform one work order with its tool and report the outcome to the runtime.
 * @throws PollyError `registry_corrupt` when the registry was lost or damaged meanwhile, `stopping`
 *   when the Brain stops before the order's worker turn started (either way the order is left unreported).
 */
export async function executeOrder(deps: BrainProcessDeps, run: RunRecord, order: WorkOrderRecord, log: (l: string) => void, now: () => Date): Promise<void> {
  const claimed = await deps.runtime.claim(run.id, { owner: BRAIN_OWNER });
  if (!claimed || claimed.id !== order.id) return;
  const taskId = String(run.input.task);
  const reg = await deps.store.read();
  const task = reg.tasks[taskId];
  if (!task) {
    await deps.runtime.report(run.id, claimed.id, { outcome: 'failure', permanent: true, note: `no task ${taskId} in the registry`, attempt: claimed.attempt });
    return;
  }
  // Several Pollys on one store: what leaves this machine (a push, a PR, marking it ready) is done
  // only while this Polly still holds the task's work claim (brain/process/work-queue.ts).
  if (CLAIM_FENCED_TOOLS.has(claimed.tool) && !(await holdsWorkClaim(deps, task, claimed.tool, log))) return;
  const tool = deps.tools[claimed.tool];
  const status = STATUS_FOR_TOOL[claimed.tool];
  if (status && task.status !== status) {
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[taskId];
      if (!t || FINAL_TASK_STATUSES.has(t.status)) return;
      transitionTask(t, status, { at: now().toISOString() });
      tx.emit('task.status', { taskId, status, tool: claimed.tool });
    });
  }
  const controller = new AbortController();
  const ctx: TaskToolContext = {
    repoRoot: deps.repoRoot,
    store: deps.store,
    config: deps.config,
    task: (await deps.store.read()).tasks[taskId]!,
    order: { id: claimed.id, kind: claimed.kind, tool: claimed.tool, attempt: claimed.attempt },
    worktrees: deps.worktrees,
    supervisor: deps.supervisor,
    forge: deps.forge,
    agentEnv: deps.agentEnv,
    progress: (line) => log(`[polly] ${line}`),
    // Not the Brain's stop signal: a Brain that stops leaves its workers running (detached runners)
    // and the next Brain adopts them; a task is cancelled only through its run's CANCEL.
    signal: controller.signal,
    clock: now,
  };
  let outcome: Awaited<ReturnType<TaskTool>>;
  if (!tool) {
    outcome = { outcome: 'failure', permanent: true, note: `no tool "${claimed.tool}" is wired into the Brain` };
  } else {
    try {
      outcome = await tool(ctx);
    } catch (error) {
      // The registry lost or corrupted under the Brain is the Brain's fault, not the task's: nothing
      // is reported, the order stays claimed, and the Brain stops (its loop reads the registry
      // next); after the restore the next Brain claims the same order again and the tool, idempotent
      // per order id, adopts the worker that still runs. Reported, it would fail the task for good.
      if (isPollyError(error, 'registry_corrupt')) throw error;
      // The Brain stops (SIGTERM/SIGINT): the turn this order needed was not started. Left
      // claimed and unreported, the next Brain claims the same order and starts it.
      if (isPollyError(error, 'stopping')) throw error;
      // A full disk, a quota, a failing device (brain/core/io-fault.ts): the task is parked with the
      // file system and its free space named; the Brain and the other tasks go on.
      const fault = ioFaultCode(error);
      if (fault) return parkForIoFault(deps, run, claimed, taskId, fault, error, log, now);
      outcome = { outcome: 'failure', note: isPollyError(error) ? error.message : String((error as Error)?.message ?? error) };
    }
  }
  log(`[polly] ${taskId}: ${claimed.tool} → ${outcome.outcome}: ${outcome.note}`);
  if (outcome.signal) {
    // A lost host: the run re-offers the turn as a new order (its bound checked at admission).
    const signalled = await deps.runtime.signal(run.id, outcome.signal, {});
    if (signalled.accepted) {
      log(`[polly] ${taskId}: ${outcome.signal}: the turn is offered again as a new order`);
      return;
    }
    log(`[polly] ${taskId}: ${outcome.signal} not applied (${signalled.code}): ${signalled.reason}; the order fails`);
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[taskId];
      if (t && !FINAL_TASK_STATUSES.has(t.status) && canTransitionTask(t.status, 'failed'))
        transitionTask(t, 'failed', { reason: `${outcome.note}; no re-offer is left (${signalled.reason})`, at: now().toISOString() });
      tx.emit('task.host_lost_final', { taskId, orderId: claimed.id, reason: signalled.reason });
    });
    outcome = { ...outcome, permanent: true };
  }
  const result = await deps.runtime.report(run.id, claimed.id, {
    outcome: outcome.outcome,
    ...(outcome.data ? { data: outcome.data } : {}),
    note: outcome.note,
    ...(outcome.permanent ? { permanent: true } : {}),
    attempt: claimed.attempt,
  });
  if (!result.accepted) log(`[polly] ${taskId}: report not applied (${result.code}): ${result.reason}`);
}

/**
 * Park `taskId` after an I/O fault in its order's tool: the reserve in `.polly/` is released to make
 * room, the task parked with {@link ioFaultReason} (journaled `task.parked` `{taskId, reason, ioFault}`),
 * and the order reported as a permanent failure. Never throws: a write that still fails is logged,
 * and the order stays claimed for the next pass or Brain.
 */
async function parkForIoFault(
  deps: BrainProcessDeps,
  run: RunRecord,
  claimed: { id: string; tool: string; attempt: number },
  taskId: string,
  code: string,
  error: unknown,
  log: (l: string) => void,
  now: () => Date,
): Promise<void> {
  releaseReserve(deps.pollyDir);
  const path = (error as { path?: unknown }).path;
  const task = (await deps.store.read().catch(() => null))?.tasks[taskId];
  const where = typeof path === 'string' ? path : (task?.worktree ?? deps.pollyDir);
  const reason = ioFaultReason(code, `${claimed.tool} wrote ${typeof path === 'string' ? path : 'its files'}`, where);
  log(`[polly] ${taskId}: parked: ${reason}`);
  try {
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[taskId];
      if (!t || FINAL_TASK_STATUSES.has(t.status)) return;
      transitionTask(t, 'parked', { reason, at: now().toISOString() });
      tx.emit('task.parked', { taskId, reason, ioFault: code, worktree: t.worktree ?? null });
    });
    await deps.runtime.report(run.id, claimed.id, { outcome: 'failure', permanent: true, note: reason, attempt: claimed.attempt });
  } catch (again) {
    log(`[polly] ${taskId}: could not record the park (${ioFaultCode(again) ?? String((again as Error)?.message ?? again)}); the next pass retries`);
  }
}

/** The verdict of {@link validateEndedRun}: whether the run's journal conforms, and why not. */
export interface RunConformance {
  conforms: boolean;
  /** The divergence in words, or null. */
  reason: string | null;
  /** The verdict's one line (`conforms: …` or `DIVERGES: …`). */
  line: string;
}

/**
 * Hold an ended run's journal to the admitted workflow it ran under (workflows/run/trace-validation.ts).
 * A divergence is loud: logged, and journaled as `run.trace_divergence` {run, workflow, journalSeq, step, reason}.
 * A run whose workflow is no longer in the library diverges too (nothing admitted to hold it to).
 * A plan's schedule run begun before the plan gate was its first step is replayed from the gate's
 * approval recorded before its journal (brain/process/schedule-gate-upgrade.ts).
 */
export async function validateEndedRun(deps: Pick<BrainProcessDeps, 'runtime' | 'library' | 'store' | 'log'>, runId: string): Promise<RunConformance> {
  const view = await deps.runtime.state(runId);
  const wf = deps.library.get(view.run.workflow)?.workflow ?? null;
  const journal = wf ? await deps.runtime.journal(runId) : [];
  // A plan's schedule run begun before the plan gate was its first step: the gate passed before its journal.
  const preamble = wf && typeof view.run.input.plan === 'string' ? schedulePreamble(await deps.store.read(), view.run, journal) : undefined;
  const verdict = wf ? validateTrace(wf, view.run, journal, { preamble }) : null;
  if (verdict?.conforms) return { conforms: true, reason: null, line: verdict.line };
  const reason = verdict?.divergence?.reason ?? `workflow ${view.run.workflow} is not in the Brain's library: no admitted model to hold run ${runId} to`;
  const line = verdict?.line ?? `DIVERGES: ${runId} (${view.run.workflow}): ${reason}`;
  deps.log?.(`[polly] TRACE DIVERGENCE: ${line}`);
  await deps.store.update((_d, tx) =>
    tx.emit('run.trace_divergence', {
      run: runId,
      workflow: view.run.workflow,
      journalSeq: verdict?.divergence?.journalSeq ?? null,
      step: verdict?.divergence?.step ?? null,
      reason,
    }),
  );
  return { conforms: false, reason, line };
}

const tail = (text: string, max = 600): string => {
  const t = text.trim();
  return t.length > max ? `…${t.slice(t.length - max + 1)}` : t;
};

/**
 * Why a task's run ended where it did, in words from the step that ended it: the last `run.action`
 * of the run's journal and the report note that applied it (the task's own record fills in the
 * acceptance output and who cancelled). Null when the run ended `ready`.
 */
export function runEndReason(run: RunRecord, journal: RunJournalEntry[], task: Pick<TaskRecord, 'feedback' | 'statusReason'>): string | null {
  if (run.outcome === 'ready' || run.outcome === 'done' || (run.status === 'running' && runControlState(run) === WATCHING_STATE)) return null;
  const steps = journal.filter((e) => e.kind === 'run.action' && e.data.run === run.id);
  const last = steps.at(-1);
  const action = last ? String(last.data.action) : null;
  const reported = last ? journal.filter((e) => e.kind === 'run.reported' && e.data.run === run.id && e.seq < last.seq).at(-1) : undefined;
  const note = reported && reported.data.applied === action && typeof reported.data.note === 'string' ? reported.data.note.replace(/^[a-z_]+: /, '') : null;
  const vars = (run.state as unknown as RunState).vars ?? {};
  const because = note ? `: ${note}` : '';
  if (run.outcome === 'closed') return 'the PR was closed by a human without merging';
  if (run.outcome === 'parked') return parkedReason(action, fixRoundsStarted(journal, run.id), Number(vars.fix_rounds ?? 0), because, task);
  switch (action) {
    case 'WORKER_FAILED':
      if (note?.includes(NO_CHANGE)) return task.statusReason?.startsWith(NO_CHANGE) ? task.statusReason : NO_CHANGE;
      // Failed before the agent (a setup, a refused command or agent): the tool's whole reason, with
      // the setup's last lines and the fix, not just the note's first line.
      if (note && task.statusReason?.startsWith(note) && task.statusReason.length > note.length) return task.statusReason;
      return `the worker failed${because}`;
    case 'PUSH_FAILED':
      return note?.includes(NO_CHANGE) ? NO_CHANGE : `the push failed${because}`;
    case 'TESTS_RED': {
      const attempts = Number(vars.attempts ?? 0) + 1;
      const output = task.feedback ? `; last output: ${tail(task.feedback)}` : '';
      return `acceptance red after ${attempts} attempt${attempts === 1 ? '' : 's'}${because}${output}`;
    }
    case 'REVIEW_BLOCKING': {
      const rounds = Number(vars.rounds ?? 0) + 1;
      return `review blocking after ${rounds} round${rounds === 1 ? '' : 's'}${because}`;
    }
    case 'REVIEW_FAILED':
      return `the review failed${because}`;
    case 'PR_FAILED':
      return `opening the draft PR failed${because}`;
    case 'MARK_FAILED':
      return `marking the PR ready failed${because}`;
    case 'CANCEL':
      return task.statusReason?.startsWith('cancelled') ? task.statusReason : 'cancelled by a CANCEL signal to its run';
    case 'HOST_LOST':
      return `the turn's remote host was lost and no re-offer is left (the plan's bound on re-offers after lost hosts)${task.statusReason ? `: ${task.statusReason}` : ''}`;
    default:
      return `the task's workflow ended in "${run.outcome ?? 'failed'}"${action ? ` after ${action}` : ''}${because}`;
  }
}

/**
 * Why a run ended `parked`, from the action that parked it: the fix rounds exhausted (the PR event
 * or the red re-test / blocking re-review that found no round left), or a failure after the PR
 * was ready (a worker, the base merge, the push, the re-review or marking ready failed).
 * @param rounds    fix rounds the run started ({@link fixRoundsStarted})
 * @param attempts  worker attempts after ready (the workflow's `fix_rounds`)
 */
function parkedReason(action: string | null, rounds: number, attempts: number, because: string, task: Pick<TaskRecord, 'feedback'>): string {
  // Rounds as the journal counts them (one per batch of PR events); the bound counts the worker
  // attempts after ready, a red re-test inside a round being one more (issue 35: "3 fix rounds
  // used" was said of 1 round with 3 attempts).
  const over = attempts !== rounds ? ` over ${attempts} worker attempt${attempts === 1 ? '' : 's'}` : '';
  const used = `${rounds} fix round${rounds === 1 ? '' : 's'} used${over}; config pr.max_fix_rounds bounds the worker attempts after the PR is ready`;
  const what: Record<string, string> = {
    FEEDBACK: 'a change request on the PR',
    CHECKS_FAILED: "a failing check on the PR's head",
    CONFLICTS: 'the PR conflicts with its base',
    TESTS_RED: 'acceptance is still red',
    REVIEW_BLOCKING: 'the re-review still has blocking findings',
  };
  if (action && what[action]) {
    const output = action === 'TESTS_RED' && task.feedback ? `; last output: ${tail(task.feedback)}` : '';
    return `parked for a human: ${what[action]}, and no fix round is left (${used})${because}${output}`;
  }
  const failed: Record<string, string> = {
    WORKER_FAILED: 'the worker failed during a fix round',
    INTEGRATE_FAILED: 'merging the base into the task branch failed',
    PUSH_FAILED: 'pushing the fix failed',
    REVIEW_FAILED: 'the re-review failed',
    MARK_FAILED: 'marking the PR ready again failed',
    HOST_LOST: "the fix round's remote host was lost and no re-offer is left",
  };
  return `parked for a human: ${action && failed[action] ? failed[action] : `the fix round ended after ${action ?? 'no step'}`}${because} (${used})`;
}

/**
 * Final run states → task statuses (journaled once, as inbox events). Every ended run is first
 * held to its admitted workflow ({@link validateEndedRun}): a divergence fails the task with the
 * reason. A failed task says why in words ({@link runEndReason}).
 */
export async function finishTasksOfEndedRuns(deps: BrainProcessDeps, now: () => Date): Promise<void> {
  const ended = await deps.runtime.list({ status: 'finished' });
  // A run watching its ready PR has settled too (until a PR event starts a fix round).
  const watching = (await deps.runtime.list({ status: 'running' })).filter((r) => typeof r.input.task === 'string' && runControlState(r) === WATCHING_STATE);
  const finished = [...ended, ...watching];
  const reg = await deps.store.read();
  // A task is finished once: `finishedAt` marks it (a tool may already have set a final status).
  const updates = finished.filter((run) => {
    const t = reg.tasks[String(run.input.task ?? '')];
    // A retried task's run under its earlier plan ended before the retry: not this task's end.
    return t && !t.finishedAt && isCurrentTaskRun(reg, t, run);
  });
  if (updates.length === 0) return;
  const outcomes = new Map<string, { diverged: string | null; reason: string | null }>();
  for (const run of updates) {
    if (run.outcome === 'parked') await abortBaseMerge(deps, reg.tasks[String(run.input.task)]!);
    const conformance = await validateEndedRun(deps, run.id);
    const t = reg.tasks[String(run.input.task)]!;
    outcomes.set(run.id, { diverged: conformance.reason, reason: runEndReason(run, await deps.runtime.journal(run.id), t) });
  }
  await deps.store.update((draft, tx) => {
    for (const run of updates) {
      const t = draft.tasks[String(run.input.task)];
      if (!t || t.finishedAt) continue;
      const { diverged, reason } = outcomes.get(run.id)!;
      const outcome = run.status === 'running' ? 'ready' : (run.outcome ?? (run.state as { state?: string }).state ?? 'failed');
      const at = now().toISOString();
      if (diverged) {
        const why = `the run diverged from its admitted workflow: ${diverged}`;
        if (canTransitionTask(t.status, 'failed')) transitionTask(t, 'failed', { reason: why, at });
        else t.statusReason = why;
      } else if (outcome === 'done') {
        // A human merged the PR (the merge watch recorded it): merged → done.
        if (t.status !== 'done') {
          if (t.status !== 'merged' && canTransitionTask(t.status, 'merged')) transitionTask(t, 'merged', { at });
          if (canTransitionTask(t.status, 'done')) transitionTask(t, 'done', { at });
        }
      } else if ((t.status === 'parked' || t.status === 'base_red') && outcome !== 'ready') {
        // Parked by its tool (a budget reached, brain/task-tools/turn-budget.ts), or waiting on a red
        // base (brain/task-tools/base-check.ts): it stays so, with its reason.
      } else {
        const to = outcome === 'ready' ? 'ready' : outcome === 'cancelled' || outcome === 'closed' ? 'cancelled' : outcome === 'parked' ? 'parked' : 'failed';
        if (!FINAL_TASK_STATUSES.has(t.status) || outcome !== 'ready') transitionTask(t, to, { at });
        if (t.status !== 'ready' && reason) t.statusReason = reason;
        if (t.status === 'parked')
          tx.emit('task.parked', {
            taskId: t.id,
            reason: t.statusReason ?? 'parked',
            pr: t.pr ? { number: t.pr.number, url: t.pr.url } : null,
            // Where the work is: the worktree stays in place (a backup ref only where one was made).
            worktree: t.worktree && existsSync(t.worktree) ? t.worktree : null,
            backupRef: t.backupRefs.at(-1) ?? null,
          });
      }
      t.finishedAt = at;
      t.updatedAt = at;
      tx.emit(['ready', 'done', 'merged'].includes(t.status) ? 'task.finished' : 'task.failed', {
        taskId: t.id,
        status: t.status,
        reason: t.statusReason,
        pr: t.pr ? { number: t.pr.number, url: t.pr.url, state: t.pr.state } : null,
      });
    }
  });
}

/**
 * A task parked mid-merge of its base: back the worktree up (everything, the half-resolved files
 * included, under `refs/polly/backup/`), then `git merge --abort`, so the branch is left as it was
 * pushed and a human finds a clean worktree plus the backup. Never a silent discard: the backup
 * ref is recorded on the task and journaled (`task.base_merge_aborted`).
 */
async function abortBaseMerge(deps: BrainProcessDeps, task: TaskRecord): Promise<void> {
  if (!task.worktree || !existsSync(task.worktree)) return;
  const git = createGitRunner();
  if ((await mergeHead(git, task.worktree)) === null) return;
  const backup = await deps.worktrees.backup({ id: task.id, reason: 'parked during a base merge' });
  await git.run(['merge', '--abort'], { cwd: task.worktree });
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[task.id];
    if (t && backup.ref && !t.backupRefs.includes(backup.ref)) t.backupRefs.push(backup.ref);
    tx.emit('task.base_merge_aborted', { taskId: task.id, backupRef: backup.ref ?? null });
  });
}

/** Cancel requested tasks: stop the worker group, back up the work, cancel the run. */
export async function handleCancels(deps: BrainProcessDeps, reg: Registry, log: (l: string) => void, now: () => Date): Promise<void> {
  for (const task of Object.values(reg.tasks)) {
    if (!task.cancelRequested || task.status === 'cancelled') continue;
    const stopped = await deps.supervisor.cancelTask(task.id);
    let backupRef: string | null = null;
    if (task.worktree || task.branch) {
      try {
        const removed = await deps.worktrees.remove({ id: task.id, reason: 'cancelled' });
        backupRef = removed.ref;
      } catch (error) {
        log(`[polly] ${task.id}: backup on cancel failed: ${isPollyError(error) ? error.message : String(error)}`);
      }
    }
    if (task.host && deps.hostCleanup) await removeOnHost({ store: deps.store, hosts: deps.hostCleanup, progress: log }, task.id, task.host);
    const run = (await deps.runtime.list({})).find((r) => r.input.task === task.id && r.status === 'running');
    if (run) await deps.runtime.signal(run.id, 'CANCEL');
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[task.id]!;
      transitionTask(t, 'cancelled', { reason: t.workClaim?.lost ?? 'cancelled by sys_cancel_task', at: now().toISOString(), finished: true });
      if (backupRef) t.backupRefs = [...t.backupRefs, backupRef];
      tx.emit('task.cancelled', { taskId: t.id, workersStopped: stopped.cancelled, backupRef });
    });
    log(`[polly] ${task.id}: cancelled; work kept in ${backupRef ?? '(no worktree)'}`);
  }
}

/**
 * Run one read-only task (explore, search, review: a Brain's ad-hoc `sys_session_send`, or a plan's
 * read-only task) in the main checkout; idempotent per task.
 *
 * Its hard budget is enforced as for implement work (brain/task-tools/turn-budget.ts): the task's
 * `budget` (a plan task's resolved limit; an ad-hoc task's is config `budgets.per_task`, set when it
 * was dispatched) and, for a plan task, its goal's limit. A limit already reached means the worker
 * is not started; one reached while it runs stops it between model calls. Either way the task is
 * `parked` with the reason, its report so far kept on the task, and `budget.reached` + `task.parked`
 * journaled. Nothing is backed up: read-only work changes no file.
 */
export async function runReadOnlyTask(
  deps: Pick<BrainProcessDeps, 'store' | 'supervisor' | 'config' | 'repoRoot' | 'gateContext' | 'agentEnv' | 'onWorkerEvent'>,
  taskId: string,
  log: (l: string) => void,
  now: () => Date,
): Promise<void> {
  const task = (await deps.store.read()).tasks[taskId];
  if (!task || FINAL_TASK_STATUSES.has(task.status)) return;
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[taskId]!;
    if (t.status === 'queued' || t.status === 'dispatched') {
      t.startedAt = now().toISOString();
      transitionTask(t, 'running', { at: t.startedAt });
      tx.emit('task.status', { taskId, status: 'running' });
    }
  });
  // Not the Brain's signal: a stopping Brain leaves its workers running (docs/guide.md "Stopping and resuming").
  const watch = await createBudgetWatch({ store: deps.store, task, repoRoot: deps.repoRoot }, new AbortController().signal);
  const park = (draft: Registry, tx: RegistryTx, stop: BudgetStop, workerId: string | null): void => {
    const t = draft.tasks[taskId]!;
    const reason = budgetReason(stop, { readOnly: true });
    transitionTask(t, 'parked', { reason, at: now().toISOString(), finished: true });
    tx.emit('budget.reached', {
      taskId,
      goalId: stop.goalId,
      scope: stop.scope,
      kind: stop.reach.kind,
      limit: stop.reach.limit,
      spent: stop.reach.spent,
      orderId: `adhoc:${taskId}`,
      workerId,
    });
    tx.emit('task.parked', { taskId, reason, backupRef: null, budget: true });
    log(`[polly] ${taskId}: parked: ${reason}`);
  };
  const spentAlready = watch.stopped();
  if (spentAlready) {
    await deps.store.update((draft, tx) => park(draft, tx, spentAlready, null));
    return;
  }
  log(`[polly] ${taskId}: ${task.purpose} on ${task.worker} (read-only)`);
  // Read-only work runs in a detached checkout of its base (workers/git/base-checkout.ts): the
  // tracked tree and a git read view, never the main checkout's untracked or uncommitted files.
  // No ref may move (the ref guard puts back any that did).
  const guardCtx = { repoRoot: deps.repoRoot, store: deps.store, progress: log, clock: now, task: { id: taskId, branch: null }, order: { id: `adhoc:${taskId}` } };
  let outcome: Awaited<ReturnType<typeof withRefGuard<WorkerTurnResult>>>;
  try {
    outcome = await withBaseCheckout(
      {
        repoRoot: deps.repoRoot,
        worktreesDir: resolveWorktreesDir(deps.repoRoot, deps.config.worktrees?.dir),
        label: taskId.replace(/[^A-Za-z0-9_-]/g, '_'),
        rev: task.baseBranch ?? 'HEAD',
      },
      (checkout) =>
        withRefGuard(
          guardCtx,
          `the ${task.worker} ${task.purpose} turn`,
          () =>
            deps.supervisor.runTurn(
              withMeter(
                workerTurnRequest(deps.config, {
                  taskId,
                  orderId: `adhoc:${taskId}`,
                  harness: task.worker,
                  purpose: task.purpose,
                  cwd: checkout.path,
                  prompt: `${promptMarker(task)} ${task.title}\n\n${task.prompt}\n\nYou are read-only: read and report; do not change any file. End with a short report. Your directory is a checkout of the repository at commit ${checkout.commit}.`,
                  resumeSessionId: null,
                  model: task.model,
                  gateContext: { ...deps.gateContext, worktree: checkout.path },
                  env: deps.agentEnv,
                }),
                watch,
                deps.config,
              ),
              {
                signal: watch.signal,
                onEvent: (e) => {
                  watch.onEvent(e);
                  deps.onWorkerEvent?.(taskId, e);
                },
              },
            ),
          { allowLocal: [], confinement: (r) => r.sandboxMounts },
        ),
    );
  } catch (error) {
    if (!isPollyError(error, 'git_failed')) throw error;
    const reason = `no checkout for the read-only turn: ${error.message}`;
    await deps.store.update((draft, tx) => {
      const t = draft.tasks[taskId]!;
      transitionTask(t, 'failed', { reason, at: now().toISOString(), finished: true });
      tx.emit('task.failed', { taskId, status: t.status, report: '', reason });
    });
    log(`[polly] ${taskId}: failed: ${reason}`);
    return;
  }
  const { value: result, violation } = outcome;
  const stop = watch.stopped();
  await deps.store.update((draft, tx) => {
    const t = draft.tasks[taskId]!;
    recordTurnUsage(draft, tx, taskId, result, {
      role: task.purpose,
      harness: task.worker,
      orderId: `adhoc:${taskId}`,
      at: now().toISOString(),
      endpoint: modelEndpoint(task.worker, deps.config, deps.agentEnv),
    });
    t.sessionId = result.sessionId;
    t.report = result.finalText;
    if (stop && !violation) {
      park(draft, tx, stop, result.workerId);
      return;
    }
    transitionTask(t, violation ? 'failed' : result.status === 'ok' ? 'done' : result.status === 'cancelled' ? 'cancelled' : 'failed', {
      reason: violation ? violation.reason : result.status === 'ok' ? null : `${result.status}: ${result.message ?? result.stderr.slice(-500)}`,
      at: now().toISOString(),
      finished: true,
    });
    tx.emit(t.status === 'done' ? 'task.finished' : 'task.failed', { taskId, status: t.status, report: result.finalText.slice(0, 4000), reason: t.statusReason });
  });
}
