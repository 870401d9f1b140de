/**
 * The status report: what `polly status`, its `--json`, the live view and the Brain's `polly_status`
 * MCP tool show — goals, plans, tasks and live workers of a registry, sorted by id (`t2` before
 * `t10`). Pure over the registry, except that a worker row is listed only while its pid is alive.
 */
import type { GoalRecord, PlanRecord, PullRequestRef, Registry, TaskRecord, WorkerRecord } from './registry-schema.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { githubPullRequestStatus, pullRequestStatus, reviewText, type PullRequestStatus } from '../forge/pr-status.js';
import { costJson, sumTotals, type LedgerTotals, type TaskLedger } from './cost-ledger.js';
import type { Budget } from '../plan/budgets.js';
import { brainHealth, type BrainHealth } from './brain-health.js';
import { elideMiddle } from '../core/visible-text.js';

/** What was spent, for machines: the totals, and the cost as `{usd, complete}` (usd null: unknown; complete false: some turns unknown). */
export interface StatusCost {
  totals: LedgerTotals;
  cost: { usd: number | null; complete: boolean };
}

function statusCost(totals: LedgerTotals): StatusCost {
  return { totals, cost: costJson(totals) };
}

/** Compare ids so that `t2` sorts before `t10`. */
export function compareIds(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

export interface StatusTask {
  id: string;
  title: string;
  purpose: TaskRecord['purpose'];
  worker: TaskRecord['worker'];
  reviewer: TaskRecord['reviewer'];
  status: TaskRecord['status'];
  branch: string | null;
  worktree: string | null;
  /** The remote host (a `workers.hosts` name) holding the task's remote worktree, or null: this machine only. */
  host: string | null;
  pr: PullRequestRef | null;
  /**
   * The PR's review/check/conflict state (brain/forge/pr-status.ts) as last recorded: for a local
   * forge PR from its registry record (checks: the task's acceptance results); for a GitHub PR from
   * what the PR watcher last saw (brain/forge/github-watch.ts).
   * Null without a PR.
   */
  prStatus: PullRequestStatus | null;
  /**
   * What the cross-review found, in words (brain/forge/pr-status.ts `reviewText`), when `prStatus.review`
   * is only `commented` (Polly's cross-review is a COMMENT review); absent otherwise.
   */
  reviewText?: string;
  /** GitHub: reviews and comments from accounts without write access, not acted on (never shown to the worker); absent when none. */
  untrustedFeedback?: number;
  /**
   * PR events of this ready task that the running Brain left waiting: its goal is not one that
   * Brain runs for (`polly resume PLAN-ID` acts on them; brain/process/pr-events.ts); absent when none.
   */
  prEventsWaiting?: NonNullable<TaskRecord['prEventsWaiting']>;
  /** Why it is in its status (a failure, a park), or null. */
  statusReason: string | null;
  /** Tokens and cost of its turns (brain/registry/cost-ledger.ts), per role too. */
  spent: StatusCost & { byRole: TaskLedger['byRole'] };
  /** Where the agent's own usage stream disagreed with the metering proxy, or said something impossible (one sentence each); absent: nothing found. */
  usageFindings?: string[];
  /** The hard budget in force, or null for none. */
  budget: Budget | null;
  /** A retried task's earlier attempts (`polly retry`): plan, status, reason, time; absent when never retried. */
  retriedFrom?: TaskRecord['retriedFrom'];
}

export interface StatusReport {
  repoRoot: string;
  /** The Brain's health and its one line (brain/registry/brain-health.ts): `polly status`'s first line. */
  health: BrainHealth;
  /** The Brain that runs; null when none does (a row whose pid is gone is reported in `brainGone`). */
  brain: Registry['brain'];
  /** The row a stopped or crashed Brain left (its pid is gone); `polly resume` continues its work. */
  brainGone: Registry['brain'];
  /**
   * With no Brain running: the tasks of approved plans that are not final (`running`, `queued`, …),
   * as `{id, status}` — nothing moves them until `polly resume` starts a Brain (e.g. after the
   * registry restore a `registry_corrupt` error advises). Empty while a Brain runs.
   */
  unattended: Array<{ id: string; status: TaskRecord['status'] }>;
  /** `reason`: why a failed goal failed (the Brain's last report), null otherwise. */
  /**
   * `spent`: the goal's whole spending (its tasks and its own LLM session); `brain`: the LLM
   * session's part, as the Brain's metering proxy counted it (one turn per model request).
   */
  goals: Array<Pick<GoalRecord, 'id' | 'text' | 'status' | 'planIds' | 'createdAt'> & { reason: string | null; spent: StatusCost; brain: StatusCost }>;
  plans: Array<{
    id: string;
    goalId: string | null;
    gate: PlanRecord['gate'];
    admitted: boolean | null;
    tasks: number;
    createdAt: string;
    spent: StatusCost;
    budgets: PlanRecord['budgets'] | null;
  }>;
  tasks: StatusTask[];
  workers: Array<Pick<WorkerRecord, 'id' | 'taskId' | 'harness' | 'pid' | 'sessionId' | 'startedAt' | 'heartbeatAt' | 'host'>>;
  /**
   * Set only when a file system Polly writes (`.polly/`, the worktrees) is nearly full: one line
   * each, naming the mount point, its free space and what to free (brain/core/io-fault.ts `diskReport`).
   */
  disk?: string[];
}

function byId<T extends { id: string }>(map: Record<string, T>): T[] {
  return Object.values(map).sort((a, b) => compareIds(a.id, b.id));
}

/** A worker row whose process still runs (its recorded state says so and its pid is alive). */
function workerLive(w: WorkerRecord): boolean {
  const state = (w as WorkerRecord & { state?: string }).state;
  if (state === 'exited' || state === 'dead') return false;
  return pidAlive(w.pid);
}

/** The tasks of a plan. */
function planTasks(reg: Registry, planId: string): TaskRecord[] {
  return Object.values(reg.tasks).filter((t) => t.planId === planId);
}

/** The status report of a registry (reads only process liveness besides the registry). */
export function statusReport(repoRoot: string, reg: Registry): StatusReport {
  return {
    repoRoot,
    health: brainHealth(reg),
    // Reconciled before it is shown: a Brain row whose process is gone is not a running Brain.
    brain: reg.brain && pidAlive(reg.brain.pid) ? reg.brain : null,
    brainGone: reg.brain && !pidAlive(reg.brain.pid) ? reg.brain : null,
    unattended:
      reg.brain && pidAlive(reg.brain.pid)
        ? []
        : Object.values(reg.tasks)
            .filter((t) => t.planId !== null && reg.plans[t.planId]?.gate === 'approved' && !FINAL_TASK_STATUSES.has(t.status))
            .sort((a, b) => compareIds(a.id, b.id))
            .map((t) => ({ id: t.id, status: t.status })),
    goals: byId(reg.goals).map((g) => ({
      id: g.id,
      text: g.text,
      status: g.status,
      planIds: g.planIds,
      createdAt: g.createdAt,
      reason: g.status === 'failed' ? (g.brainReport ?? null) : null,
      spent: statusCost(sumTotals([...g.planIds.flatMap((pid) => planTasks(reg, pid)).map((t) => t.ledger?.totals), g.ledger?.totals])),
      brain: statusCost(g.ledger?.totals ?? sumTotals([])),
    })),
    plans: byId(reg.plans).map((p) => ({
      id: p.id,
      goalId: p.goalId,
      gate: p.gate,
      admitted: p.admission ? p.admission.admitted : null,
      tasks: p.tasks.length,
      createdAt: p.createdAt,
      spent: statusCost(sumTotals(planTasks(reg, p.id).map((t) => t.ledger?.totals))),
      budgets: p.budgets ?? null,
    })),
    tasks: byId(reg.tasks).map((t) => ({
      id: t.id,
      title: t.title,
      purpose: t.purpose,
      worker: t.worker,
      reviewer: t.reviewer,
      status: t.status,
      branch: t.branch,
      worktree: t.worktree,
      host: t.host ?? null,
      // The watcher's memory (ETags, seen ids) is not status: its verdicts are in prStatus.
      pr: t.pr ? { forge: t.pr.forge, number: t.pr.number, url: t.pr.url, state: t.pr.state } : null,
      prStatus: !t.pr
        ? null
        : t.pr.forge === 'github'
          ? githubPullRequestStatus(t.pr.watch, t.pr.state)
          : pullRequestStatus(reg.pullRequests[String(t.pr.number)] ?? { reviews: [], state: t.pr.state }, t.checks),
      ...(t.pr && t.reviews.length > 0 ? commentedReviewText(t, reg) : {}),
      ...(t.pr?.forge === 'github' && t.pr.watch?.untrusted ? { untrustedFeedback: t.pr.watch.untrusted } : {}),
      ...(t.status === 'ready' && t.prEventsWaiting ? { prEventsWaiting: t.prEventsWaiting } : {}),
      statusReason: t.statusReason,
      spent: { ...statusCost(t.ledger?.totals ?? sumTotals([])), byRole: t.ledger?.byRole ?? {} },
      ...usageFindings(t),
      budget: t.budget ?? null,
      ...(t.retriedFrom ? { retriedFrom: t.retriedFrom } : {}),
    })),
    // Live workers only: a row whose runner and agent have exited is history (see the journal).
    workers: byId(reg.workers)
      .filter((w) => workerLive(w))
      .map((w) => ({
        id: w.id,
        taskId: w.taskId,
        harness: w.harness,
        host: w.host ?? null,
        pid: w.pid,
        sessionId: w.sessionId,
        startedAt: w.startedAt,
        heartbeatAt: w.heartbeatAt,
      })),
  };
}

/** `{usageFindings}`: what the cross-check of the kept turns found (brain/registry/cost-ledger.ts `crossCheckUsage`), or `{}`. */
function usageFindings(t: TaskRecord): { usageFindings?: string[] } {
  const found = (t.ledger?.turns ?? []).flatMap((x) => x.findings ?? []);
  return found.length > 0 ? { usageFindings: found } : {};
}

/** `{reviewText}` for a task whose PR's review state is `commented` and which has cross-review rounds; else `{}`. */
function commentedReviewText(t: TaskRecord, reg: Registry): { reviewText?: string } {
  const review = t.pr!.forge === 'github' ? t.pr!.watch?.review : pullRequestStatus(reg.pullRequests[String(t.pr!.number)] ?? { reviews: [], state: t.pr!.state }, t.checks).review;
  return review === 'commented' ? { reviewText: reviewText(review, t.reviews) } : {};
}

/**
 * A task's reason on one line: its first line, at most `max` characters (a longer one loses its
 * middle), followed by its fix whole: the first line's text from `Fix: ` on, or else a later line
 * that starts with `Fix` (a setup failure's last line). Polly's reasons end with what to do, and
 * that must never be cut. Terminal escapes are made visible by the caller (`polly status` passes every line
 * through `visibleLine`; the dashboard escapes it). Pure.
 * @param maxFix  the most characters of the fix shown (a longer one loses its middle too).
 */
export function reasonLine(reason: string, max = 300, maxFix = 1200): string {
  const lines = reason
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const first = lines[0] ?? '';
  const at = first.search(/\bFix: /);
  const fix = at > 0 ? first.slice(at) : (lines.slice(1).find((l) => /^Fix\b/.test(l)) ?? '');
  if (!fix) return elideMiddle(first, max);
  return `${elideMiddle(at > 0 ? first.slice(0, at).trim() : first, max)} ${elideMiddle(fix, maxFix)}`;
}
