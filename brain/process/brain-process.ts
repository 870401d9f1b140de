/**
 * The Brain process: one per repository. It owns the registry's `brain` row, supervises workers,
 * runs the tasks of approved plans on the durable runtime, runs read-only ad-hoc tasks, honours
 * cancels, expires plan asks, notices human merges, and hosts the LLM brain of each open goal.
 *
 * Event-driven: the loop sleeps on the journal (`store.waitForJournal`, fs.watch underneath) and
 * on its own in-flight work; nothing polls a model.
 *
 * Crash safety: every step of a task is a runtime step (one atomic registry write + journal line)
 * and every tool is idempotent per work-order id (brain/task-tools/types.ts). After a SIGKILL a new
 * Brain adopts live workers (workers/worker-supervisor.ts), claims the same open orders under the
 * same owner name, and finishes the run: no dispatch is repeated and nothing is merged.
 *
 * This file is the loop; its parts live beside it: `plan-schedule.ts` (each plan's admitted schedule
 * workflow, run on the runtime: which plan tasks start),
 * `order-executor.ts` (work orders, read-only tasks, cancels, run ends → task statuses),
 * `pr-events.ts` (a ready task's PR events → bounded fix rounds of its run).
 */

export { BRAIN_OWNER } from './order-executor.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { join } from 'node:path';
import { watchMerges } from '../forge/after-merge.js';
import { syncLandingOrder } from '../forge/landing-sync.js';
import { createGitRunner } from '../../workers/git/git.js';
import { PR_WATCH_DEFAULT_SECONDS } from '../forge/github-watch.js';
import { archiveFinished } from '../registry/registry-archive.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError, isPollyError } from '../core/errors.js';
import { diskReport, ensureReserve, ioFaultCode, releaseReserve } from '../core/io-fault.js';
import { expirePlanAsks } from '../plan/plan-gate.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { reviewerFor } from '../plan/plan-agents.js';
import type { PlanRecord, Registry, TaskRecord } from '../registry/registry-schema.js';
import { FINAL_TASK_STATUSES, isGoalFinal } from '../core/vocabulary.js';
import { newTaskRecord, planTaskId } from '../registry/task-record.js';
import { TAKEOVER_STATUSES, takeOverForRetry } from '../plan/plan-retry.js';
import { taskBudget } from '../plan/budgets.js';
import { driveSchedules, startPlanTask, type ScheduleMemory } from './plan-schedule.js';
import { syncWorkQueue, type WorkQueueMemory } from './work-queue.js';
import { WATCHING_STATE, executeOrder, finishTasksOfEndedRuns, handleCancels, runControlState, runReadOnlyTask } from './order-executor.js';
import { newPrRouteMemory, routePrEvents } from './pr-events.js';
import { toInboxEvents } from '../mcp/inbox-events.js';
import type { BrainProcessDeps, GoalBrain } from './brain-deps.js';
import { brainTurn, failGoal, reapPreviousGoalBrains } from './goal-brains.js';
import { acquireBrainLock } from './brain-lock.js';
import { startConfiguredNotifier } from '../notify/notifier.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import { recordPlanAdded } from '../plan/plan-library.js';
import { issueGatePass, newIssueGateMemory } from '../forge/issue-gate.js';
import { createIssueIntake, type IssueIntake } from '../forge/issue-intake.js';
import { DEFAULT_CONFIG } from '../config/config-schema.js';
import { endGoal } from '../registry/goal-lifecycle.js';

/** How long a finished goal tree stays in registry.json (for `polly status` and `polly goal`'s summary) before the Brain archives it (ms). */
export const ARCHIVE_AFTER_MS = 24 * 3600 * 1000;

/**
 * Take the repository's Brain row for this process.
 * @throws PollyError `already_running` naming the live Brain's pid.
 * @returns the previous Brain row (a crashed Brain's), if any, so its leftovers can be reaped.
 */
export async function claimBrain(store: RegistryStore, now: () => Date, pid = process.pid): Promise<Registry['brain']> {
  return store.update((draft, tx) => {
    const previous = draft.brain;
    if (previous && previous.pid !== pid && pidAlive(previous.pid)) {
      throw new PollyError(
        'already_running',
        `a Brain already runs for this repository (pid ${previous.pid}, started ${previous.startedAt}). Stop it first (kill ${previous.pid}) or let it finish; one Brain per repository.`,
        {
          details: { pid: previous.pid },
        },
      );
    }
    const at = now().toISOString();
    draft.brain = { pid, startedAt: at, heartbeatAt: at };
    tx.emit('brain.started', { pid, previous: previous ? { pid: previous.pid, startedAt: previous.startedAt } : null });
    return previous;
  });
}

/** A task record for one task of an approved plan. */
export function planTaskRecord(plan: PlanRecord, spec: PlanRecord['tasks'][number], config: PollyConfig, at: string): TaskRecord {
  const record = newTaskRecord(
    {
      id: planTaskId(plan, spec.key),
      planId: plan.id,
      title: spec.title,
      purpose: spec.purpose,
      worker: spec.worker,
      model: spec.model,
      reviewer: spec.purpose === 'implement' ? reviewerFor(spec, config.review.pairs) : null,
      prompt: spec.prompt,
      acceptance: spec.acceptance,
      dependsOn: spec.dependsOn.map((d) => planTaskId(plan, d)),
    },
    at,
  );
  // A declared base: the worktree starts from it and the PR targets it (issue 16).
  if (spec.base !== undefined) {
    record.base = spec.base;
    record.baseBranch = spec.base;
  }
  // The hard budget in force, resolved once (brain/plan/budgets.ts): what the human approved.
  const budget = taskBudget(spec.budget, plan.budgets);
  if (budget) record.budget = budget;
  if (spec.protectedPaths?.length) record.protectedPaths = [...spec.protectedPaths];
  if (spec.paths) record.paths = [...spec.paths];
  if (spec.stackedOn !== undefined) {
    // A stacked task starts from its parent's branch and its PR targets it, until the parent merges (brain/forge/after-merge.ts).
    const parent = planTaskId(plan, spec.stackedOn);
    record.stackedOn = parent;
    record.baseBranch = `polly/${parent}`;
  }
  return record;
}

/**
 * Why nothing more will happen: the registry holds no open goal, no unfinished task, and `runs`
 * (the runtime's runs: they live in the run store, not in registry.json) no unfinished plan
 * schedule run and no task run that reached `watching` (its PR ready again after a fix round)
 * whose task is not settled yet. A task run that watches a settled task is not open work: the
 * next PR event starts a Brain pass of its own.
 */
export function isIdle(reg: Registry, runs: readonly RunRecord[]): boolean {
  const openGoal = Object.values(reg.goals).some((g) => !isGoalFinal(g.status));
  const pendingPlan = Object.values(reg.plans).some((p) => p.gate === 'pending');
  const openTask = Object.values(reg.tasks).some((t) => !FINAL_TASK_STATUSES.has(t.status));
  const openSchedule = runs.some((r) => r.status === 'running' && typeof r.input.plan === 'string' && reg.plans[r.input.plan]?.gate === 'approved');
  const unsettled = runs.some(
    (r) => r.status === 'running' && typeof r.input.task === 'string' && runControlState(r) === WATCHING_STATE && reg.tasks[r.input.task]?.finishedAt === null,
  );
  return !openGoal && !pendingPlan && !openTask && !openSchedule && !unsettled;
}

/**
 * Run the Brain until `signal` aborts (or, with `exitWhenIdle`, until nothing is open).
 * @throws PollyError `already_running` when another live Brain owns the repository.
 */
export async function runBrainProcess(deps: BrainProcessDeps): Promise<void> {
  const now = deps.clock ?? (() => new Date());
  const lock = await takeBrainLock(deps, now);
  try {
    await runLocked(deps, now);
  } finally {
    await lock.release();
  }
}

/** How long a starting Brain waits for an idle Brain that is on its way out to release `.polly/brain.lock` (ms). */
const LEAVING_BRAIN_WAIT_MS = 10_000;

/**
 * Take `.polly/brain.lock`. A live holder that no longer owns the registry's Brain row is an idle
 * Brain exiting (it clears the row first, then releases the lock): wait for it, at most
 * {@link LEAVING_BRAIN_WAIT_MS}, instead of refusing the Brain that `polly pr request-changes`
 * started for feedback given just then.
 * @throws PollyError `already_running` when the holder still owns the row (or did not leave in time).
 */
async function takeBrainLock(deps: Pick<BrainProcessDeps, 'pollyDir' | 'store'>, now: () => Date): Promise<Awaited<ReturnType<typeof acquireBrainLock>>> {
  const started = Date.now();
  for (;;) {
    try {
      return await acquireBrainLock(deps.pollyDir, { now });
    } catch (error) {
      if (!isPollyError(error, 'already_running') || Date.now() - started > LEAVING_BRAIN_WAIT_MS) throw error;
      const holder = Number(error.details?.pid);
      if ((await deps.store.read()).brain?.pid === holder) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The Brain's loop, run while this process holds `.polly/brain.lock`. */
async function runLocked(deps: BrainProcessDeps, now: () => Date): Promise<void> {
  const log = deps.log ?? (() => {});
  const inflight = new Map<string, Promise<void>>();
  const goalBrains = new Map<string, { brain: GoalBrain; busy: boolean; cursor: number }>();
  const scheduleMemory: ScheduleMemory = new Map();
  const workQueueMemory: WorkQueueMemory = new Map();
  const prMemory = newPrRouteMemory();
  /** The goals this Brain runs for: open while it runs, or asked for (`actOnPrs`); their PR events are acted on. */
  const ownGoals = new Set<string>();
  // A level-triggered wake-up: work that ends while the loop body runs sets `woken`, so the next
  // sleep is skipped instead of lost (run-store steps do not move the registry journal, so a lost
  // poke would cost a whole 5 s timeout per step).
  let woken = false;
  let wake: () => void = () => {};
  const poke = () => {
    woken = true;
    wake();
  };

  const previous = await claimBrain(deps.store, now);
  // A stop request ends the standby runners and lets no new worker start, at once: the loop may be
  // mid-pass, and in-flight work (a setup, a check) would otherwise go on to start a turn that
  // outlives this process (issue 35). Live workers keep running for the next Brain.
  const stopSupervisor = () => deps.supervisor.stop?.();
  if (deps.signal?.aborted) stopSupervisor();
  deps.signal?.addEventListener('abort', stopSupervisor, { once: true });
  // Notifications follow the journal beside this loop and never block it (brain/notify/notifier.ts).
  const notifier = startConfiguredNotifier({
    store: deps.store,
    config: deps.config,
    pollyDir: deps.pollyDir,
    log,
    ...(deps.notificationSinks ? { sinks: deps.notificationSinks } : {}),
  });
  if (previous && previous.pid !== process.pid) log(`[polly] the previous Brain (pid ${previous.pid}) is gone; adopting its work`);
  await reapPreviousGoalBrains(deps, log);
  const reconciled = await deps.supervisor.reconcile();
  if (reconciled.adopted.length || reconciled.reaped.length)
    log(`[polly] workers adopted: ${reconciled.adopted.join(', ') || 'none'}; reaped: ${reconciled.reaped.join(', ') || 'none'}`);

  let cursor = (await deps.store.journal()).at(-1)?.seq ?? 0;
  let lastMergePass = 0;
  let lastPrWatch = 0;
  // Issues (issue 30): the plan gate on the issue of each goal that came from one, and the intake when configured.
  const issueMemory = newIssueGateMemory();
  const intakeConfig = deps.config.intake ?? DEFAULT_CONFIG.intake!;
  const intake: IssueIntake | null = deps.issues && intakeConfig.in_brain ? createIssueIntake({ store: deps.store, tracker: deps.issues, label: intakeConfig.label, now }) : null;
  let lastIntake = 0;
  const prWatchMs = (deps.prWatchSeconds ?? PR_WATCH_DEFAULT_SECONDS) * 1000;
  let lastHeartbeat = Date.now();

  const spawnWork = (key: string, work: () => Promise<void>) => {
    if (inflight.has(key)) return;
    const p = work()
      .catch((error: unknown) => log(`[polly] ${key}: ${isPollyError(error) ? error.message : String((error as Error)?.stack ?? error)}`))
      .finally(() => {
        inflight.delete(key);
        poke();
      });
    inflight.set(key, p);
  };

  ensureReserve(deps.pollyDir);
  try {
    for (;;) {
      if (deps.signal?.aborted) break;
      woken = false;
      try {
        await expirePlanAsks(deps.store, deps.config, now());
        let reg = await deps.store.read();

        await handleCancels(deps, reg, log, now);
        reg = await createPlanTasks(deps, reg, now);
        for (const plan of Object.values(reg.plans)) if (plan.gate === 'approved') await recordPlanAdded(deps.store, deps.library.addPlan(plan));

        // Drive every run of our plan tasks: claim the open order and perform its tool.
        for (const run of await deps.runtime.list({ status: 'running' })) {
          const taskId = String(run.input.task ?? '');
          const order = run.openOrder;
          if (!taskId || !order || inflight.has(order.id)) continue;
          if (order.availableAt && Date.parse(order.availableAt) > now().getTime()) continue;
          spawnWork(order.id, () => executeOrder(deps, run, order, log, now));
        }
        // Runs that ended: reflect their outcome on the task (each run held to its admitted workflow).
        await finishTasksOfEndedRuns(deps, now);
        // PR events of ready tasks → fix rounds in the same session; a human's merge or close ends the run.
        // Only this Brain's goals' PRs are acted on (issue 35 item 6); the others' events wait, shown.
        await claimOwnGoals(deps, ownGoals);
        await routePrEvents(deps, prMemory, log, now, (goalId) => deps.allPrs === true || goalId === null || ownGoals.has(goalId));
        // Several Pollys on one store: claims renewed or settled, followed claims' outcomes taken over here.
        await syncWorkQueue(deps, workQueueMemory, log, now, async (plan, key) => {
          await startPlanTask(deps, plan, key, log, now);
        });
        // The plans' schedules: task ends reported, dependants skipped, the next turn's dispatches.
        await driveSchedules(deps, scheduleMemory, log, now);

        // Read-only ad-hoc tasks (explore, search, review dispatched by sys_session_send).
        reg = await deps.store.read();
        for (const task of Object.values(reg.tasks)) {
          if (task.purpose === 'implement' || task.cancelRequested || task.workClaim?.mine === false) continue;
          // A plan's read-only task waits for its schedule to dispatch it; an ad-hoc one starts at once.
          const startable = task.status === 'dispatched' || task.status === 'running' || (task.status === 'queued' && !task.planId);
          if (startable) spawnWork(`adhoc:${task.id}`, () => runReadOnlyTask(deps, task.id, log, now));
        }

        await completeGoals(deps, now);

        // The LLM brains of open goals.
        reg = await deps.store.read();
        if (deps.startGoalBrain) {
          for (const goal of Object.values(reg.goals)) {
            if (goal.mode === 'plan') continue; // a human-written plan: no LLM brain
            if (goal.reopenedFor === 'prs') continue; // open again only for its PRs' fix rounds (polly resume)
            const open = !isGoalFinal(goal.status);
            const hosted = goalBrains.get(goal.id);
            if (!open) {
              if (hosted && !hosted.busy) {
                goalBrains.delete(goal.id);
                void hosted.brain.close();
              }
              continue;
            }
            if (!hosted) {
              const resume = goal.brainSessionId ?? null;
              let brain: GoalBrain;
              try {
                brain = await deps.startGoalBrain(goal, resume);
              } catch (error) {
                // The LLM brain cannot start (root without allow_root_sandbox, a missing CLI…): the goal
                // fails with the reason instead of the Brain dying and being restarted in a loop.
                await failGoal(deps, goal.id, isPollyError(error) ? `${error.code}: ${error.message}` : String((error as Error)?.message ?? error));
                continue;
              }
              const entry = { brain, busy: false, cursor: reg.inboxCursor ?? cursor };
              goalBrains.set(goal.id, entry);
              await deps.store.update((draft, tx) => {
                const g = draft.goals[goal.id];
                if (g) g.brainPid = brain.pid;
                tx.emit('brain.goal_session', { goalId: goal.id, pid: brain.pid, resumed: resume !== null });
              });
              const first = resume ? deps.messages!.wake(toInboxEvents(await deps.store.journal(entry.cursor))) : deps.messages!.first(goal);
              spawnWork(`brain:${goal.id}`, () => brainTurn(deps, goal.id, entry, first, now));
              continue;
            }
            if (!hosted.busy) {
              const events = toInboxEvents(await deps.store.journal(Math.max(hosted.cursor, reg.inboxCursor ?? 0)));
              if (events.length > 0) {
                hosted.cursor = events[events.length - 1]!.seq;
                spawnWork(`brain:${goal.id}`, () => brainTurn(deps, goal.id, hosted, deps.messages!.wake(events), now));
              }
            }
          }
        }

        const mergeDue = Date.now() - lastMergePass > (deps.mergeWatchSeconds ?? 30) * 1000;
        const watchDue = deps.prWatcher != null && Date.now() - lastPrWatch > prWatchMs;
        if (watchDue) {
          lastPrWatch = Date.now();
          // GitHub: reviews, comments, checks and mergeability become journal events (which wake the goal's brain).
          try {
            const watched = await deps.prWatcher!.pass();
            for (const e of watched.errors) log(`[polly] PR #${e.number}: could not read it from GitHub (next pass retries): ${e.message}`);
          } catch (error) {
            log(`[polly] the GitHub PR watch pass failed (next pass retries): ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}`);
          }
        }
        // The plan gate on issues: locally every pass (the registry only), on GitHub with the PR watcher (its requests are conditional).
        const issues = deps.issues;
        if (issues && (issues.kind === 'local' || watchDue)) {
          try {
            const gate = await issueGatePass({ store: deps.store, tracker: issues, config: deps.config, now, log }, issueMemory);
            for (const e of gate.errors) log(`[polly] issue #${e.number}: the plan gate on the issue could not run (next pass retries): ${e.message}`);
          } catch (error) {
            log(`[polly] the issue pass failed (next pass retries): ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}`);
          }
        }
        if (intake && Date.now() - lastIntake > intakeConfig.watch_seconds * 1000) {
          lastIntake = Date.now();
          try {
            const taken = await intake.pass();
            for (const t of taken.taken) log(`[polly] issue #${t.number} labelled ${intakeConfig.label} by ${t.labelledBy.join(', ')}: goal ${t.goalId}`);
          } catch (error) {
            log(`[polly] the issue intake failed (next pass retries): ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}`);
          }
        }
        if (mergeDue || watchDue) {
          // On GitHub the watcher has just read every open PR: the merge pass reads only those it found merged or closed.
          const report = await watchMerges({
            store: deps.store,
            forge: deps.forge,
            worktrees: deps.worktrees,
            progress: log,
            now,
            githubWatched: deps.prWatcher != null,
            hosts: deps.hostCleanup ?? null,
          });
          for (const d of report.done) log(`[polly] ${d.taskId}: PR #${d.number} was merged by a human; task done, worktree removed after backup ${d.backupRef ?? ''}`);
          // The landing order of the open PRs, kept current in the registry (the dashboard) and in each PR's body ("Land after #N").
          try {
            const landing = await syncLandingOrder({ store: deps.store, forge: deps.forge, git: createGitRunner(), repoRoot: deps.repoRoot, now });
            for (const e of landing.errors) log(`[polly] PR #${e.number}: could not write its landing order into the body (next pass retries): ${e.message}`);
          } catch (error) {
            log(`[polly] the landing order could not be computed (next pass retries): ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}`);
          }
        }
        if (mergeDue) {
          lastMergePass = Date.now();
          // The local forge's CI: open PRs whose base moved are checked on the merge (in flight: a red
          // check journals pr.checks_failed, which wakes the loop and is routed as a fix round).
          const localChecks = deps.localChecks;
          if (localChecks) {
            spawnWork('local-pr-checks', async () => {
              const checked = await localChecks.pass();
              for (const e of checked.errors) log(`[polly] PR #${e.number}: the check on the merge with its base could not run (next pass retries): ${e.message}`);
            });
          }
          // Finished goal trees a day old leave registry.json for archive.jsonl (registry-archive.ts): the registry stays small.
          await deps.store.update((draft, tx) => void archiveFinished(draft, tx, now().getTime() - ARCHIVE_AFTER_MS));
        }
        if (Date.now() - lastHeartbeat > 10_000) {
          lastHeartbeat = Date.now();
          ensureReserve(deps.pollyDir); // made again once space is back
          await deps.store.update((draft) => {
            if (draft.brain?.pid === process.pid) draft.brain.heartbeatAt = now().toISOString();
          });
        }

        reg = await deps.store.read();
        if (deps.exitWhenIdle && inflight.size === 0 && isIdle(reg, await deps.runtime.list({ status: 'running' }))) {
          // Leave the repository only if nothing was journaled since that read, in the same write
          // that clears the Brain row: feedback given meanwhile (`polly pr request-changes` starts a
          // Brain only when none is registered) is then either seen by this Brain's next pass or
          // finds no Brain registered and starts one — never lost in between.
          const seen = reg.counters.journalSeq;
          const leaving = await deps.store.update((draft, tx) => {
            if (draft.counters.journalSeq !== seen) return false;
            if (draft.brain?.pid === process.pid) {
              draft.brain = null;
              tx.emit('brain.stopped', { pid: process.pid, graceful: false, inFlight: [], idle: true });
            }
            return true;
          });
          if (leaving) {
            log('[polly] nothing open: the Brain exits');
            break;
          }
          continue;
        }
        // Sleep until the journal moves, in-flight work ends, or a timer is due.
        if (woken) continue;
        const wakeUp = new Promise<readonly []>((r) => (wake = () => r([])));
        // At most 5 s, less when the PR watcher is due sooner.
        const sleepMs = deps.prWatcher ? Math.min(5000, Math.max(100, lastPrWatch + prWatchMs - Date.now() + 1)) : 5000;
        const entries = await Promise.race([deps.store.waitForJournal(cursor, sleepMs, deps.signal), wakeUp]);
        if (entries.length) cursor = entries[entries.length - 1]!.seq;
      } catch (error) {
        // A full disk or a failing device under `.polly/` (brain/core/io-fault.ts) never ends the
        // Brain: the reserve makes room, the pass is retried after a pause, in-flight work goes on.
        const fault = ioFaultCode(error);
        if (!fault) throw error;
        const released = releaseReserve(deps.pollyDir);
        log(
          `[polly] I/O fault (${fault}) in the Brain's pass; ${diskReport([deps.pollyDir], Number.POSITIVE_INFINITY).join('; ')}${released ? '; the reserve in .polly/ was released' : ''}. Retrying in 2 s`,
        );
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  } catch (error) {
    if (isPollyError(error, 'registry_corrupt')) log(`[polly] the Brain stops: ${error.message}`);
    stopSupervisor(); // a fault ends this Brain too: nothing new may start on its way out
    throw error;
  } finally {
    deps.signal?.removeEventListener('abort', stopSupervisor);
    for (const { brain } of goalBrains.values()) await brain.close().catch(() => {});
    await notifier.stop();
    // A graceful stop (SIGTERM/SIGINT) or a fault does not wait for in-flight work: the workers are
    // detached runners and keep running; the next Brain adopts them and claims the same open work
    // orders (tools are idempotent per order id), exactly as after a SIGKILL. No task fails because
    // its orchestrator stopped. The caller exits the process (brain/commands/brain.ts).
    const left = [...inflight.keys()];
    await deps.store
      .update((draft, tx) => {
        if (draft.brain?.pid === process.pid) {
          draft.brain = null;
          tx.emit('brain.stopped', { pid: process.pid, graceful: deps.signal?.aborted ?? false, inFlight: left });
        }
      })
      .catch(() => {});
    if (left.length > 0) log(`[polly] stopped; left running for the next Brain to adopt: ${left.join(', ')}`);
  }
}

/**
 * Add to `own` every goal that is open now and every goal a command asked for (`actOnPrs`, which
 * is cleared: the ask is this Brain's now). A goal that finished before this Brain started and was
 * not asked for stays another run's: its PRs are watched, their events wait (brain/process/pr-events.ts).
 */
async function claimOwnGoals(deps: Pick<BrainProcessDeps, 'store'>, own: Set<string>): Promise<void> {
  const reg = await deps.store.read();
  for (const g of Object.values(reg.goals)) if (!isGoalFinal(g.status)) own.add(g.id);
  const asked = Object.values(reg.goals).filter((g) => g.actOnPrs);
  if (asked.length === 0) return;
  for (const g of asked) own.add(g.id);
  await deps.store.update((draft, tx) => {
    for (const g of asked) {
      const goal = draft.goals[g.id];
      if (!goal?.actOnPrs) continue;
      delete goal.actOnPrs;
      tx.emit('goal.prs_claimed', { goalId: g.id, pid: process.pid });
    }
  });
}

/** Create task records (queued) for every approved plan that has none yet. */
async function createPlanTasks(deps: BrainProcessDeps, reg: Registry, now: () => Date): Promise<Registry> {
  const missing = Object.values(reg.plans).filter((p) => p.gate === 'approved' && p.tasks.some((t) => reg.tasks[planTaskId(p, t.key)]?.planId !== p.id));
  if (missing.length === 0) return reg;
  await deps.store.update((draft, tx) => {
    const at = now().toISOString();
    for (const plan of missing) {
      for (const spec of plan.tasks) {
        const id = planTaskId(plan, spec.key);
        const existing = draft.tasks[id];
        if (existing?.planId === plan.id) continue;
        if (existing && plan.retries?.[spec.key] === id) {
          // A retry plan takes its stopped task over: same worktree, branch and PR (brain/plan/plan-retry.ts).
          // Taken over by another retry, or running again; or this plan held it once and a later retry took it from it.
          if (!TAKEOVER_STATUSES.has(existing.status) || existing.retriedFrom?.some((r) => r.planId === plan.id)) continue;
          const from = existing.planId;
          const budgetBefore = existing.budget ?? null;
          const left = takeOverForRetry(existing, plan, spec.key, at);
          tx.emit('task.retried', { taskId: id, planId: plan.id, fromPlanId: from, previousStatus: left, worktree: existing.worktree, pr: existing.pr?.number ?? null });
          const budgetAfter = existing.budget ?? null;
          // The budget the human approved for the retry (polly retry --budget, the dashboard's retry form).
          if (JSON.stringify(budgetBefore) !== JSON.stringify(budgetAfter)) tx.emit('task.budget_changed', { taskId: id, planId: plan.id, from: budgetBefore, to: budgetAfter });
          continue;
        }
        if (existing) continue;
        draft.tasks[id] = planTaskRecord(plan, spec, deps.config, at);
        tx.emit('task.created', { taskId: id, planId: plan.id, purpose: spec.purpose, worker: spec.worker });
      }
    }
  });
  return deps.store.read();
}

/** A goal is done when its approved plan's tasks have all reached a final state. */
async function completeGoals(deps: BrainProcessDeps, now: () => Date): Promise<void> {
  const reg = await deps.store.read();
  // Runs live in the run store (.polly/runs), not in registry.json.
  const runs = await deps.runtime.list();
  const done = Object.values(reg.goals).filter((g) => {
    if (isGoalFinal(g.status)) return false;
    // Reopened by polly resume for its PRs' waiting events: open until this Brain has taken the ask.
    if (g.actOnPrs) return false;
    const plans = g.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => Boolean(p));
    if (plans.some((p) => p.gate === 'rejected' || p.gate === 'expired') && !plans.some((p) => p.gate === 'approved' || p.gate === 'pending')) return true;
    const approved = plans.filter((p) => p.gate === 'approved');
    if (approved.length === 0) return false;
    // Settled: a final status and its finish recorded (the task.finished/failed event was journaled).
    // …and its schedule run finished (FINISH, its trace validated).
    const scheduleFinished = (planId: string): boolean => runs.some((r) => r.input.plan === planId && r.status === 'finished');
    return approved.every(
      (p) =>
        scheduleFinished(p.id) &&
        p.tasks.every((s) => {
          const t = reg.tasks[planTaskId(p, s.key)];
          // A task handed to a later retry plan is that plan's to settle.
          return t !== undefined && ((FINAL_TASK_STATUSES.has(t.status) && Boolean(t.finishedAt)) || t.planId !== p.id);
        }),
    );
  });
  if (done.length === 0) return;
  await deps.store.update((draft, tx) => {
    for (const g of done) {
      const goal = draft.goals[g.id]!;
      // Ended by another writer since the read above (a failed schedule, a refused plan): it stays as it ended.
      if (isGoalFinal(goal.status)) continue;
      const tasks = goal.planIds.flatMap((pid) => Object.values(draft.tasks).filter((t) => t.planId === pid));
      const ok = tasks.length > 0 && tasks.every((t) => ['ready', 'merged', 'done'].includes(t.status));
      delete goal.reopenedFor;
      endGoal(goal, ok ? 'done' : 'failed', tx, { at: now().toISOString(), tasks: tasks.map((t) => ({ id: t.id, status: t.status, pr: t.pr })) });
    }
  });
}

/** The default location of a goal brain's private state. */
export function goalStateDir(pollyDir: string, goalId: string): string {
  return join(pollyDir, 'brain', goalId);
}
