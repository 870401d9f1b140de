/**
 * Following a goal from the command line (`polly goal`, `polly run`): progress lines on stderr,
 * the plan gate's question (answered by `--yes`, an interactive prompt, or `polly plan approve`),
 * and the summary table on stdout once the goal is done.
 */
import { budgetLine } from './plan.js';
import { unboundedLine } from '../plan/plan-gate.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { readFileSync } from 'node:fs';
import { PollyError } from '../core/errors.js';
import { isGoalFinal } from '../core/vocabulary.js';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CommandIO } from './command.js';
import type { PollyConfig } from '../config/config-schema.js';
import { decidePlan } from '../plan/plan-gate.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { GoalRecord, JournalEntry, PlanRecord, Registry, TaskRecord } from '../registry/registry-schema.js';
import { ensureBrain, stopStartedBrain, type BrainStart } from '../process/daemon.js';
import { formatTable } from './table.js';
import { runLiveView } from './live-view.js';
import type { RepoContext } from '../registry/repo-context.js';

export interface SummaryRow {
  task: string;
  title: string;
  worker: string;
  reviewer: string | null;
  status: string;
  /** e.g. `red → green` or `green`. */
  checks: string;
  /** `blocking/non-blocking` over all review rounds, e.g. `1/2`. */
  findings: string;
  pr: { number: number; url: string; state: string } | null;
  /** Seconds from the first dispatch to the final state. */
  seconds: number | null;
}

/**
 * Summary rows of a goal's tasks (pure).
 * @param journal  the journal (for the history of acceptance runs: `task.checks` entries).
 */
export function goalSummary(reg: Registry, goalId: string, journal: readonly JournalEntry[] = []): SummaryRow[] {
  const goal = reg.goals[goalId];
  if (!goal) return [];
  const tasks = Object.values(reg.tasks).filter((t) => t.planId !== null && goal.planIds.includes(t.planId));
  return tasks.map((t: TaskRecord) => {
    const runs = checkRuns(t, journal);
    const blocking = t.reviews.reduce((n, r) => n + r.blocking.length, 0);
    const nonBlocking = t.reviews.reduce((n, r) => n + r.nonBlocking.length, 0);
    const seconds = t.startedAt && t.finishedAt ? Math.round((Date.parse(t.finishedAt) - Date.parse(t.startedAt)) / 1000) : null;
    return {
      task: t.id,
      title: t.title,
      worker: t.worker,
      reviewer: t.reviewer,
      status: t.status,
      checks: runs.length ? runs.join(' → ') : '-',
      findings: t.reviews.length ? `${blocking}/${nonBlocking}` : '-',
      pr: t.pr ? { number: t.pr.number, url: t.pr.url, state: t.pr.state } : null,
      seconds,
    };
  });
}

/** Each acceptance run of a task as `red` or `green`, from its `task.checks` journal entries. */
function checkRuns(t: TaskRecord, journal: readonly JournalEntry[]): string[] {
  const history = journal.filter((e) => e.kind === 'task.checks' && e.data.taskId === t.id);
  if (history.length) return history.map((e) => (e.data.green ? 'green' : 'red'));
  if (!t.checks.length) return [];
  return [t.checks.every((c) => c.exitCode === 0) ? 'green' : 'red'];
}

/** What the summary's less obvious columns mean: printed under the table. */
export const SUMMARY_LEGEND =
  "CHECKS: each run of the acceptance commands by Polly, in order. FINDINGS: the cross-review's findings over all rounds, blocking/non-blocking (blocking ones go back to the worker; '-' not reviewed).";

/** The summary as table lines, then {@link SUMMARY_LEGEND}. */
export function formatSummary(rows: SummaryRow[]): string[] {
  const table = formatTable(
    [
      { header: 'TASK', value: (r: SummaryRow) => r.task },
      { header: 'WORKER', value: (r) => r.worker },
      { header: 'REVIEWER', value: (r) => r.reviewer },
      { header: 'STATUS', value: (r) => r.status },
      { header: 'CHECKS', value: (r) => r.checks },
      { header: 'FINDINGS', value: (r) => r.findings },
      { header: 'PR', value: (r) => (r.pr ? `#${r.pr.number} ${r.pr.state}` : null) },
      { header: 'TIME', value: (r) => (r.seconds === null ? null : `${r.seconds}s`) },
      { header: 'TITLE', value: (r) => r.title, max: 40 },
    ],
    rows,
  );
  return rows.length ? [...table, '', SUMMARY_LEGEND] : table;
}

/** One progress line for a journal entry of this goal, or null when it is not worth showing. */
export function progressLine(e: JournalEntry): string | null {
  const d = e.data as Record<string, unknown>;
  switch (e.kind) {
    case 'plan.proposed':
      return `[polly] plan ${d.planId}: ${d.line}`;
    case 'plan.refused':
      return `[polly] plan ${d.planId}: ${d.line} — ${(d.violations as string[]).join(', ')}`;
    case 'plan.approved':
      return `[polly] plan ${d.planId} approved by ${d.by}`;
    case 'plan.rejected':
    case 'plan.expired':
      return `[polly] plan ${d.planId} ${e.kind.slice(5)}`;
    case 'task.queued':
      return `[polly] ${d.taskId}: queued ${d.purpose} on ${d.worker}`;
    case 'task.started':
      return `[polly] ${d.taskId}: dispatched to ${d.worker} (reviewer ${d.reviewer ?? '-'})`;
    case 'task.status':
      return `[polly] ${d.taskId}: ${d.status}`;
    case 'task.finished':
      return `[polly] ${d.taskId}: ${d.status}${d.pr ? ` — PR #${(d.pr as { number: number }).number}` : ''}`;
    case 'task.failed':
      return `[polly] ${d.taskId}: ${d.status}: ${d.reason ?? ''}`;
    case 'task.cancelled':
      return `[polly] ${d.taskId}: cancelled (${workKept(d)})`;
    case 'task.parked':
      return `[polly] ${d.taskId}: parked (${workKept(d)}): ${d.reason ?? ''}`;
    case 'pr.opened':
      return `[polly] PR #${d.number} opened (draft) for ${d.head ?? d.taskId ?? ''}`;
    case 'goal.done':
      return `[polly] goal ${d.goalId}: ${d.status}${d.reason ? ` — ${d.reason}` : ''}`;
    default:
      return null;
  }
}

export interface FollowOptions {
  /** The pid of a Brain the caller just started (it may not own the registry yet). */
  brainPid?: number | null;
  store: RegistryStore;
  config: PollyConfig;
  repoRoot: string;
  pollyDir: string;
  goalId: string;
  /** Journal seq to follow from (the goal's creation). */
  afterSeq: number;
  /** Approve admitted plans without asking (`--yes`). */
  yes: boolean;
  /** Ask on the terminal when stdin is a TTY. */
  interactive: boolean;
  io: CommandIO;
  /** Restart the Brain if it dies while the goal is open (default true). */
  keepBrainAlive?: boolean;
  brainArgs?: string[];
  signal?: AbortSignal;
  /** Called with each Brain this follow starts again (a dead Brain restarted): the caller owns it. */
  onBrainStarted?: (brain: BrainStart) => void;
}

/** What ended the plan gate's question: the answer typed, or a decision made elsewhere (the dashboard, `polly plan approve`, an expiry). */
export type GateAnswer = { kind: 'answer'; yes: boolean } | { kind: 'decided'; plan: PlanRecord };

/**
 * Resolve with plan `planId` once it is no longer pending, or null when `signal` aborts first.
 * Woken by every journal append after `afterSeq` (`RegistryStore.waitForJournal`: a file watch,
 * with a poll as fallback), and it looks at least every 500 ms.
 */
async function decisionOf(store: Pick<RegistryStore, 'read' | 'waitForJournal'>, planId: string, afterSeq: number, signal: AbortSignal): Promise<PlanRecord | null> {
  let cursor = afterSeq;
  while (!signal.aborted) {
    const plan = (await store.read()).plans[planId];
    if (plan && plan.gate !== 'pending') return plan;
    const entries = await store.waitForJournal(cursor, 500, signal);
    cursor = entries.at(-1)?.seq ?? cursor;
  }
  return null;
}

/**
 * Ask the plan gate's question on the terminal, and stop asking the moment the plan is decided
 * anywhere else (issue 32 item 3): then the prompt line is ended and the caller says who decided.
 * @param afterSeq  the journal seq the question is asked at (decisions after it end the question).
 */
async function askAtGate(io: CommandIO, store: Pick<RegistryStore, 'read' | 'waitForJournal'>, planId: string, afterSeq: number, question: string): Promise<GateAnswer> {
  const rl = createInterface({ input: io.stdin, output: io.stderr });
  const stop = new AbortController();
  try {
    const answered = new Promise<GateAnswer>((resolve) => {
      // A terminal in raw mode turns Ctrl-C into a readline event, not a signal: pass it on as one.
      rl.once('SIGINT', () => {
        resolve({ kind: 'answer', yes: false });
        process.kill(process.pid, 'SIGINT');
      });
      rl.question(question, (answer) => resolve({ kind: 'answer', yes: /^y(es)?$/i.test(answer.trim()) }));
    });
    const decided = decisionOf(store, planId, afterSeq, stop.signal).then((plan): GateAnswer | Promise<GateAnswer> => (plan ? { kind: 'decided', plan } : answered));
    const first = await Promise.race([answered, decided]);
    // The question's line is left open by readline: end it before anything else is written.
    if (first.kind === 'decided') io.stderr.write('\n');
    return first;
  } finally {
    stop.abort();
    rl.close();
  }
}

/** `plan p3 was approved by human:alice (polly ui) at 2026-…: …`, for a decision the terminal did not make. Pure. */
export function decidedElsewhereLine(plan: Pick<PlanRecord, 'id' | 'gate' | 'decidedBy' | 'decidedAt'>): string {
  const who = plan.gate === 'expired' ? 'its ask expired (policies.ask_timeout)' : `by ${plan.decidedBy ?? 'someone'}`;
  const what = plan.gate === 'approved' ? 'its tasks run; the question here is closed' : 'nothing of it runs; the question here is closed';
  return `[polly] plan ${plan.id} was ${plan.gate} elsewhere, ${who}${plan.decidedAt ? ` at ${plan.decidedAt}` : ''}: ${what}`;
}

/** The signals that end a following command: Ctrl-C, `kill`, a closed terminal. */
/**
 * Where a parked or cancelled task's work is, from its event: the backup ref, and the worktree
 * where it is still in place; "no work kept" only when the event names neither (issue 35: "work
 * kept in no worktree" was said of a task whose worktree existed).
 */
function workKept(d: Record<string, unknown>): string {
  const ref = typeof d.backupRef === 'string' && d.backupRef ? d.backupRef : null;
  const tree = typeof d.worktree === 'string' && d.worktree ? d.worktree : null;
  if (ref && tree) return `work kept in ${ref} and in its worktree ${tree}`;
  if (ref) return `work kept in ${ref}`;
  if (tree) return `work in its worktree ${tree}`;
  return 'no work kept: it had no worktree';
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** The end of {@link followGoalInRepo}: the goal as it stands, and the signal that ended the follow (or null). */
export interface FollowEnd {
  goal: GoalRecord;
  /** Set when SIGINT/SIGTERM/SIGHUP ended the follow before the goal did; exit with {@link signalExitCode}. */
  interrupted: NodeJS.Signals | null;
}

/** The shell's exit code for a command ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143, SIGHUP 129). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as Record<string, number>)[signal]!;
}

/**
 * Follow `goalId` from a repository command (goal, run, resume): {@link followGoal} with the
 * context's store, config and paths, interactive when stdin is a terminal.
 *
 * The command owns every Brain it started (`goal.brain` when `started`, and any Brain the follow
 * restarts): when the follow ends — the goal final, an error, or SIGINT/SIGTERM/SIGHUP (handled
 * here while following; a second signal changes nothing) — each is ended by
 * {@link stopStartedBrain}, so neither the Brain nor its LLM session, MCP server and standby
 * runners outlive the command. A Brain that was already running is left alone.
 * @returns the goal (final unless interrupted) and the signal that interrupted, if any.
 */
export async function followGoalInRepo(ctx: RepoContext, io: CommandIO, goal: { goalId: string; afterSeq: number; yes: boolean; brain: BrainStart }): Promise<FollowEnd> {
  const owned: BrainStart[] = goal.brain.started ? [goal.brain] : [];
  const stop = new AbortController();
  let interrupted: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = signal;
    const ours = owned.filter((b) => b.started).map((b) => b.pid);
    io.stderr.write(`[polly] ${signal}: stopping${ours.length ? ` the Brain this command started (pid ${ours.join(', ')})` : ''}; polly resume continues the goal\n`);
    stop.abort();
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  try {
    const final = await followGoal({
      store: ctx.store,
      config: ctx.config,
      repoRoot: ctx.repo.root,
      pollyDir: ctx.repo.pollyDir,
      goalId: goal.goalId,
      afterSeq: goal.afterSeq,
      yes: goal.yes,
      brainPid: goal.brain.pid,
      interactive: Boolean((io.stdin as NodeJS.ReadStream).isTTY),
      io,
      signal: stop.signal,
      onBrainStarted: (b) => owned.push(b),
    });
    return { goal: final, interrupted };
  } finally {
    // Signals stay handled until the Brain is down: a second Ctrl-C must not kill this process
    // half-way and leave the Brain behind.
    await Promise.all(owned.map((b) => stopStartedBrain(b, { idleMs: interrupted ? 0 : 10_000 })));
    if (interrupted) {
      // Workers are detached runners by design: a turn under way ends by itself and the next Brain adopts its result.
      const running = Object.values((await ctx.store.read().catch(() => null))?.workers ?? {}).filter((w) => (w.state === 'running' || w.state === 'starting') && pidAlive(w.pid));
      if (running.length)
        io.stderr.write(
          `[polly] left finishing their turn (polly resume adopts them; kill -TERM -PGID ends one): ${running.map((w) => `${w.id} (${w.harness}, pgid ${w.pgid})`).join(', ')}\n`,
        );
    }
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  }
}

/**
 * Follow a goal until it is done: print progress, answer the plan gate, restart a dead Brain.
 * Returns early, with the goal as it stands, when `signal` aborts.
 * @returns the goal's final record.
 */
export async function followGoal(options: FollowOptions): Promise<GoalRecord> {
  const { store, io } = options;
  let cursor = options.afterSeq;
  let lastBrainCheck = Date.now();
  // A Brain we started may take a few seconds to claim the registry: don't start a second one.
  let startedPid: number | null = options.brainPid ?? null;
  let restarts = 0;
  // In a terminal, tasks and workers are shown by the live view; plain progress lines otherwise.
  const tty = Boolean((io.stderr as NodeJS.WriteStream).isTTY);
  const liveStop = new AbortController();
  // Started once the plan is approved, so that it never redraws over the approval question.
  let live: Promise<void> | null = null;
  const startLive = (): void => {
    if (!tty || live) return;
    live = runLiveView({
      store,
      pollyDir: options.pollyDir,
      stream: io.stderr as NodeJS.WriteStream,
      signal: liveStop.signal,
      until: (reg) => isGoalFinal(reg.goals[options.goalId]?.status),
    });
  };
  try {
    return await followLoop();
  } finally {
    liveStop.abort();
    await (live as Promise<void> | null)?.catch(() => {});
  }

  async function followLoop(): Promise<GoalRecord> {
    for (;;) {
      const entries = await store.waitForJournal(cursor, 2000, options.signal);
      for (const e of entries) {
        cursor = e.seq;
        const line = progressLine(e);
        if (line && !(live && (e.kind.startsWith('task.') || e.kind.startsWith('pr.')))) io.stderr.write(`${line}\n`);
        if (e.kind === 'plan.approved' && (e.data as { goalId?: string }).goalId === options.goalId) startLive();
        if (e.kind === 'plan.proposed' && (e.data as { goalId?: string }).goalId === options.goalId) {
          const planId = String((e.data as { planId: string }).planId);
          const proposed = (await store.read()).plans[planId];
          if (proposed) io.stderr.write(`[polly] plan ${planId} ${budgetLine(proposed)}\n`);
          const unbounded = proposed ? unboundedLine(proposed) : null;
          if (unbounded) io.stderr.write(`[polly] plan ${planId} ${unbounded}\n`);
          // Decided before it was asked (the dashboard, polly plan approve, another --yes): say so, ask nothing.
          if (proposed && proposed.gate !== 'pending') {
            io.stderr.write(`${decidedElsewhereLine(proposed)}\n`);
            continue;
          }
          const asked =
            !options.yes && options.interactive
              ? await askAtGate(io, store, planId, cursor, `Approve plan ${planId}? Polly will dispatch its tasks; it never merges. [y/N] `)
              : null;
          if (asked?.kind === 'decided') {
            io.stderr.write(`${decidedElsewhereLine(asked.plan)}\n`);
            continue;
          }
          const approve = options.yes || asked?.yes === true;
          if (approve) {
            await decidePlan(store, options.config, planId, 'approve', { by: options.yes ? 'polly --yes' : `human:${io.env.USER ?? 'unknown'} (terminal)` }).catch(
              (error: unknown) => {
                io.stderr.write(`[polly] could not approve ${planId}: ${(error as Error).message}\n`);
              },
            );
          } else if (options.interactive && !options.signal?.aborted) {
            await decidePlan(store, options.config, planId, 'reject', { by: `human:${io.env.USER ?? 'unknown'} (terminal)` }).catch(() => {});
          } else {
            const issue = (await store.read()).goals[options.goalId]?.issue;
            const there = issue ? `, or a maintainer's "/polly approve" comment on issue #${issue.number}` : '';
            io.stderr.write(`[polly] plan ${planId} waits for approval: polly plan approve ${planId} (or reject)${there}\n`);
          }
        }
      }
      const reg = await store.read();
      const goal = reg.goals[options.goalId];
      if (!goal) throw new Error(`goal ${options.goalId} disappeared from the registry`);
      if (isGoalFinal(goal.status)) return goal;
      if (options.signal?.aborted) return goal;
      if (options.keepBrainAlive !== false && Date.now() - lastBrainCheck > 3000) {
        lastBrainCheck = Date.now();
        const brainAlive = reg.brain !== null && pidAlive(reg.brain.pid);
        const starting = startedPid !== null && pidAlive(startedPid);
        if (!brainAlive && !starting) {
          const restarted = await ensureBrain(store, options.repoRoot, options.pollyDir, io.env, options.brainArgs);
          const { pid, started } = restarted;
          if (started) {
            options.onBrainStarted?.(restarted);
            restarts += 1;
            if (restarts > 3) {
              const log = join(options.pollyDir, 'brain.log');
              let tail = '';
              try {
                tail = readFileSync(log, 'utf8').trim().split('\n').slice(-5).join('\n');
              } catch {
                // no log
              }
              throw new PollyError(
                'internal',
                `the Brain exited ${restarts - 1} times without finishing goal ${options.goalId}; not starting it again. The end of ${log}:\n${tail}`,
              );
            }
            startedPid = pid;
            io.stderr.write(`[polly] the Brain was not running; started it again (pid ${pid})\n`);
          }
        }
      }
    }
  }
}
