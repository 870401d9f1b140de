/**
 * The dashboard's pages as server-rendered HTML (no front-end build): pure functions from
 * registry records to a string. Every value from the registry is escaped ({@link escapeHtml});
 * the only markup is written here. The live parts are wired by `UI_SCRIPT` (served as
 * `/ui.js`): a page reloads its `<main>` when the state changes, and a task page appends its
 * workers' events as they are pushed.
 */
import type { CounterexampleTrace, GoalRecord, JournalEntry, LocalPullRequest, PlanRecord, Registry, TaskRecord, WorkerRecord } from '../registry/registry-schema.js';
import { compareIds, statusReport } from '../registry/status-report.js';
import { pullRequestStatus } from '../forge/pr-status.js';
import { visibleText } from '../core/visible-text.js';
import { formatCost, formatTotals, formatUsd } from '../registry/cost-ledger.js';
import { budgetFlow, formatBudget, raisedBudget, taskBudget } from '../plan/budgets.js';
import type { ParkCause } from '../plan/plan-retry.js';
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
  const tone = /^(done|ready|approved|admitted|merged|passing|clean|ok|allow)$/.test(status)
    ? 'ok'
    : /^(failed|base_red|refused|rejected|expired|cancelled|parked|failing|conflicts|changes_requested|deny|REFUSED)$/.test(status)
      ? 'bad'
      : 'wait';
  return `<span class="badge ${tone}" data-status="${e(status)}">${e(status)}</span>`;
}

function table(headers: string[], rows: string[][], id?: string): string {
  if (rows.length === 0) return '<p class="empty">none</p>';
  return `<table${id ? ` id="${e(id)}"` : ''}><thead><tr>${headers.map((h) => `<th>${e(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/**
 * The page frame.
 * @param live  `true`: the page's `<main>` is reloaded whenever the state changes (SSE `/events`).
 * @param stream  a task id whose workers' events `/ui.js` appends to `#stream` (SSE `/tasks/ID/stream`).
 */
export function layout(title: string, body: string, options: { live?: boolean; stream?: string; after?: string } = {}): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${e(title)} · Polly</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/ui.css"><script src="/ui.js" defer></script></head>
<body${options.live ? ' data-live="1"' : ''}${options.stream ? ` data-stream="${e(options.stream)}"` : ''}>
<nav><a href="./" class="brand">Polly</a> <a href="./">Goals &amp; plans</a> <a href="journal">Journal</a> <span id="live-state" class="muted"></span></nav>
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

/** Goals, plans, tasks and workers: the overview (`/`). */
export function overviewPage(reg: Registry): string {
  const goals = byId(reg.goals);
  const plans = byId(reg.plans);
  const tasks = byId(reg.tasks);
  // The same rule as `polly status`: a worker row is live while its recorded state says so and its pid is alive.
  const live = statusReport('', reg).workers.map((w) => reg.workers[w.id]!);
  return layout(
    'Overview',
    `<h1>Goals &amp; plans</h1>
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
    { live: true },
  );
}

/** One goal (`/goals/ID`): its text and status, the Brain's last report, its plans and their tasks. */
export function goalPage(goal: GoalRecord, reg: Registry): string {
  const plans = goal.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => !!p);
  const tasks = byId(reg.tasks).filter((t) => t.planId !== null && goal.planIds.includes(t.planId));
  return layout(
    `Goal ${goal.id}`,
    `<h1>Goal ${e(goal.id)} ${badge(goal.status)}</h1>
<p class="goal-text">${e(goal.text)}</p>
<p class="muted">Created ${e(goal.createdAt)}; planned by ${goal.mode === 'plan' ? 'a human-written plan' : 'the LLM Brain'}.</p>
${goal.brainReport ? `<h2>The Brain's last report</h2><pre id="brain-report">${e(goal.brainReport)}</pre>` : ''}
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

function checksView(t: TaskRecord): string {
  return table(
    ['Command', 'Exit', 'Time', 'Output'],
    t.checks.map((c) => [
      `<code>${e(c.command)}</code>`,
      `${badge(c.timedOut ? 'timed out' : c.exitCode === 0 ? 'ok' : 'failed')} ${e(c.exitCode ?? 'signal')}`,
      `${(c.durationMs / 1000).toFixed(1)} s`,
      c.output ? `<details><summary>output</summary><pre>${e(c.output)}</pre></details>` : '',
    ]),
    'checks',
  );
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
 */
export function taskPage(t: TaskRecord, workers: WorkerRecord[], gate: GateLogEntry[], runs: RunWithJournal[] = [], options: { park?: ParkCause | null } = {}): string {
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
    { live: true, stream: t.id, after: `<section class="stream"><h2>Live events</h2><ol id="stream"></ol></section>` },
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
<h2>Checks</h2>${task ? checksView(task) : '<p class="empty">no task</p>'}
<h2>Reviews</h2>${
      pr.reviews.length
        ? pr.reviews
            .map(
              (r) =>
                `<section class="review"><h3>${badge(r.event)} by ${e(r.author ?? 'polly')} <span class="muted">${e(r.at)}</span></h3><pre>${e(r.body)}</pre>${
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
<h2>Diff</h2><pre class="diff" id="diff">${diffLines}</pre>`,
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
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f7f8fa}
nav{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}
nav a{color:#cfd8ea;text-decoration:none}nav a.brand{color:#fff;font-weight:700}
main,section.stream{padding:.4em 1.2em;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.4em;border-bottom:1px solid #dde2ea}h3{font-size:1em}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #e1e5ec;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#eef1f6;font-weight:600}
.badge{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;font-weight:600}
.badge.ok{background:#d6f5dd;color:#17692b}.badge.bad{background:#fadcdc;color:#8d1c1c}.badge.wait{background:#fdf0cf;color:#7a5a00}
.health{margin:.6em 0;padding:.4em .6em;border-left:4px solid}.health.ok{border-color:#17692b;background:#eef8f0}.health.bad{border-color:#8d1c1c;background:#fdeeee;font-weight:600}
.muted{color:#6b7485}.empty{color:#8b93a3;font-style:italic}.notice{background:#e6f0ff;padding:.5em}
.actions{display:flex;gap:.8em;flex-wrap:wrap;align-items:center}input{font:inherit;padding:.3em;width:9em}button{font:inherit;padding:.45em 1.1em;border-radius:4px;border:1px solid #999;cursor:pointer}
button.ok{background:#1f7a35;color:#fff;border-color:#1f7a35}button.bad{background:#fff;color:#8d1c1c;border-color:#8d1c1c}
ul.diff{margin:0;padding-left:1em}del{color:#8d1c1c}ins{color:#17692b;text-decoration:none;font-weight:600}
code.effect{background:#fdf0cf;padding:0 .3em}pre{white-space:pre-wrap;margin:0}
pre.diff{background:#fff;border:1px solid #e1e5ec;padding:.5em;overflow:auto}pre.diff .add{color:#17692b}pre.diff .del{color:#8d1c1c}pre.diff .hunk{color:#5a48b5}pre.diff .h{font-weight:600}
ol#stream{background:#fff;border:1px solid #e1e5ec;padding:.5em 2.5em;font-family:ui-monospace,monospace;font-size:12.5px}
ol#stream li.tool_call{color:#5a48b5}ol#stream li.error,ol#stream li.denied{color:#8d1c1c}ol#stream li.result{font-weight:600}
code.data{font-size:12px;word-break:break-all}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{color:#6b7485}dd{margin:0}
`;

/**
 * `/ui.js`: on a page of a session (it has a `<base>`), keep the session's root in localStorage;
 * on a sign-in page, go on to the same page below that root (`boot`) or forget it (`signed-out`).
 * Then subscribe to `events` and reload `<main>` when the state changes; on a task page, append
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
  if (document.body.dataset.live) {
    var es = new EventSource('events');
    var busy = false, again = false;
    var reload = function () {
      if (busy) { again = true; return; }
      busy = true;
      fetch(location.href, { credentials: 'same-origin' }).then(function (r) { return r.text(); }).then(function (html) {
        var next = new DOMParser().parseFromString(html, 'text/html').querySelector('main');
        var cur = document.querySelector('main');
        if (next && cur) cur.replaceWith(next);
      }).finally(function () { busy = false; if (again) { again = false; reload(); } });
    };
    es.addEventListener('change', reload);
    es.onopen = function () { if (state) state.textContent = 'live'; };
    es.onerror = function () { if (state) state.textContent = 'reconnecting…'; };
  }
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
      list.appendChild(li);
    });
  }
})();
`;
