/**
 * `polly status [--json]`: goals, plans, tasks and workers from `.polly/registry.json`.
 *
 * Human output is one table per section; `--json` prints {@link StatusReport}. Read-only but for one
 * thing: it never takes the registry lock, except to repair a crashed writer's journal
 * (registry-store.ts) and to record, once, that the Brain died with work pending, which it announces
 * (brain/notify/brain-death.ts).
 */
import { existsSync } from 'node:fs';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { findRepo } from '../../workers/git/repo.js';
import { loadConfig } from '../config/config.js';
import { createFileRegistryStore } from '../registry/registry-store.js';
import { formatTable, wrapLine, type Column, type TableFit } from './table.js';
import { reasonLine, statusReport, type StatusReport, type StatusTask } from '../registry/status-report.js';
import { runLiveView } from './live-view.js';
import { formatCost, totalTokens, type LedgerTotals } from '../registry/cost-ledger.js';
import { formatBudget } from '../plan/budgets.js';
import { visibleLine, visibleText } from '../core/visible-text.js';
import { mergeText } from '../forge/pr-status.js';
import { diskReport } from '../core/io-fault.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import { noticeBrainDeath } from '../notify/brain-death.js';

/** A SPENT cell: `1234 tok, $0.0123` (cost `unknown` or `≥ $X (some turns unknown)` when agents reported none). */
export function spentCell(t: LedgerTotals): string | null {
  if (t.turns === 0) return null;
  return `${totalTokens(t)} tok, ${formatCost(t)}`;
}

/** Task statuses whose reason the human view shows: the task stopped, and the reason says why and what to do. */
const REASON_STATUSES: ReadonlySet<string> = new Set(['failed', 'parked', 'cancelled', 'agent_missing', 'agent_exited', 'blocked_on_prompt', 'base_red']);

/** The human-readable status: one table per non-empty section, then why each stopped task stopped (first line of its reason). */
export function formatStatus(report: StatusReport, width?: number): string[] {
  // Fit to `width` (a terminal's columns): tables cut their widest cells, then leave out their
  // least needed columns (named under the table); other lines wrap.
  const fitTable = <Row>(columns: Column<Row>[], rows: readonly Row[]): string[] => {
    if (width === undefined) return formatTable(columns, rows);
    const fit: TableFit = { width: width - 2 };
    const lines = formatTable(columns, rows, fit);
    return fit.hidden?.length ? [...lines, `(left out to fit: ${fit.hidden.join(', ')}; polly status --json has them)`] : lines;
  };
  // The Brain's health first: whether anything moves at all (brain/registry/brain-health.ts).
  const out: string[] = [`Polly in ${report.repoRoot} · ${report.health.line}`];
  for (const line of report.disk ?? []) out.push(line);
  if (!report.brain && report.unattended.length > 0) {
    const shown = report.unattended.slice(0, 5).map((t) => `${t.id} ${t.status}`);
    const more = report.unattended.length > 5 ? `, and ${report.unattended.length - 5} more` : '';
    const n = report.unattended.length;
    out.push(`  ${n} unfinished task${n === 1 ? '' : 's'} with no Brain (${shown.join(', ')}${more}): run polly resume to adopt their workers and finish them`);
  }
  const section = (title: string, count: number, lines: () => string[], empty: string): void => {
    out.push('', `${title} (${count})`);
    if (count === 0) out.push(`  ${empty}`);
    else out.push(...lines().map((l) => `  ${l}`));
  };
  section(
    'Goals',
    report.goals.length,
    () =>
      fitTable(
        [
          { header: 'ID', value: (g) => g.id, min: 40 },
          { header: 'STATUS', value: (g) => g.status },
          { header: 'PLANS', value: (g) => g.planIds.join(','), drop: 2 },
          { header: 'SPENT', value: (g) => spentCell(g.spent.totals), max: 44, drop: 1 },
          // The goal's own LLM session, metered like a worker (brain/llm/brain-meter.ts); part of SPENT.
          { header: 'BRAIN', value: (g) => (g.brain.totals.turns ? spentCell(g.brain.totals) : null), max: 44, drop: 3 },
          { header: 'GOAL', value: (g) => g.text, max: 70, min: 12 },
        ],
        report.goals,
      ).concat(report.goals.filter((g) => g.reason).map((g) => `${g.id} failed: ${reasonLine(visibleText(g.reason!))}`)),
    'none yet: state one with polly goal "…"',
  );
  section(
    'Plans',
    report.plans.length,
    () =>
      fitTable(
        [
          { header: 'ID', value: (p) => p.id, min: 40 },
          { header: 'GOAL', value: (p) => p.goalId },
          { header: 'ADMITTED', value: (p) => (p.admitted === null ? 'unchecked' : p.admitted ? 'yes' : 'REFUSED') },
          { header: 'GATE', value: (p) => p.gate },
          { header: 'TASKS', value: (p) => p.tasks },
          { header: 'SPENT', value: (p) => spentCell(p.spent.totals), max: 44, drop: 1 },
          { header: 'BUDGET', value: (p) => (p.budgets ? `task ${formatBudget(p.budgets.perTask)}; goal ${formatBudget(p.budgets.perGoal)}` : null), max: 60, drop: 2 },
        ],
        report.plans,
      ),
    'none',
  );
  section(
    'Tasks',
    report.tasks.length,
    () =>
      fitTable(
        [
          { header: 'ID', value: (t) => t.id, min: 40 },
          { header: 'TITLE', value: (t) => t.title, max: 36, min: 12 },
          { header: 'PURPOSE', value: (t) => t.purpose, drop: 4 },
          { header: 'WORKER', value: (t) => t.worker },
          { header: 'REVIEWER', value: (t) => t.reviewer, drop: 3 },
          { header: 'STATUS', value: (t) => t.status },
          { header: 'SPENT', value: (t) => spentCell(t.spent.totals), max: 44, drop: 1 },
          { header: 'BUDGET', value: (t) => (t.budget ? formatBudget(t.budget) : null), drop: 5 },
          { header: 'BRANCH', value: (t) => t.branch, drop: 6 },
          // Only with remote hosts (workers.hosts): the host that holds the task's worktree there.
          ...(report.tasks.some((t) => t.host) ? [{ header: 'HOST', value: (t: StatusTask) => t.host ?? 'local' }] : []),
          { header: 'PR', value: (t) => (t.pr ? `#${t.pr.number} ${t.pr.state}` : null) },
          {
            header: 'PR STATE',
            value: (t) =>
              t.prStatus
                ? `review ${t.reviewText ?? t.prStatus.review}, checks ${t.prStatus.checks}, ${mergeText(t.prStatus)}${t.untrustedFeedback ? `; ${t.untrustedFeedback} from non-collaborators, not acted on` : ''}`
                : null,
            max: 60,
            drop: 2,
          },
        ],
        report.tasks,
      ),
    'none',
  );
  if (report.tasks.some((t) => t.spent.totals.unknownCostTurns > 0))
    out.push('', 'SPENT "unknown": no price for the model of those requests (add it under prices in .polly/config.yaml, docs/metering.md); budgets in tokens hold for every CLI.');
  const findings = report.tasks.filter((t) => t.usageFindings && t.usageFindings.length > 0);
  if (findings.length > 0)
    out.push(
      '',
      "Usage findings (the agent's own stream disagreed with Polly's metering proxy; SPENT is the proxy's count)",
      ...findings.flatMap((t) => t.usageFindings!.map((f) => `  ${t.id}: ${f}`)),
    );
  if (report.tasks.some((t) => (t.spent.totals.unbilledCostTurns ?? 0) > 0))
    out.push('', 'SPENT "not billed": the CLI priced turns of a model running on this machine (e.g. the scripted model of npm run demo / polly try): nobody paid it.');
  const why = report.tasks.filter(
    (t) => t.statusReason && (REASON_STATUSES.has(t.status) || (t.status === 'ready' && (t.prEventsWaiting !== undefined || t.statusReason.startsWith('fix round not started')))),
  );
  if (why.length > 0)
    out.push(
      '',
      'Why (the first line of each reason, and its fix; polly status --json has them whole)',
      ...why.map((t) => `  ${t.id} ${t.status}: ${reasonLine(t.statusReason!)}`),
    );
  section(
    'Workers',
    report.workers.length,
    () =>
      fitTable(
        [
          { header: 'ID', value: (w) => w.id, min: 40 },
          { header: 'TASK', value: (w) => w.taskId },
          { header: 'HARNESS', value: (w) => w.harness },
          { header: 'HOST', value: (w) => w.host ?? 'local', drop: 3 },
          { header: 'PID', value: (w) => w.pid, drop: 2 },
          { header: 'HEARTBEAT', value: (w) => w.heartbeatAt, drop: 1 },
        ],
        report.workers,
      ),
    'none running',
  );
  // Titles and reasons can hold text a worker wrote: its terminal escapes are shown, never obeyed.
  const shown = out.map(visibleLine);
  return width === undefined ? shown : shown.flatMap((l) => wrapLine(l, width));
}

/**
 * The width `polly status` fits its lines to: the terminal's columns when stdout is one, else
 * `COLUMNS` when set to a number (POSIX's variable for it), else none (a pipe or file gets whole lines).
 * Never under 40.
 */
export function statusWidth(stdout: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv): number | undefined {
  const fromEnv = Number(env.COLUMNS);
  const cols = stdout.isTTY && stdout.columns ? stdout.columns : Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : undefined;
  return cols === undefined ? undefined : Math.max(40, cols);
}

/**
 * Load the status of the repository containing `cwd`, after validating its `.polly/config.yaml`
 * (a misspelt key is reported here, not first by `polly run`).
 * @throws PollyError `not_a_git_repo`; `not_initialized` when `.polly/` is missing (run
 *         `polly init`); `config_invalid` with file:line:column; `registry_corrupt` /
 *         `registry_newer` from the store.
 */
export async function loadStatus(cwd: string, env: NodeJS.ProcessEnv): Promise<StatusReport> {
  const repo = await findRepo(cwd, env);
  if (!existsSync(repo.pollyDir)) {
    throw new PollyError('not_initialized', `Polly is not initialised in ${repo.root} (no .polly/ directory). Run "polly init" there first.`, {
      details: { repoRoot: repo.root },
    });
  }
  const config = await loadConfig(repo.root);
  const reg = await createFileRegistryStore(repo.pollyDir).read();
  const report = statusReport(repo.root, reg);
  const disk = diskReport([repo.pollyDir, resolveWorktreesDir(repo.root, config.worktrees.dir)]);
  return disk.length > 0 ? { ...report, disk } : report;
}

/**
 * Tell the human, once per death, that the Brain died with work pending (brain/notify/brain-death.ts):
 * the one write `polly status` makes (the registry lock is taken only when a death is not yet noticed).
 */
async function noticeDeath(io: { cwd: string; env: NodeJS.ProcessEnv; stderr: NodeJS.WritableStream }): Promise<void> {
  const repo = await findRepo(io.cwd, io.env);
  const { notification, failures } = await noticeBrainDeath({
    store: createFileRegistryStore(repo.pollyDir),
    config: await loadConfig(repo.root),
    pollyDir: repo.pollyDir,
    noticedBy: 'polly status',
  });
  for (const f of failures) io.stderr.write(`[polly] notification: ${f}\n`);
  if (notification) io.stderr.write(`[polly] ${notification.title}; notified: ${notification.text}\n`);
}

export const command: Command = {
  summary: 'show goals, plans, tasks, workers and PRs',
  usage: `Usage: polly status [--json] [--watch]

Show the goals, plans (admission and plan-gate state), tasks (id, title, purpose, worker,
reviewer, status, branch, host with workers.hosts, PR) and live workers (with their host)
recorded in .polly/registry.json.

Options:
  --watch  keep a live view of tasks and workers (state, current tool call, elapsed time; a task
           in a long step (its setup, checks or agent turn) shows the phase and its last lines of
           output); redraws in a terminal, prints a line per change otherwise; Ctrl-C stops watching
  --json   print {repoRoot, brain, brainGone, unattended, goals, plans, tasks, workers}; each task is
           {id, title, purpose, worker, reviewer, status, branch, worktree, host, pr, statusReason}
           (host: the remote host holding the task's worktree, null for this machine)
           (not with --watch: exit 2)

With no Brain running, the tasks of approved plans that are not finished are named under the
Brain line (--json: unattended) with the command that continues them: polly resume.

Lines fit the terminal's width (or COLUMNS when set; a pipe gets whole lines): long cells are
cut with …, then the least needed columns are left out (named under the table), other lines wrap.

A task that failed, was parked or cancelled (or whose fix round could not start) is listed under
"Why" with the first line of its reason and its fix, whole; --json has the whole reason.

Checks .polly/config.yaml first: an unknown (misspelt) key or a wrong value is reported with
file:line:column (exit 2); "polly doctor" checks the rest of the setup.

Exit codes: 0 ok; 1 not initialised (run "polly init") or a corrupt registry;
2 not in a git repository, an invalid config.yaml or a bad flag.`,
  async run(argv, io) {
    const args = parseCommandArgs('status', argv, { json: { type: 'boolean' }, watch: { type: 'boolean' } }, 0);
    if (args.values.watch && args.values.json) {
      throw new PollyError(
        'bad_input',
        'polly status: --watch and --json together: --watch draws a live view for a person, --json prints one JSON document. Use one: poll "polly status --json" for machine output, or "polly status --watch" to watch.',
      );
    }
    const report = await loadStatus(io.cwd, io.env);
    // A Brain that died with work pending cannot tell anyone: the first status after its death does (once).
    if (report.health.state === 'gone') await noticeDeath(io);
    if (args.values.watch) {
      const repo = await findRepo(io.cwd, io.env);
      const controller = new AbortController();
      process.once('SIGINT', () => controller.abort());
      await runLiveView({ store: createFileRegistryStore(repo.pollyDir), pollyDir: repo.pollyDir, stream: io.stdout as NodeJS.WriteStream, signal: controller.signal });
      return 0;
    }
    if (args.values.json) writeJson(io.stdout, report);
    else for (const line of formatStatus(report, statusWidth(io.stdout as { isTTY?: boolean; columns?: number }, io.env))) writeLine(io.stdout, line);
    return 0;
  },
};
