/**
 * The pull request body Polly writes: the task, its acceptance contract, the check results Polly
 * itself ran, and the cross-review's findings. Pure: data in, markdown out. Control characters
 * (terminal escapes a worker wrote into a finding or a test's output) are shown as `\xNN`
 * (brain/core/visible-text.ts): the body is posted to the forge and printed by `polly pr show`.
 */
import type { AcceptanceContract, CommandResult, Registry, ReviewRecord, TaskRecord } from '../registry/registry-schema.js';
import { issueRefLine } from './issue-ref.js';
import { costNote, formatCost, totalTokens, type TaskLedger } from '../registry/cost-ledger.js';
import { visibleText } from '../core/visible-text.js';

export interface PrBodyInput {
  taskId: string;
  title: string;
  /** What the worker was asked to do. */
  prompt: string;
  acceptance: AcceptanceContract;
  /** The last run of the acceptance commands (Polly's, never the agent's claim). */
  checks: CommandResult[];
  /** Review rounds so far, oldest first (may be empty while the review is pending). */
  reviews: ReviewRecord[];
  /** Who implemented it, e.g. `claude-code`. */
  worker?: string;
  /** Set when a turn ran without Polly's sandbox (`workers.allow_unconfined`): the warning. */
  unconfined?: string | null;
  /** The task's cost ledger so far (brain/registry/cost-ledger.ts); absent: no section. */
  ledger?: TaskLedger | null;
  /** Protected paths the plan let this task change (plan key `protected_paths`); absent or empty: none. */
  protectedPaths?: readonly string[];
  /** The "Landing order" section (brain/forge/landing-order.ts `landingSection`, kept current by brain/forge/landing-sync.ts); absent: none. */
  landing?: string | null;
  /** `Fixes #N` / `Refs #N` for a goal that came from an issue (brain/forge/issue-ref.ts); absent: none. */
  issueLine?: string | null;
}

/** Longest run of backticks in `text` + 1, at least 3: a fence that `text` cannot close. */
function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** Escape a string for a single-line markdown context (table cell, list item). */
function inline(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

function code(text: string): string {
  const ticks = text.includes('`') ? '``' : '`';
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${inline(text)}${pad}${ticks}`;
}

function checkStatus(c: CommandResult): string {
  if (c.timedOut) return '⏱ timed out';
  return c.exitCode === 0 ? '✅ passed' : `❌ exit ${c.exitCode ?? 'signal'}`;
}

/**
 * Render the PR body as GitHub-flavoured markdown. Sections: task, landing order (when known), acceptance contract, checks
 * (a table; a failing check's output tail in a collapsed block), review (per round, blocking and
 * non-blocking findings as `file:line — message`), cost (per role and total, when any turn ran),
 * and Polly's no-merge note.
 */
export function renderPrBody(input: PrBodyInput): string {
  const out: string[] = [];
  out.push(`## Task ${inline(input.taskId)}: ${inline(input.title)}`, '');
  if (input.issueLine) out.push(inline(input.issueLine), '');
  if (input.worker) out.push(`Implemented by \`${inline(input.worker)}\`.`, '');
  if (input.protectedPaths?.length) {
    out.push(
      `> **This task may change protected paths** (Polly's config, CI, hooks or code owners; its plan declares them): ${input.protectedPaths.map(code).join(', ')}. Review those changes with care before you merge.`,
      '',
    );
  }
  if (input.unconfined) out.push(`> **Warning: this work ran without Polly's sandbox** (\`workers.allow_unconfined: true\`): ${inline(input.unconfined)}`, '');
  if (input.landing) out.push(input.landing.trimEnd(), '');
  const f = fenceFor(input.prompt);
  out.push(`${f}text`, input.prompt.trimEnd(), f, '');

  out.push('## Acceptance contract', '');
  if (input.acceptance.criteria.length === 0 && input.acceptance.commands.length === 0) out.push('_none_', '');
  for (const c of input.acceptance.criteria) out.push(`- ${inline(c)}`);
  if (input.acceptance.criteria.length) out.push('');
  if (input.acceptance.commands.length) {
    out.push('Commands (all must exit 0):', '');
    for (const c of input.acceptance.commands) out.push(`- ${code(c)}`);
    out.push('');
  }

  out.push('## Checks (run by Polly)', '');
  if (input.checks.length === 0) out.push('_not run yet_', '');
  else {
    out.push('| command | result | time |', '| --- | --- | --- |');
    for (const c of input.checks) out.push(`| ${code(c.command)} | ${checkStatus(c)} | ${(c.durationMs / 1000).toFixed(1)} s |`);
    out.push('');
    for (const c of input.checks.filter((x) => x.exitCode !== 0 || x.timedOut)) {
      const ff = fenceFor(c.output);
      out.push(`<details><summary>output of ${inline(c.command).replace(/</g, '&lt;')}</summary>`, '', ff, c.output.trimEnd(), ff, '', '</details>', '');
    }
  }

  out.push('## Review', '');
  if (input.reviews.length === 0) out.push('_pending_', '');
  for (const r of input.reviews) {
    const verdict = r.blocking.length === 0 ? 'no blocking findings' : `${r.blocking.length} blocking`;
    out.push(`### Round ${r.round} by \`${inline(r.reviewer)}\`: ${verdict}`, '');
    if (r.blocking.length) {
      out.push('Blocking:', '');
      for (const x of r.blocking) out.push(`- ${code(`${x.file}:${x.line}`)} — ${inline(x.message)}`);
      out.push('');
    }
    if (r.nonBlocking.length) {
      out.push('Non-blocking:', '');
      for (const x of r.nonBlocking) out.push(`- ${code(`${x.file}:${x.line}`)} — ${inline(x.message)}`);
      out.push('');
    }
  }
  if (input.ledger && input.ledger.totals.turns > 0) {
    out.push('## Cost', '', '| who | turns | tokens in | tokens out | cache read | cost |', '| --- | --- | --- | --- | --- | --- |');
    for (const [role, t] of Object.entries(input.ledger.byRole)) {
      if (t) out.push(`| ${inline(role)} | ${t.turns} | ${t.inputTokens} | ${t.outputTokens} | ${t.cacheReadTokens} | ${formatCost(t)} |`);
    }
    const all = input.ledger.totals;
    out.push(`| **total** | ${all.turns} | ${all.inputTokens} | ${all.outputTokens} | ${all.cacheReadTokens} | ${formatCost(all)} |`, '');
    out.push(`${totalTokens(all)} tokens in all. ${costNote(input.ledger.turns)}`.trimEnd(), '');
  }
  out.push('---', '_Opened by Polly. Polly never merges: a human reviews and merges this PR._', '');
  // The prompt, the checks' output and the findings are text a worker chose: no terminal escapes.
  return visibleText(out.join('\n'));
}

/**
 * The body input of `task`'s PR from its registry record (what open_draft_pr, mark_ready and the
 * landing sync render); with `reg`, the issue line of a goal that came from an issue. Pure.
 */
export function prBodyInputOf(task: TaskRecord, reg?: Pick<Registry, 'goals' | 'plans' | 'tasks'>): PrBodyInput {
  return {
    taskId: task.id,
    title: task.title,
    prompt: task.prompt,
    acceptance: task.acceptance,
    checks: task.checks,
    reviews: task.reviews,
    worker: task.worker,
    unconfined: task.unconfined ?? null,
    ...(task.protectedPaths?.length ? { protectedPaths: task.protectedPaths } : {}),
    ledger: task.ledger ?? null,
    landing: task.pr?.landing ?? null,
    issueLine: reg ? issueRefLine(reg, task) : null,
  };
}
