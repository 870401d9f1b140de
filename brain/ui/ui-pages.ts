/**
 * The dashboard's pages as server-rendered HTML (no front-end build): pure functions from
 * registry records to a string. Every value from the registry is escaped ({@link escapeHtml});
 * the only markup is written here. The live parts are wired by `UI_SCRIPT` (served as
 * `/ui.js`): a page reloads its `<main>` when the state changes, and a task page appends its
 * workers' events as they are pushed.
 */
import type { CheckRun, CounterexampleTrace, GoalRecord, JournalEntry, LocalPullRequest, PlanRecord, Registry, TaskRecord, WorkerRecord } from '../registry/registry-schema.js';
import { compareIds, statusReport } from '../registry/status-report.js';
import { pullRequestStatus } from '../forge/pr-status.js';
import { visibleText } from '../core/visible-text.js';
import { formatCost, formatTotals, formatUsd } from '../registry/cost-ledger.js';
import { budgetFlow, formatBudget, raisedBudget, taskBudget } from '../plan/budgets.js';
import { goalBudget } from '../task-tools/turn-budget.js';
import type { ParkCause } from '../plan/plan-retry.js';
import { needsYou, type NeedsYouItem } from './needs-you.js';
import type { TaskNow } from '../registry/task-progress.js';
import { renderMarkdown } from './markdown.js';
import type { BrainHealth } from '../registry/brain-health.js';
import { unboundedLine } from '../plan/plan-gate.js';
import type { GateLogEntry, RunWithJournal } from './ui-source.js';
import type { RunJournalEntry } from '../../workflows/run/run-store.js';

/**
 * Escape text for HTML element content and double-quoted attributes; control characters (terminal
 * escapes a worker wrote into a finding or a summary) are shown as `\xNN` (brain/core/visible-text.ts).
 */
export function escapeHtml(value: unknown): string {
  return visibleText(String(value ?? '')).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const e = escapeHtml;

function byId<T extends { id: string }>(map: Record<string, T>): T[] {
  return Object.values(map).sort((a, b) => compareIds(a.id, b.id));
}

/** A status word as a badge whose class is the status (`ok` / `bad` / `wait` colouring in CSS). */
function badge(status: string): string {
  const tone = /^(done|ready|approved|admitted|merged|passing|clean|ok|allow|green)$/.test(status)
    ? 'ok'
    : /^(failed|base_red|refused|rejected|expired|cancelled|parked|failing|conflicts|changes_requested|deny|REFUSED|red)$/.test(status)
      ? 'bad'
      : 'wait';
  return `<span class="badge ${tone}" data-status="${e(status)}">${e(status)}</span>`;
}

function table(headers: string[], rows: string[][], id?: string): string {
  if (rows.length === 0) return '<p class="empty">none</p>';
  // Each cell names its column (`data-label`): under 600 px a row is a card and the label is shown beside the value.
  const label = (i: number) => (headers[i] ? ` data-label="${e(headers[i])}"` : '');
  return `<table${id ? ` id="${e(id)}"` : ''}><thead><tr>${headers.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c, i) => `<td${label(i)}>${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/**
 * The page frame.
 * @param live  `true`: the page's `<main>` is reloaded whenever the state changes (SSE `/events`).
 * @param stream  a task id whose workers' events `/ui.js` appends to `#stream` (SSE `/tasks/ID/stream`).
 * @param count  how many things wait for a human (the overview's "needs you"), shown first in the title when > 0.
 */
export function layout(title: string, body: string, options: { live?: boolean; stream?: string; after?: string; count?: number } = {}): string {
  const count = options.count ? `(${options.count}) ` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${count}${e(title)} · Polly</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/ui.css"><script src="/morphdom.js" defer></script><script src="/ui.js" defer></script></head>
<body${options.live ? ' data-live="1"' : ''}${options.stream ? ` data-stream="${e(options.stream)}"` : ''}>
<header><nav aria-label="Polly"><a href="./" class="brand">Polly</a> <a href="./">Goals &amp; plans</a> <a href="journal">Journal</a> <span id="live-state" role="status"></span></nav></header>
<main>${body}</main>${options.after ?? ''}
</body></html>`;
}

/**
 * The Brain's health at the top of every page (`#brain-health`, brain/registry/brain-health.ts):
 * running since when with its last heartbeat, or not running and what that means for the work
 * waiting (nothing runs until `polly resume`). The server puts it into each page's `<main>`, so
 * the live reload keeps it current.
 */
export function healthBanner(h: BrainHealth): string {
  return `<p id="brain-health" class="health ${h.state === 'running' ? 'ok' : 'bad'}" data-state="${h.state}" role="status">${e(h.line)}</p>`;
}

/**
 * The "needs you" strip (`#needs-you`, ./needs-you.ts): each thing that waits for a human with what
 * moves it — Approve/Reject in place for a plan at the gate, a Retry button (and the command) for a
 * task that stopped, the PR link for one ready to merge. Empty: one line saying nothing waits.
 */
export function needsYouStrip(items: NeedsYouItem[]): string {
  const head = `<h2 id="needs-you-title">Needs you${items.length ? ` <span class="count">(${items.length})</span>` : ''}</h2>`;
  if (items.length === 0) return `<section id="needs-you" class="needs-you none" aria-labelledby="needs-you-title">${head}<p>Nothing waits for you.</p></section>`;
  const li = items.map((item) => {
    switch (item.kind) {
      case 'plan': {
        const p = item.plan;
        const id = e(p.id);
        return `<li id="ny-plan-${id}" data-kind="plan" data-plan="${id}"><span class="what">Plan <a href="plans/${id}">${id}</a> waits for approval${p.goalId ? ` (goal ${e(p.goalId)})` : ''}: ${p.tasks.length} task${p.tasks.length === 1 ? '' : 's'}, ${e(p.admission?.line ?? 'not checked')}</span>
<span class="actions"><form method="post" action="plans/${id}/approve"><input type="hidden" name="back" value="overview"><button type="submit" id="ny-approve-${id}" class="ok">Approve ${id}</button></form><form method="post" action="plans/${id}/reject"><input type="hidden" name="back" value="overview"><button type="submit" id="ny-reject-${id}" class="bad">Reject</button></form> <a href="plans/${id}">review the plan</a></span></li>`;
      }
      case 'task': {
        const t = item.task;
        const id = e(t.id);
        const budget = item.retry?.budget;
        const hidden = budget
          ? Object.entries(budget)
              .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
              .join('')
          : '';
        const button = item.retry
          ? `<form method="post" action="tasks/${id}/retry">${hidden}<button type="submit" id="ny-retry-${id}" class="ok">${
              budget
                ? `Retry ${id} with ${e(
                    Object.entries(budget)
                      .map(([k, v]) => `${k} ${v}`)
                      .join(', '),
                  )}`
                : `Retry ${id}`
            }</button></form>`
          : '';
        return `<li id="ny-task-${id}" data-kind="task" data-task="${id}"><span class="what">Task <a href="tasks/${id}">${id}</a> ${badge(t.status)} ${e(item.reason)}</span>
<span class="actions">${button}<code>${e(item.command)}</code></span></li>`;
      }
      default: {
        const t = item.task;
        const pr = t.pr!;
        const href = pr.forge === 'local' ? `prs/${pr.number}` : pr.url;
        return `<li id="ny-pr-${pr.number}" data-kind="pr" data-task="${e(t.id)}"><span class="what">PR <a href="${e(href)}">#${pr.number}</a> of task <a href="tasks/${e(t.id)}">${e(t.id)}</a> is ready for you to merge: ${e(t.title)}</span>
<span class="actions muted">Polly never merges: review and merge it yourself${pr.forge === 'local' ? ' (git merge)' : ''}.</span></li>`;
      }
    }
  });
  return `<section id="needs-you" class="needs-you" aria-labelledby="needs-you-title">${head}<ul>${li.join('')}</ul></section>`;
}

/**
 * What one task does now (brain/registry/task-progress.ts): its phase, the time since it started
 * (`.elapsed[data-since]`, which `/ui.js` counts on between updates), its command or worker, its
 * current tool call, and the last lines of its output.
 */
export function nowView(taskId: string, n: TaskNow, link: boolean): string {
  const id = e(taskId);
  return `<div class="now" id="now-${id}" data-task="${id}" data-phase="${e(n.phase)}"><p>${link ? `<a href="tasks/${id}">${id}</a> ` : ''}<strong class="phase">${e(n.phase)}</strong> for <span class="elapsed" data-since="${e(n.since)}">${n.elapsedS} s</span>: <code class="detail">${e(n.detail)}</code>${
    n.tool ? ` · now <code class="tool">${e(n.tool)}</code>` : ''
  }</p>${n.lines.length ? `<pre class="lines">${e(n.lines.join('\n'))}</pre>` : '<p class="empty">no output yet</p>'}</div>`;
}

/**
 * Goals, plans, tasks and workers: the overview (`/`), with what waits for a human first, then what
 * runs now (the long steps of tasks: setup, checks, agent turns).
 * @param parks  why each parked task is parked (brain/plan/plan-retry.ts `parkCauses`).
 * @param now  what each task in a long step does (brain/registry/task-progress.ts), by task id.
 */
export function overviewPage(reg: Registry, parks: ReadonlyMap<string, ParkCause> = new Map(), notice?: string, now: ReadonlyMap<string, TaskNow> = new Map()): string {
  const waiting = needsYou(reg, parks);
  const running = [...now.entries()].sort(([a], [b]) => compareIds(a, b));
  const goals = byId(reg.goals);
  const plans = byId(reg.plans);
  const tasks = byId(reg.tasks);
  // The same rule as `polly status`: a worker row is live while its recorded state says so and its pid is alive.
  const live = statusReport('', reg).workers.map((w) => reg.workers[w.id]!);
  return layout(
    'Overview',
    `<h1>Goals &amp; plans</h1>${notice ? `<p class="notice" role="status">${e(notice)}</p>` : ''}
${needsYouStrip(waiting)}
<section id="now" aria-labelledby="now-title"><h2 id="now-title">Running now</h2>${
      running.length ? running.map(([id, n]) => nowView(id, n, true)).join('') : '<p class="empty">no setup, check or agent turn runs</p>'
    }</section>
<h2>Goals</h2>${table(
      ['Goal', 'Status', 'Plans', 'Text'],
      goals.map((g: GoalRecord) => [
        `<a href="goals/${e(g.id)}">${e(g.id)}</a>`,
        badge(g.status),
        g.planIds.map((p) => `<a href="plans/${e(p)}">${e(p)}</a>`).join(' '),
        e(g.text),
      ]),
      'goals',
    )}
<h2>Plans</h2>${table(
      ['Plan', 'Goal', 'Admission', 'Gate', 'Tasks'],
      plans.map((p) => [
        `<a href="plans/${e(p.id)}">${e(p.id)}</a>`,
        e(p.goalId ?? '-'),
        p.admission ? badge(p.admission.admitted ? 'admitted' : 'REFUSED') : '-',
        badge(p.gate),
        String(p.tasks.length),
      ]),
      'plans',
    )}
<h2>Landing order</h2>${landingView(reg)}
<h2>Tasks</h2>${taskTable(tasks)}
<h2>Live workers</h2>${table(
      ['Worker', 'Task', 'Harness', 'Purpose', 'Host', 'Since'],
      live.map((w) => [e(w.id), `<a href="tasks/${e(w.taskId)}">${e(w.taskId)}</a>`, e(w.harness), e(w.purpose ?? '-'), e(w.host ?? 'local'), e(w.startedAt)]),
      'workers',
    )}`,
    { live: true, count: waiting.length },
  );
}

/** One goal (`/goals/ID`): its text and status, the Brain's last report, its plans and their tasks. */
/**
 * A goal's spending: the whole (its tasks and its own LLM session) and the Brain's part, as the
 * metering proxies counted them (brain/llm/brain-meter.ts), with the goal's budget when a plan set one.
 */
function spentView(goal: GoalRecord, reg: Registry): string {
  const row = statusReport('', reg).goals.find((g) => g.id === goal.id);
  if (!row) return '';
  const budget = goalBudget(reg, goal.id);
  return `<h2>Spent</h2><dl id="goal-spent"><dt>Goal</dt><dd id="goal-spent-total">${e(formatTotals(row.spent.totals))}${budget ? `; goal budget ${e(formatBudget(budget))}` : ''}</dd>
<dt>The Brain's own session</dt><dd id="goal-spent-brain">${row.brain.totals.turns ? `${e(formatTotals(row.brain.totals).replace(/ turns?$/, (m) => m.replace('turn', 'model request')))}` : 'nothing yet'}</dd></dl>`;
}

export function goalPage(goal: GoalRecord, reg: Registry): string {
  const plans = goal.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => !!p);
  const tasks = byId(reg.tasks).filter((t) => t.planId !== null && goal.planIds.includes(t.planId));
  return layout(
    `Goal ${goal.id}`,
    `<h1>Goal ${e(goal.id)} ${badge(goal.status)}</h1>
<p class="goal-text">${e(goal.text)}</p>
<p class="muted">Created ${e(goal.createdAt)}; planned by ${goal.mode === 'plan' ? 'a human-written plan' : 'the LLM Brain'}.</p>
${goal.brainReport ? `<h2>The Brain's last report</h2><pre id="brain-report">${e(goal.brainReport)}</pre>` : ''}
${spentView(goal, reg)}
<h2>Plans</h2>${table(
      ['Plan', 'Admission', 'Gate', 'Tasks', 'Proposed'],
      plans.map((p) => [
        `<a href="plans/${e(p.id)}">${e(p.id)}</a>`,
        p.admission ? badge(p.admission.admitted ? 'admitted' : 'REFUSED') : '-',
        badge(p.gate),
        String(p.tasks.length),
        e(p.createdAt),
      ]),
      'goal-plans',
    )}
<h2>Landing order</h2>${landingView(reg, new Set(tasks.map((t) => t.id)))}
<h2>Tasks</h2>${taskTable(tasks)}`,
    { live: true },
  );
}

/**
 * The open PRs' landing order as last computed (`registry.landing`, brain/forge/landing-sync.ts):
 * one row per PR in order, with what it lands after and why (the conflicting files, or the PR it is
 * stacked on). `tasks`: only the PRs of these tasks (a goal's page), in the same order.
 */
function landingView(reg: Registry, tasks?: ReadonlySet<string>): string {
  const l = reg.landing;
  if (!l || l.order.length === 0) return '<p class="empty" id="landing-order">no open pull requests to order</p>';
  const files = (a: number, b: number) => l.pairs.find((c) => (c.a === a && c.b === b) || (c.a === b && c.b === a))?.files ?? [];
  const rows = l.order
    .map((n, i) => ({ n, i, pr: l.prs[String(n)] }))
    .filter((r) => !tasks || (r.pr?.taskId && tasks.has(r.pr.taskId)))
    .map(({ n, i, pr }) => {
      const before = l.after[String(n)] ?? [];
      const parent = l.stackedOn[String(n)];
      const why =
        parent !== undefined
          ? `stacked on #${parent}: retargeted to its base once it merges`
          : before.length
            ? `conflicts in ${[...new Set(before.flatMap((b) => files(n, b)))].join(', ')}`
            : 'lands clean';
      const href = l.forge === 'local' ? `prs/${n}` : pr?.taskId ? reg.tasks[pr.taskId]?.pr?.url : undefined;
      return [
        String(i + 1),
        href ? `<a href="${e(href)}">#${n}</a>` : `#${n}`,
        pr?.taskId ? `<a href="tasks/${e(pr.taskId)}">${e(pr.taskId)}</a>` : '-',
        before.length ? e(before.map((b) => `#${b}`).join(', ')) : '-',
        e(why),
        e(pr?.title ?? ''),
      ];
    });
  if (rows.length === 0) return '<p class="empty" id="landing-order">no open pull requests of this goal</p>';
  const summary = `${l.order.length} open PR${l.order.length === 1 ? '' : 's'}; ${l.conflicts === 0 ? 'none meets a conflict in this order' : `${l.conflicts} meet${l.conflicts === 1 ? 's' : ''} a conflict${l.exact ? ' (the fewest possible)' : ''}`}. Computed ${l.computedAt}. Polly never merges: merge them in this order.`;
  return `<p class="muted">${e(summary)}</p>${table(['#', 'PR', 'Task', 'Land after', 'Why', 'Title'], rows, 'landing-order')}`;
}

/** The task's spending from its cost ledger (`formatCost`: "unknown", never $0, where an agent reports no cost), or '' before any turn. */
function cost(t: TaskRecord): string {
  return t.ledger ? formatCost(t.ledger.totals) : '';
}

/** A task's PR: a link to its page here (local forge) or to the forge (GitHub), with its state. */
function prLink(pr: TaskRecord['pr']): string {
  if (!pr) return '-';
  const href = pr.forge === 'local' ? `prs/${pr.number}` : pr.url;
  return `<a href="${e(href)}">#${pr.number}</a> ${badge(pr.state)}`;
}

function taskTable(tasks: TaskRecord[]): string {
  const withCost = tasks.some((t) => cost(t) !== '');
  // With remote hosts (workers.hosts): the host that holds each task's worktree there.
  const withHost = tasks.some((t) => t.host);
  return table(
    ['Task', 'Plan', 'Status', 'Purpose', 'Worker', 'Reviewer', ...(withHost ? ['Host'] : []), 'PR', ...(withCost ? ['Cost'] : []), 'Title'],
    tasks.map((t) => [
      `<a href="tasks/${e(t.id)}">${e(t.id)}</a>`,
      t.planId ? `<a href="plans/${e(t.planId)}">${e(t.planId)}</a>` : '-',
      `<span class="task-status" data-task="${e(t.id)}">${badge(t.status)}</span>`,
      e(t.purpose),
      e(t.worker),
      e(t.reviewer ?? '-'),
      ...(withHost ? [e(t.host ?? 'local')] : []),
      prLink(t.pr),
      ...(withCost ? [cost(t) || '-'] : []),
      e(t.title),
    ]),
    'tasks',
  );
}

function formatValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** A refused plan's counterexample, one row per step: action (with data), state diff, emitted effects. */
function counterexampleView(v: CounterexampleTrace, index: number): string {
  const steps = v.trace.map((s, i) => [
    String(i + 1) + (v.cycleStart !== undefined && i === v.cycleStart ? ' ↻' : ''),
    `<code class="action">${e(s.action)}</code>${
      Object.keys(s.data).length
        ? ` <span class="muted">${e(
            Object.entries(s.data)
              .map(([k, x]) => `${k}=${formatValue(x)}`)
              .join(', '),
          )}</span>`
        : ''
    }`,
    s.changes.length
      ? `<ul class="diff">${s.changes.map((c) => `<li><code>${e(c.variable)}</code>: <del>${e(formatValue(c.from))}</del> → <ins>${e(formatValue(c.to))}</ins></li>`).join('')}</ul>`
      : '<span class="muted">no change</span>',
    s.emitted.length ? s.emitted.map((k) => `<code class="effect">${e(k)}</code>`).join(' ') : '',
  ]);
  return `<section class="counterexample" id="cx-${index + 1}"><h3>Violated: <code>${e(v.invariant)}</code> <span class="muted">(${e(v.kind)})</span></h3>
${v.detail ? `<p>${e(v.detail)}</p>` : ''}${steps.length ? table(['Step', 'Action', 'State diff', 'Emitted effects'], steps) : '<p>Violated in the initial state.</p>'}</section>`;
}

/** One plan at the gate (`/plans/ID`): admission, gate state, approve/reject, tasks, counterexamples. */
export function planPage(plan: PlanRecord, reg: Registry, notice?: string): string {
  const admitted = plan.admission?.admitted;
  const decision =
    plan.gate === 'pending'
      ? `<p>Waiting for a human since ${e(plan.askedAt)}. Nothing is dispatched before approval.</p>
<div class="actions"><form method="post" action="plans/${e(plan.id)}/approve"><button type="submit" id="approve" class="ok">Approve plan ${e(plan.id)}</button></form>
<form method="post" action="plans/${e(plan.id)}/reject"><button type="submit" id="reject" class="bad">Reject</button></form></div>`
      : `<p id="decided">${badge(plan.gate)}${plan.decidedBy ? ` by <strong>${e(plan.decidedBy)}</strong> at ${e(plan.decidedAt)}` : ''}</p>`;
  // The hard budgets approving the plan allows (resolved at proposal, brain/plan/budgets.ts): what the human approves.
  const budgets = plan.budgets
    ? `Budgets you approve: per task <strong>${e(formatBudget(plan.budgets.perTask))}</strong> (a task's own wins), per goal <strong>${e(formatBudget(plan.budgets.perGoal))}</strong>.`
    : 'Budgets: none (recorded before budgets existed).';
  const tasks = plan.tasks.map((t) => [
    e(t.key),
    e(t.purpose),
    e(t.worker) + (t.model ? ` <span class="muted">${e(t.model)}</span>` : ''),
    e(t.reviewer ?? '-'),
    e(t.dependsOn.join(', ') || '-'),
    e(t.title),
    [...t.acceptance.commands.map((c) => `<code>$ ${e(c)}</code>`), ...t.acceptance.criteria.map((c) => e(c))].join('<br>') || '-',
    e(formatBudget(taskBudget(t.budget, plan.budgets))),
    t.paths ? t.paths.map((p) => `<code>${e(p)}</code>`).join('<br>') : t.purpose === 'implement' ? '<span class="muted">unbounded</span>' : '-',
  ]);
  const unbounded = unboundedLine(plan);
  const planTasks = byId(reg.tasks).filter((t) => t.planId === plan.id);
  const protectedLines = plan.tasks
    .filter((t) => t.protectedPaths?.length)
    .map(
      (t) =>
        `<p class="notice protected" data-task="${e(t.key)}">Task ${e(t.key)} may change protected paths (Polly's config, CI, hooks, code owners): ${t.protectedPaths!.map((p) => `<code>${e(p)}</code>`).join(', ')}</p>`,
    )
    .join('')
    .concat(unbounded ? `<p class="notice unbounded" id="unbounded">${e(unbounded)}</p>` : '');
  const counter = plan.counterexampleTraces?.length
    ? plan.counterexampleTraces.map(counterexampleView).join('')
    : plan.counterexamples?.length
      ? plan.counterexamples.map((c) => `<pre class="counterexample">${e(c)}</pre>`).join('')
      : '';
  return layout(
    `Plan ${plan.id}`,
    `<h1>Plan ${e(plan.id)}${plan.goalId ? ` <span class="muted">goal ${e(plan.goalId)}</span>` : ''}</h1>
${notice ? `<p class="notice">${e(notice)}</p>` : ''}
<p class="admission">${admitted === undefined ? 'not checked' : badge(admitted ? 'admitted' : 'REFUSED')} <code id="admission-line">${e(plan.admission?.line ?? '')}</code></p>
<h2>Plan gate</h2><p id="budgets">${budgets}</p>${protectedLines}${decision}
<h2>Tasks in the plan</h2>${table(['Key', 'Purpose', 'Worker', 'Reviewer', 'Depends on', 'Title', 'Acceptance', 'Budget', 'Paths'], tasks, 'plan-tasks')}
${planTasks.length ? `<h2>Dispatched tasks</h2>${taskTable(planTasks)}` : ''}
${counter ? `<h2>Why it was refused: the shortest counterexamples</h2>${counter}` : ''}`,
    { live: true },
  );
}

/** One acceptance run's commands: exit, time, and the output (folded; `key` makes the ids stable across live updates). */
function checkTable(results: TaskRecord['checks'], key: string, id?: string): string {
  return table(
    ['Command', 'Exit', 'Time', 'Output'],
    results.map((c, i) => [
      `<code>${e(c.command)}</code>`,
      `${badge(c.timedOut ? 'timed out' : c.exitCode === 0 ? 'ok' : 'failed')} ${e(c.exitCode ?? 'signal')}`,
      `${(c.durationMs / 1000).toFixed(1)} s`,
      c.output ? `<details id="check-output-${key}-${i + 1}"><summary>output</summary><pre>${e(c.output)}</pre></details>` : '',
    ]),
    id,
  );
}

/**
 * Every acceptance run of a task (`checkRuns`, brain/registry/task-record.ts), newest first, each
 * with its attempt, fix round, time and verdict; the newest shows the outputs as kept in `checks`
 * (longer tails). A record from before `checkRuns` shows its last run only.
 */
function checksView(t: TaskRecord): string {
  const runs: CheckRun[] = t.checkRuns?.length
    ? t.checkRuns
    : t.checks.length
      ? [{ at: t.updatedAt, planId: t.planId, attempt: t.attempts, fixRound: null, green: t.checks.every((c) => c.exitCode === 0 && !c.timedOut), results: t.checks }]
      : [];
  if (runs.length === 0) return '<div id="checks"><p class="empty">none</p></div>';
  const sections = runs
    .map((run, i) => ({ run, n: i + 1 }))
    .reverse()
    .map(({ run, n }) => {
      const latest = n === runs.length;
      const what = [
        `Run ${n} of ${runs.length}`,
        ...(run.planId !== t.planId ? [`plan ${run.planId}`] : []),
        `attempt ${run.attempt}`,
        ...(run.fixRound !== null ? [`fix round ${run.fixRound}`] : []),
        run.at,
      ].join(' · ');
      // The newest run's outputs as `checks` keeps them (a retry empties `checks` but keeps the runs).
      const results = latest && t.checks.length ? t.checks : run.results;
      return `<section class="check-run${latest ? ' latest' : ''}" id="check-run-${n}" data-green="${run.green}"><h3>${badge(run.green ? 'green' : 'red')} ${e(what)}</h3>${checkTable(results, String(n))}</section>`;
    });
  return `<div id="checks">${sections.join('')}</div>`;
}

function reviewsView(reviews: TaskRecord['reviews']): string {
  if (!reviews.length) return '<p class="empty">none</p>';
  return reviews
    .map(
      (r) =>
        `<section class="review"><h3>Round ${r.round} by ${e(r.reviewer)} <span class="muted">${e(r.at)}</span></h3>${table(
          ['', 'Where', 'Finding'],
          [...r.blocking.map((f) => [badge('blocking'), f]), ...r.nonBlocking.map((f) => [badge('note'), f])].map(([b, f]) => {
            const finding = f as TaskRecord['reviews'][number]['blocking'][number];
            return [b as string, `<code>${e(finding.file)}:${e(finding.line)}</code>`, e(finding.message)];
          }),
        )}</section>`,
    )
    .join('');
}

/** One run journal line in words (the runtime's kinds, workflows/run/runtime.ts); unknown kinds as their data. */
function runJournalSummary(j: RunJournalEntry): string {
  const d = j.data;
  const s = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? null));
  switch (j.kind) {
    case 'run.started':
      return `${s(d.workflow)} started`;
    case 'run.action': {
      const emitted = Array.isArray(d.emitted) && d.emitted.length ? `; emits ${d.emitted.join(', ')}` : '';
      return `${s(d.action)}: ${s(d.from)} → ${s(d.to)}${emitted}`;
    }
    case 'run.order':
      return `order ${s(d.kind)} (${s(d.tool)}), attempt ${s(d.attempt)}`;
    case 'run.reported':
      return `${s(d.kind)} reported ${s(d.outcome)}${d.note ? `: ${s(d.note)}` : ''}`;
    case 'run.claimed':
      return `order ${s(d.kind)} claimed by ${s(d.owner)}${d.leaseExpiresAt ? `, lease until ${s(d.leaseExpiresAt)}` : ''}`;
    case 'run.finished':
      return `finished in ${s(d.state)}`;
    default: {
      const { run: _run, ...rest } = d;
      return JSON.stringify(rest);
    }
  }
}

/** A task's workflow runs (the run store): state, open order, and each run's journal. */
function runsView(runs: RunWithJournal[]): string {
  if (!runs.length) return '<p class="empty">none</p>';
  return runs
    .map(({ run, journal }) => {
      const control = typeof run.state.state === 'string' ? run.state.state : '-';
      // The runtime keeps the workflow's variables under `vars` (workflows/run/interpreter.ts `RunState`).
      const nested = run.state.vars;
      const varsObj = nested && typeof nested === 'object' ? (nested as Record<string, unknown>) : run.state;
      const vars = Object.entries(varsObj)
        .filter(([k]) => k !== 'state')
        .map(([k, v]) => `${k}=${formatValue(v)}`)
        .join(', ');
      const open = run.openOrder ? `${run.openOrder.kind} (${run.openOrder.tool}), attempt ${run.openOrder.attempt}` : 'none';
      return `<section class="run" data-run="${e(run.id)}"><h3>Run <code>${e(run.id.slice(0, 12))}</code> of <code>${e(run.workflow)}</code> ${badge(run.status === 'finished' ? (run.outcome ?? 'finished') : 'running')}</h3>
<dl><dt>State</dt><dd><code class="run-state">${e(control)}</code> <span class="muted">${e(vars)}</span></dd><dt>Step</dt><dd>${run.seq}</dd><dt>Open order</dt><dd class="run-order">${e(open)}</dd></dl>${table(
        ['Seq', 'At', 'Kind', 'What'],
        journal.map((j) => [String(j.seq), e(j.at), `<code>${e(j.kind)}</code>`, e(runJournalSummary(j))]),
        `run-journal-${run.id.slice(0, 12)}`,
      )}</section>`;
    })
    .join('');
}

/**
 * The way forward of a task parked for its budget or a disk fault (`#retry`): a form posting to
 * `tasks/ID/retry` (brain/ui/ui-server.ts), as `polly retry ID --budget B` does. For a budget stop
 * its fields hold a budget that lets the task go on (twice what was spent of the limit reached);
 * '' for any other task.
 */
function retryForm(t: TaskRecord, park: ParkCause | null | undefined): string {
  if (t.status !== 'parked' || !park || (park.cause !== 'budget' && park.cause !== 'io_fault')) return '';
  const action = `tasks/${e(t.id)}/retry`;
  if (park.cause === 'io_fault') {
    return `<section id="retry"><h2>Way forward</h2><p>Parked for a disk fault (<code>${e(park.code)}</code>). Free room on the disk, then retry the task in its worktree (as <code>polly retry ${e(t.id)}</code>); the retry plan waits at the plan gate for you.</p>
<form method="post" action="${action}"><button type="submit" id="retry-task" class="ok">Retry ${e(t.id)}</button></form></section>`;
  }
  if (park.scope === 'goal') {
    return `<section id="retry"><h2>Way forward</h2><p>Parked for the budget of its goal. Continue it with a higher goal budget: <code>polly retry ${e(t.id)} --goal-budget '${e(budgetFlow(raisedBudget({}, park)))}'</code></p></section>`;
  }
  const next = raisedBudget(t.budget ?? {}, park);
  const field = (name: 'tokens' | 'usd', label: string, step: string) =>
    `<label>${label} <input name="${name}" id="retry-${name}" type="number" min="${name === 'tokens' ? '1' : '0.01'}" step="${step}" value="${next[name] ?? ''}"></label>`;
  return `<section id="retry"><h2>Way forward</h2><p>Parked for its budget: ${e(park.kind === 'tokens' ? `${park.spent} tokens` : formatUsd(park.spent))} spent of ${e(formatBudget(t.budget))}, counted over every attempt. Continue it in its worktree with a higher budget (as <code>polly retry ${e(t.id)} --budget '${e(budgetFlow(next))}'</code>); the retry plan waits at the plan gate for you.</p>
<form method="post" action="${action}" class="actions">${field('tokens', 'Tokens', '1')} ${field('usd', 'USD', '0.01')} <button type="submit" id="retry-budget" class="ok">Propose a retry with this budget</button></form></section>`;
}

/**
 * One task (`/tasks/ID`): status, its way forward when parked for a budget or a disk fault,
 * acceptance runs, reviews, gate denials, its workflow runs, and its workers' live events.
 * @param options.park  why it is parked (brain/plan/plan-retry.ts `parkCauses`), when it is.
 * @param options.now  what it does now, when it is in a long step (brain/registry/task-progress.ts).
 */
export function taskPage(
  t: TaskRecord,
  workers: WorkerRecord[],
  gate: GateLogEntry[],
  runs: RunWithJournal[] = [],
  options: { park?: ParkCause | null; now?: TaskNow | null } = {},
): string {
  const denials = gate.filter((g) => g.data.decision !== 'allow');
  return layout(
    `Task ${t.id}`,
    `<h1>Task ${e(t.id)} <span class="task-status" data-task="${e(t.id)}">${badge(t.status)}</span></h1>
<p>${e(t.title)}</p>
<dl><dt>Plan</dt><dd>${t.planId ? `<a href="plans/${e(t.planId)}">${e(t.planId)}</a>` : '-'}</dd>
<dt>Worker</dt><dd>${e(t.worker)}${t.model ? ` (${e(t.model)})` : ''}, ${e(t.purpose)}; attempts ${t.attempts}, review rounds ${t.reviewRounds}</dd>
<dt>Branch</dt><dd><code>${e(t.branch ?? '-')}</code> from <code>${e(t.baseBranch ?? '-')}</code></dd>
${t.host ? `<dt>Host</dt><dd id="task-host">${e(t.host)}: its worktree there; implement turns run there first</dd>` : ''}
<dt>PR</dt><dd>${prLink(t.pr)}</dd>
${t.statusReason ? `<dt>Why</dt><dd><pre>${e(t.statusReason)}</pre></dd>` : ''}${t.ledger ? `<dt>Spent</dt><dd id="spent">${e(formatTotals(t.ledger.totals))}${t.budget ? `; budget ${e(formatBudget(t.budget))}` : ''}</dd>` : ''}</dl>
${options.now ? `<section id="progress" aria-labelledby="progress-title"><h2 id="progress-title">Running now</h2>${nowView(t.id, options.now, false)}</section>` : ''}
${retryForm(t, options.park)}
<h2>Acceptance runs</h2>${checksView(t)}
<h2>Review findings</h2>${reviewsView(t.reviews)}
<h2>Gate denials</h2>${table(
      ['When', 'Tool', 'Input', 'Rule', 'Reason'],
      denials.map((g) => [e(g.at), e(g.data.tool ?? '-'), `<code>${e(g.data.input ?? '')}</code>`, e(g.data.rule ?? ''), e(g.data.reason ?? '')]),
      'denials',
    )}
<h2>Workflow runs</h2><div id="runs">${runsView(runs)}</div>
<h2>Workers</h2>${table(
      ['Worker', 'Harness', 'Host', 'State', 'Started', 'Outcome'],
      workers.map((w) => [e(w.id), e(w.harness), e(w.host ?? 'local'), badge(w.state ?? 'running'), e(w.startedAt), e([w.outcome, w.cause].filter(Boolean).join(': '))]),
      'task-workers',
    )}`,
    { live: true, stream: t.id, after: `<aside class="stream" aria-labelledby="stream-title"><h2 id="stream-title">Live events</h2><ol id="stream"></ol></aside>` },
  );
}

/** One local forge PR (`/prs/N`): state, checks, review findings, the diff. */
export function pullRequestPage(pr: LocalPullRequest, task: TaskRecord | undefined, diff: string): string {
  const status = pullRequestStatus(pr, task?.checks ?? []);
  const diffLines = diff
    .split('\n')
    .map((l) => {
      const cls =
        l.startsWith('+++') || l.startsWith('---') || l.startsWith('diff ') ? 'h' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : l.startsWith('@@') ? 'hunk' : '';
      return `<span${cls ? ` class="${cls}"` : ''}>${e(l)}</span>`;
    })
    .join('\n');
  return layout(
    `PR #${pr.number}`,
    `<h1>PR #${pr.number} ${e(pr.title)} ${badge(pr.state)}</h1>
<p><code>${e(pr.head)}</code> → <code>${e(pr.base)}</code> at <code>${e(pr.headCommit.slice(0, 12))}</code>; task ${task ? `<a href="tasks/${e(task.id)}">${e(task.id)}</a>` : '-'}</p>
<p>Review ${badge(status.review)} · checks ${badge(status.checks)} · ${status.conflicts === 'merged' || status.conflicts === 'closed' ? badge(status.conflicts) : `merge ${badge(status.conflicts)}`}${status.conflictFiles.length ? ` (${e(status.conflictFiles.join(', '))})` : ''}</p>
<p class="muted">Polly never merges: review the diff, then merge with git yourself.</p>
<h2>Description</h2>${pr.body.trim() ? `<div class="markdown" id="pr-body">${renderMarkdown(pr.body)}</div>` : '<p class="empty">no description</p>'}
<h2>Checks</h2>${task ? checksView(task) : '<p class="empty">no task</p>'}
<h2>Reviews</h2>${
      pr.reviews.length
        ? pr.reviews
            .map(
              (r) =>
                `<section class="review"><h3>${badge(r.event)} by ${e(r.author ?? 'polly')} <span class="muted">${e(r.at)}</span></h3><div class="markdown">${renderMarkdown(r.body)}</div>${
                  r.comments.length
                    ? table(
                        ['Where', 'Finding'],
                        r.comments.map((c) => [`<code>${e(c.file)}:${e(c.line)}</code>`, e(c.message)]),
                      )
                    : ''
                }</section>`,
            )
            .join('')
        : '<p class="empty">none</p>'
    }
<h2>Diff</h2><pre class="diff" id="diff" tabindex="0" aria-label="The diff">${diffLines}</pre>`,
    { live: true },
  );
}

/** The journal (`/journal`): the newest entries first. */
export function journalPage(entries: JournalEntry[]): string {
  return layout(
    'Journal',
    `<h1>Journal</h1>${table(
      ['Seq', 'At', 'Kind', 'Data'],
      [...entries].reverse().map((j) => [String(j.seq), e(j.at), `<code>${e(j.kind)}</code>`, `<code class="data">${e(JSON.stringify(j.data))}</code>`]),
      'journal',
    )}`,
    { live: true },
  );
}

/**
 * The page a request without a session gets (401). `boot`: outside any session's root, its script
 * goes on to the same page below the root this browser signed in to, if it did (the root is kept in
 * the origin's localStorage by every page served in a session); `signed-out`: below a root whose
 * session ended or is not this browser's, its script forgets that root.
 */
export function signInPage(title: string, message: string, kind: 'boot' | 'signed-out'): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="polly-session" content="${kind}"><title>${e(title)} · Polly</title><link rel="stylesheet" href="/ui.css"><script src="/ui.js" defer></script></head><body><main><h1>${e(title)}</h1><p>${e(message)}</p></main></body></html>`;
}

/** A plain message page (errors, refusals). */
export function messagePage(title: string, message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${e(title)} · Polly</title><link rel="stylesheet" href="/ui.css"></head><body><main><h1>${e(title)}</h1><p>${e(message)}</p></main></body></html>`;
}

/** `/ui.css`. */
export const UI_STYLE = `
*,*::before,*::after{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f7f8fa}
header{background:#1d2330}
nav{color:#fff;padding:.6em 1.2em;display:flex;flex-wrap:wrap;gap:.3em 1.2em;align-items:center;max-width:1200px}
nav a{color:#d5deee;text-decoration:none}nav a.brand{color:#fff;font-weight:700}nav a:focus-visible{outline:2px solid #fff}
#live-state{color:#d5deee;font-size:.9em}#live-state.signed-out{color:#ffe08a;font-weight:600}
main,aside.stream{padding:.4em 1.2em;max-width:1200px}
h1{font-size:1.4em;overflow-wrap:anywhere}h2{font-size:1.1em;margin-top:1.4em;border-bottom:1px solid #d5dbe5}h3{font-size:1em;overflow-wrap:anywhere}
a{color:#0b57c2}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #dfe3ea;padding:.3em .5em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#eef1f6;font-weight:600}
.badge{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;font-weight:600}
.badge.ok{background:#d6f5dd;color:#135724}.badge.bad{background:#fadcdc;color:#7f1717}.badge.wait{background:#fdf0cf;color:#624800}
.health{margin:.6em 0;padding:.4em .6em;border-left:4px solid}.health.ok{border-color:#17692b;background:#eef8f0}.health.bad{border-color:#8d1c1c;background:#fdeeee;font-weight:600}
.muted{color:#4d5566}.empty{color:#4d5566;font-style:italic}.notice{background:#e6f0ff;padding:.5em}
.actions{display:flex;gap:.8em;flex-wrap:wrap;align-items:center}input{font:inherit;padding:.3em;width:9em;max-width:100%}button{font:inherit;padding:.45em 1.1em;border-radius:4px;border:1px solid #767676;cursor:pointer}
button.ok{background:#1b6b2f;color:#fff;border-color:#1b6b2f}button.bad{background:#fff;color:#8d1c1c;border-color:#8d1c1c}
ul.diff{margin:0;padding-left:1em}del{color:#8d1c1c}ins{color:#135724;text-decoration:none;font-weight:600}
code{overflow-wrap:anywhere}code.effect{background:#fdf0cf;padding:0 .3em}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
pre.diff{background:#fff;border:1px solid #dfe3ea;padding:.5em;overflow:auto;white-space:pre;overflow-wrap:normal}pre.diff .add{color:#135724}pre.diff .del{color:#8d1c1c}pre.diff .hunk{color:#4b3aa8}pre.diff .h{font-weight:600}
ol#stream{background:#fff;border:1px solid #dfe3ea;padding:.5em 2.5em;font-family:ui-monospace,monospace;font-size:12.5px;overflow-wrap:anywhere}
ol#stream li.tool_call{color:#4b3aa8}ol#stream li.error,ol#stream li.denied{color:#8d1c1c}ol#stream li.result{font-weight:600}ol#stream .report{font-weight:400;margin:.3em 0}
code.data{font-size:12px;word-break:break-all}
.needs-you{background:#fff8e1;border:1px solid #d9b44a;border-radius:6px;padding:.1em 1em .5em;margin:.8em 0}
.needs-you.none{background:#eef8f0;border-color:#8fc79d}
.needs-you h2{border:none;margin:.5em 0 .2em}.needs-you ul{list-style:none;padding:0;margin:0}
.needs-you li{display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center;justify-content:space-between;padding:.45em 0;border-top:1px solid #ead9a0}
.needs-you li:first-child{border-top:none}.needs-you .actions{display:flex;flex-wrap:wrap;gap:.5em;align-items:center}.needs-you form{display:inline}
.needs-you button{padding:.3em .8em}
.markdown{background:#fff;border:1px solid #dfe3ea;padding:.2em .9em;overflow-wrap:anywhere}.markdown pre{background:#f3f4f7;padding:.4em}.markdown img{max-width:100%}
.now{background:#fff;border:1px solid #dfe3ea;border-left:4px solid #4b3aa8;padding:.3em .7em;margin:.5em 0}.now p{margin:.2em 0}
.now pre.lines{background:#f3f4f7;padding:.4em .5em;font-size:12.5px;max-height:14em;overflow:auto}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}dt{color:#4d5566}dd{margin:0;overflow-wrap:anywhere}
@media (max-width:600px){
main,aside.stream{padding:.3em .7em}nav{padding:.5em .7em}
table,thead,tbody,tr,th,td{display:block}table{background:none}
thead{position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
tr{background:#fff;border:1px solid #dfe3ea;border-radius:4px;margin:.5em 0;padding:.3em .6em}
td{border:none;padding:.12em 0;overflow-wrap:anywhere}td[data-label]::before{content:attr(data-label);display:inline-block;min-width:6.5em;margin-right:.5em;color:#4d5566;font-weight:600}
dl{grid-template-columns:minmax(0,1fr)}dt{margin-top:.3em}
ol#stream{padding:.5em .5em .5em 2em}
}
`;

/**
 * `/ui.js`: on a page of a session (it has a `<base>`), keep the session's root in localStorage;
 * on a sign-in page, go on to the same page below that root (`boot`) or forget it (`signed-out`).
 * Then subscribe to `events` and patch `<main>` with the page as it is now when the state changes
 * (morphdom: what did not change stays, with focus, scroll, open sections and edited fields); on a task page, append
 * each pushed worker event to `#stream` (text set with textContent, never as HTML).
 */
export const UI_SCRIPT = `
'use strict';
(function () {
  var ROOT_KEY = 'polly-ui-root';
  var kind = document.querySelector('meta[name="polly-session"]');
  if (kind && kind.content === 'boot') {
    var root = localStorage.getItem(ROOT_KEY);
    if (root && /^\\/s\\/[A-Za-z0-9_-]+\\/$/.test(root)) location.replace(root + location.pathname.slice(1) + location.search + location.hash);
    return;
  }
  if (kind && kind.content === 'signed-out') { localStorage.removeItem(ROOT_KEY); return; }
  var base = document.querySelector('base');
  if (base) localStorage.setItem(ROOT_KEY, new URL(base.href).pathname);
  var state = document.getElementById('live-state');
  // A live update patches what changed (morphdom, served as /morphdom.js) instead of replacing the
  // page: an element that did not change is the same node, so focus, scroll and text selection stay;
  // a <details> keeps the open state the reader gave it; a form field being edited keeps its value.
  var editing = function (el) {
    if (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA' && el.tagName !== 'SELECT') return false;
    return el === document.activeElement || (el.tagName !== 'SELECT' && el.value !== (el.getAttribute('value') || el.defaultValue));
  };
  var patch = function (cur, next) {
    if (!window.morphdom) { cur.replaceWith(next); return; }
    window.morphdom(cur, next, {
      onBeforeElUpdated: function (from, to) {
        if (from.tagName === 'DETAILS') {
          if (from.open) to.setAttribute('open', ''); else to.removeAttribute('open');
        }
        if (editing(from)) return false;
        return !from.isEqualNode(to);
      }
    });
  };
  if (document.body.dataset.live) {
    var busy = false, again = false;
    var reload = function () {
      if (busy) { again = true; return; }
      busy = true;
      fetch(location.href, { credentials: 'same-origin' }).then(function (r) { return r.text(); }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var next = doc.querySelector('main');
        var cur = document.querySelector('main');
        if (next && cur) patch(cur, next);
        if (doc.title) document.title = doc.title;
      }).finally(function () { busy = false; if (again) { again = false; reload(); } });
    };
    // The live stream, and its way back after the server went away (a restart, a sleep): while the
    // server is down the browser retries on its own; when the server answers but not with the
    // stream (another server on the port, or one that lost the session), the stream is closed for
    // good, so the page asks the server what it says about this session: signed out is said as
    // such, anything else is tried again, every 2 s. Once back, the page catches up at once.
    var es = null, lost = false;
    var say = function (text, cls) {
      if (!state) return;
      state.textContent = text;
      state.className = cls || '';
    };
    var connect = function () {
      es = new EventSource('events');
      es.addEventListener('change', reload);
      es.onopen = function () {
        say('live');
        if (lost) { lost = false; reload(); }
      };
      es.onerror = function () {
        lost = true;
        if (es.readyState !== EventSource.CLOSED) { say('reconnecting…'); return; }
        es = null;
        fetch(location.href, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
          if (r.status === 401) {
            localStorage.removeItem(ROOT_KEY);
            say('signed out: this dashboard no longer knows this session. Open a new login URL from polly ui (press Enter in its terminal).', 'signed-out');
            return;
          }
          say('reconnecting…');
          setTimeout(connect, 2000);
        }, function () {
          say('reconnecting…');
          setTimeout(connect, 2000);
        });
      };
    };
    connect();
  }
  // The time a long step has run, counted on between live updates.
  setInterval(function () {
    var spans = document.querySelectorAll('.elapsed[data-since]');
    for (var i = 0; i < spans.length; i++) {
      var since = Date.parse(spans[i].getAttribute('data-since'));
      if (!isNaN(since)) spans[i].textContent = Math.max(0, Math.round((Date.now() - since) / 1000)) + ' s';
    }
  }, 1000);
  var task = document.body.dataset.stream;
  var list = document.getElementById('stream');
  if (task && list) {
    var s = new EventSource('tasks/' + encodeURIComponent(task) + '/stream');
    s.addEventListener('agent', function (m) {
      var ev = JSON.parse(m.data);
      var li = document.createElement('li');
      li.className = ev.type;
      li.dataset.worker = ev.worker;
      var text;
      switch (ev.type) {
        case 'tool_call': text = 'tool ' + ev.tool + ' ' + JSON.stringify(ev.input); break;
        case 'tool_result': text = (ev.isError ? 'tool error: ' : 'tool result: ') + String(ev.output).slice(0, 400); break;
        case 'text': text = ev.text; break;
        case 'usage': text = 'usage: ' + ev.inputTokens + ' in, ' + ev.outputTokens + ' out' + (ev.costUsd == null ? ', cost unknown' : ', $' + ev.costUsd); break;
        case 'result': text = (ev.ok ? 'turn ended: ' : 'turn failed: ') + ev.text; break;
        case 'error': text = 'error: ' + ev.message; break;
        case 'session': text = 'session ' + ev.sessionId; break;
        default: text = ev.type + ' ' + JSON.stringify(ev.raw || ev);
      }
      li.textContent = '[' + ev.worker + '] ' + String(text).slice(0, 2000);
      // The turn's report as Markdown: rendered by the server with raw HTML off (brain/ui/markdown.ts).
      if (ev.type === 'result' && typeof ev.html === 'string') {
        li.textContent = '[' + ev.worker + '] ' + (ev.ok ? 'turn ended:' : 'turn failed:');
        var report = document.createElement('div');
        report.className = 'markdown report';
        report.innerHTML = ev.html;
        li.appendChild(report);
      }
      list.appendChild(li);
    });
  }
})();
`;
