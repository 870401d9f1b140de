/**
 * The plan gate on the issue tracker (issue 30): for every goal that came from an issue
 * (`GoalRecord.issue`), one pass
 * 1. posts each admitted plan as one comment on the issue ({@link renderPlanComment}: tasks,
 *    workers, reviewers, declared paths, budgets, the admission line, and the counterexamples of
 *    the plans the checker refused before it), recorded as `PlanRecord.issueComment`
 *    (`issue.plan_posted` {forge, number, planId, commentId});
 * 2. reads the issue's new comments (one conditional request on GitHub) and takes a maintainer's
 *    `/polly approve [PLAN]`, `/polly reject [PLAN]` or `/polly cancel TASK` as an answer — the
 *    same gate action as `polly plan approve|reject` ({@link decidePlan}, `decidedBy`
 *    `github:@LOGIN (issue #N comment ID)`) or as the Brain's `sys_cancel_task`
 *    (`task.cancel_requested`). The rules: the permission is checked per comment (the same rule
 *    as PR feedback, brain/forge/github-permissions.ts); only a comment's first text counts (an
 *    edited comment is never an answer, and a deleted one is simply gone); the first valid answer
 *    wins (a later one finds the plan decided); the ask still expires after
 *    `policies.ask_timeout` (default 24 h) and then counts as rejected. Every comment that looks
 *    like an answer is answered exactly once, saying what Polly did or why nothing changed
 *    (`issue.answer` {forge, number, commentId, author, verb, outcome});
 * 3. edits the plan comment's decision line once the plan is decided anywhere (the terminal, the
 *    dashboard, `polly plan`, a comment, the expiry): whichever answer came first wins and the
 *    plan comment says which;
 * 4. keeps one progress comment, edited in place when the tasks move (never a stream);
 * 5. says once, when every PR of the goal is merged, that they are, leaving the closing of the
 *    issue to GitHub's `Fixes #N` (brain/forge/issue-ref.ts): Polly closes nothing, merges nothing.
 * Comments Polly posts carry its marker (brain/forge/github-forge.ts `POLLY_MARKER`) and are never
 * read as answers. Everything it records is in the goal's `issue` link and the plan records.
 */
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError, isPollyError } from '../core/errors.js';
import { FINAL_TASK_STATUSES, isGoalFinal } from '../core/vocabulary.js';
import { decidePlan, expirePlanAsks, unboundedLine } from '../plan/plan-gate.js';
import { formatBudget, taskBudget } from '../plan/budgets.js';
import type { GoalRecord, PlanRecord, Registry } from '../registry/registry-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { planTaskId } from '../registry/task-record.js';
import { goalPullRequests } from '../registry/goal-pull-requests.js';
import { isPollyAuthored } from './github-watch.js';
import type { IssueTracker, TrackerComment } from './issue-tracker.js';

/** An answer found in a comment: its first non-empty line, `/polly VERB [ARG]`. */
export type GateCommand = { verb: 'approve' | 'reject'; plan: string | null } | { verb: 'cancel'; task: string | null } | { verb: 'unknown'; text: string };

/**
 * The answer a comment gives, or null when it is not one: only a comment whose first non-empty
 * line starts with `/polly` (case-insensitive) is an answer, so a quoted or mentioned command is
 * not. Pure.
 */
export function parseGateCommand(body: string): GateCommand | null {
  const first = body
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== '');
  const m = first ? /^\/polly(?:\s+(\S+))?(?:\s+(\S+))?/i.exec(first) : null;
  if (!m) return null;
  const verb = (m[1] ?? '').toLowerCase();
  const arg = m[2] ?? null;
  if (verb === 'approve' || verb === 'reject') return { verb, plan: arg };
  if (verb === 'cancel') return { verb, task: arg };
  return { verb: 'unknown', text: first!.slice(0, 80) };
}

function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}
function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}

/** When a pending plan's ask expires (ISO), or null. Pure. */
export function askExpiry(plan: Pick<PlanRecord, 'askedAt' | 'createdAt'>, config: Pick<PollyConfig, 'policies'>): string {
  return new Date(Date.parse(plan.askedAt ?? plan.createdAt) + config.policies.ask_timeout * 1000).toISOString();
}

/** The decision line of a plan comment: `**Decision:** …`. Pure. */
export function decisionLine(plan: Pick<PlanRecord, 'gate' | 'decidedBy' | 'decidedAt' | 'askedAt' | 'createdAt'>, config: Pick<PollyConfig, 'policies'>): string {
  if (plan.gate === 'pending') return `**Decision:** waiting for an answer; the ask expires at ${askExpiry(plan, config)} and then counts as rejected.`;
  if (plan.gate === 'expired') return `**Decision:** expired at ${plan.decidedAt ?? '?'} (policies.ask_timeout): counts as rejected, nothing of it runs.`;
  const what = plan.gate === 'approved' ? 'its tasks run' : 'nothing of it runs';
  return `**Decision:** ${plan.gate} by ${plan.decidedBy ?? 'someone'} at ${plan.decidedAt ?? '?'}: ${what}.`;
}

/**
 * The plan as one issue comment (markdown): the admission line, a table of tasks (worker and
 * model, reviewer, declared paths, budget, dependencies), the plan's budgets, protected paths and
 * the unbounded line, the counterexamples of `refusedBefore` (plans the checker refused on the way
 * to this one), how to answer, and the decision line. Pure.
 */
export function renderPlanComment(plan: PlanRecord, refusedBefore: readonly PlanRecord[], config: Pick<PollyConfig, 'policies'>): string {
  const out: string[] = [`### Polly's plan ${plan.id}${plan.goalId ? ` for goal ${plan.goalId}` : ''}`, '', `> ${plan.admission?.line ?? 'not checked'}`, ''];
  out.push('| task | title | worker | reviewer | paths | budget | after |', '| --- | --- | --- | --- | --- | --- | --- |');
  for (const t of plan.tasks) {
    const worker = `${t.worker}${t.model ? ` (${t.model})` : ''}${t.purpose === 'implement' ? '' : ` · ${t.purpose}`}`;
    const paths = t.paths ? t.paths.map(code).join(' ') : t.purpose === 'implement' ? '**any** (none declared)' : '—';
    out.push(
      `| ${code(t.key)} | ${cell(t.title)} | ${cell(worker)} | ${cell(t.reviewer ?? '—')} | ${paths} | ${cell(formatBudget(taskBudget(t.budget, plan.budgets)))} | ${t.dependsOn.map(code).join(' ') || '—'} |`,
    );
  }
  out.push('');
  if (plan.budgets) out.push(`Budgets: per task ${formatBudget(plan.budgets.perTask)} (a task's own wins); per goal ${formatBudget(plan.budgets.perGoal)}.`, '');
  for (const t of plan.tasks)
    if (t.protectedPaths?.length) out.push(`**${code(t.key)} may change protected paths** (Polly's config, CI, hooks, code owners): ${t.protectedPaths.map(code).join(', ')}.`, '');
  const unbounded = unboundedLine(plan);
  if (unbounded) out.push(`**${cell(unbounded)}**`, '');
  for (const r of refusedBefore) {
    const text = (r.counterexamples ?? []).join('\n\n') || (r.admission?.violations ?? []).join(', ');
    const ticks = '`'.repeat(Math.max(3, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length + 1)));
    out.push(
      `<details><summary>The checker refused plan ${r.id} first (${cell((r.admission?.violations ?? []).join(', '))}); the Brain revised it</summary>`,
      '',
      `${ticks}text`,
      text,
      ticks,
      '',
      '</details>',
      '',
    );
  }
  out.push(
    'Answer with a comment of your own (accounts with write, maintain or admin permission on this repository; the first valid answer wins, and an edited comment is not an answer):',
    '',
    `- ${code('/polly approve')}: Polly dispatches the tasks and opens one draft PR per task, each saying which issue it fixes. Polly never merges.`,
    `- ${code('/polly reject')}: nothing of the plan runs.`,
    `- ${code('/polly cancel TASK')} (after approval): stop one task; its work is kept in a backup ref.`,
    '',
    'The terminal and the dashboard answer too: whichever comes first wins.',
    '',
    decisionLine(plan, config),
  );
  return out.join('\n');
}

/** One line per task for the progress comment. Pure. */
export function renderProgress(goal: GoalRecord, reg: Pick<Registry, 'plans' | 'tasks'>): string | null {
  const plans = goal.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => p?.gate === 'approved');
  const rows: string[] = [];
  for (const plan of plans) {
    for (const spec of plan.tasks) {
      const t = reg.tasks[planTaskId(plan, spec.key)];
      if (!t) continue;
      const pr = t.pr ? `[#${t.pr.number}](${t.pr.url}) ${t.pr.state}` : '—';
      rows.push(
        `| ${code(t.id)} | ${cell(t.title)} | ${t.status}${t.statusReason && FINAL_TASK_STATUSES.has(t.status) && t.status !== 'ready' ? `: ${cell(t.statusReason.slice(0, 120))}` : ''} | ${pr} |`,
      );
    }
  }
  if (rows.length === 0) return null;
  return [
    `### Progress of goal ${goal.id} (${goal.status})`,
    '',
    '| task | title | status | PR |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
    '_This comment is edited in place as the work moves._',
  ].join('\n');
}

/** Re-exported from brain/registry/goal-pull-requests.ts, where the archive reads it too. */
export { goalPullRequests };

export interface IssueGateDeps {
  store: RegistryStore;
  tracker: IssueTracker;
  config: PollyConfig;
  now?: () => Date;
  log?: (line: string) => void;
}

/** What one pass did (counts, for `polly watch` and the Brain's log). */
export interface IssueGateReport {
  /** Issue numbers read. */
  issues: number[];
  posted: number;
  answered: number;
  decided: string[];
  progress: number;
  merged: number;
  errors: Array<{ number: number; message: string }>;
}

/** Who decided, as `decidedBy` records it. */
function byOf(kind: 'local' | 'github', login: string, number: number, commentId: number): string {
  return kind === 'github' ? `github:@${login} (issue #${number} comment ${commentId})` : `human:${login} (issue #${number} comment ${commentId})`;
}

/** What a pass keeps for the next one in memory: issues whose comments must be read in full again (a permission lookup failed). */
export interface IssueGateMemory {
  recheck: Set<number>;
}

/** A fresh {@link IssueGateMemory}. */
export function newIssueGateMemory(): IssueGateMemory {
  return { recheck: new Set() };
}

/** One pass over every goal that came from an issue of `tracker`'s kind (see the module comment). */
export async function issueGatePass(deps: IssueGateDeps, memory: IssueGateMemory = newIssueGateMemory()): Promise<IssueGateReport> {
  const now = deps.now ?? (() => new Date());
  const report: IssueGateReport = { issues: [], posted: 0, answered: 0, decided: [], progress: 0, merged: 0, errors: [] };
  await expirePlanAsks(deps.store, deps.config, now());
  const reg = await deps.store.read();
  const goals = Object.values(reg.goals).filter((g) => g.issue?.forge === deps.tracker.kind && !(g.issue.mergedNotice && isGoalFinal(g.status)));
  for (const goal of goals) {
    const number = goal.issue!.number;
    report.issues.push(number);
    try {
      await postPlans(deps, goal.id, report, now);
      await readAnswers(deps, goal.id, report, now, memory);
      await showDecisions(deps, goal.id, now);
      await keepProgress(deps, goal.id, report);
      await sayMerged(deps, goal.id, report, now);
    } catch (error) {
      report.errors.push({ number, message: isPollyError(error) ? error.message : String((error as Error)?.message ?? error) });
    }
  }
  return report;
}

async function fresh(deps: IssueGateDeps, goalId: string): Promise<{ reg: Registry; goal: GoalRecord }> {
  const reg = await deps.store.read();
  const goal = reg.goals[goalId];
  if (!goal?.issue) throw new PollyError('internal', `goal ${goalId} lost its issue link`);
  return { reg, goal };
}

/** 1. Each admitted plan of the goal, once, as a comment (refused plans before it in a collapsed block). */
async function postPlans(deps: IssueGateDeps, goalId: string, report: IssueGateReport, now: () => Date): Promise<void> {
  const { reg, goal } = await fresh(deps, goalId);
  const refused: PlanRecord[] = [];
  for (const id of goal.planIds) {
    const plan = reg.plans[id];
    if (!plan) continue;
    if (plan.gate === 'refused') {
      refused.push(plan);
      continue;
    }
    if (plan.issueComment) {
      refused.length = 0;
      continue;
    }
    const text = renderPlanComment(plan, refused, deps.config);
    const { id: commentId } = await deps.tracker.comment(goal.issue!.number, text);
    await deps.store.update((draft, tx) => {
      const p = draft.plans[plan.id];
      if (!p) return;
      p.issueComment = { id: commentId, postedAt: now().toISOString(), decision: decisionLine(plan, deps.config) };
      const seen = draft.goals[goalId]?.issue;
      if (seen) (seen.seenComments ??= {})[String(commentId)] = '';
      tx.emit('issue.plan_posted', { forge: deps.tracker.kind, number: goal.issue!.number, planId: plan.id, goalId, commentId });
    });
    report.posted += 1;
    refused.length = 0;
  }
}

/** 2. New comments → answers (see the module comment). */
async function readAnswers(deps: IssueGateDeps, goalId: string, report: IssueGateReport, now: () => Date, memory: IssueGateMemory): Promise<void> {
  const { reg, goal } = await fresh(deps, goalId);
  const link = goal.issue!;
  // Only while there is something to answer: a plan posted and the goal's work not settled.
  const posted = goal.planIds.some((id) => reg.plans[id]?.issueComment);
  if (!posted || isGoalFinal(goal.status)) return;
  const comments = await deps.tracker.listComments(link.number, { fresh: memory.recheck.delete(link.number) });
  if (comments === null) return;
  for (const c of comments) {
    const state = (await fresh(deps, goalId)).goal.issue!;
    const seenAt = state.seenComments?.[String(c.id)];
    const answered = new Set(state.answered ?? []);
    if (seenAt === c.updatedAt || (seenAt === '' && isPollyAuthored(c.body))) continue;
    if (isPollyAuthored(c.body)) {
      await markSeen(deps, goalId, c);
      continue;
    }
    const command = parseGateCommand(c.body);
    const edited = Date.parse(c.updatedAt) > Date.parse(c.createdAt);
    if (!command || answered.has(c.id)) {
      await markSeen(deps, goalId, c);
      continue;
    }
    const who = c.author ?? 'someone';
    if (seenAt !== undefined || edited) {
      // Edited after it was written (whether Polly read it before or not): its first text is not known, so it is no answer.
      await answer(
        deps,
        goalId,
        c,
        command.verb,
        'edited',
        `@${who}: comment ${c.id} was edited, and an edited comment is not an answer (Polly cannot know its first text). Nothing changed; post a new comment to answer.`,
      );
      report.answered += 1;
      continue;
    }
    const trust = await deps.tracker.trustOf(c.author);
    if (trust.permission === 'unknown') {
      // The lookup failed: not marked seen, and the list is read in full next pass (unchanged, it would answer 304).
      memory.recheck.add(link.number);
      continue;
    }
    if (!trust.trusted) {
      await answer(
        deps,
        goalId,
        c,
        command.verb,
        'untrusted',
        `@${who}: only accounts with write, maintain or admin permission on this repository answer Polly's plan gate (yours: ${trust.permission}). Nothing changed.`,
      );
      report.answered += 1;
      continue;
    }
    const text = await act(deps, goalId, c, command, report, now);
    await answer(deps, goalId, c, command.verb, text.outcome, text.reply);
    report.answered += 1;
  }
}

async function markSeen(deps: IssueGateDeps, goalId: string, c: TrackerComment): Promise<void> {
  await deps.store.update((draft) => {
    const link = draft.goals[goalId]?.issue;
    if (link) (link.seenComments ??= {})[String(c.id)] = c.updatedAt;
  });
}

/** Reply once to comment `c`, and record it seen and answered in the same write. */
async function answer(deps: IssueGateDeps, goalId: string, c: TrackerComment, verb: string, outcome: string, reply: string): Promise<void> {
  const number = (await fresh(deps, goalId)).goal.issue!.number;
  const { id } = await deps.tracker.comment(number, reply);
  await deps.store.update((draft, tx) => {
    const link = draft.goals[goalId]?.issue;
    if (!link) return;
    (link.seenComments ??= {})[String(c.id)] = c.updatedAt;
    (link.seenComments ??= {})[String(id)] = '';
    link.answered = [...(link.answered ?? []), c.id];
    tx.emit('issue.answer', { forge: deps.tracker.kind, number, goalId, commentId: c.id, author: c.author, association: c.association ?? null, verb, outcome, replyId: id });
  });
}

/** A maintainer's answer: the gate action itself. Returns the outcome and the reply. */
async function act(
  deps: IssueGateDeps,
  goalId: string,
  c: TrackerComment,
  command: GateCommand,
  report: IssueGateReport,
  now: () => Date,
): Promise<{ outcome: string; reply: string }> {
  const { reg, goal } = await fresh(deps, goalId);
  const who = `@${c.author ?? 'someone'}`;
  const plans = goal.planIds.map((id) => reg.plans[id]).filter((p): p is PlanRecord => Boolean(p) && p!.gate !== 'refused');
  const help = 'Answer with /polly approve, /polly reject or /polly cancel TASK.';
  if (command.verb === 'unknown') return { outcome: 'unknown', reply: `${who}: ${code(command.text)} is not an answer Polly knows. Nothing changed. ${help}` };
  if (command.verb === 'cancel') {
    const approved = plans.filter((p) => p.gate === 'approved');
    if (approved.length === 0) return { outcome: 'not_approved', reply: `${who}: no plan of this issue is approved, so no task runs to cancel. Nothing changed. ${help}` };
    if (!command.task) return { outcome: 'no_task', reply: `${who}: name the task to cancel, e.g. /polly cancel ${approved.at(-1)!.tasks[0]?.key ?? 't1'}. Nothing changed.` };
    const plan = [...approved].reverse().find((p) => p.tasks.some((t) => t.key === command.task || planTaskId(p, t.key) === command.task));
    if (!plan)
      return {
        outcome: 'unknown_task',
        reply: `${who}: no task ${code(command.task)} in plan ${approved.map((p) => p.id).join(', ')} (its tasks: ${approved.flatMap((p) => p.tasks.map((t) => t.key)).join(', ')}). Nothing changed.`,
      };
    const spec = plan.tasks.find((t) => t.key === command.task || planTaskId(plan, t.key) === command.task)!;
    const taskId = planTaskId(plan, spec.key);
    return deps.store.update((draft, tx) => {
      const task = draft.tasks[taskId];
      if (!task) return { outcome: 'not_started', reply: `${who}: task ${taskId} has not started yet; Polly cannot cancel it before it exists. Nothing changed.` };
      if (FINAL_TASK_STATUSES.has(task.status) && task.status !== 'ready')
        return { outcome: 'already_final', reply: `${who}: task ${taskId} is already ${task.status}. Nothing changed.` };
      if (task.cancelRequested) return { outcome: 'already_cancelling', reply: `${who}: task ${taskId} is already being cancelled. Nothing changed.` };
      task.cancelRequested = true;
      task.updatedAt = now().toISOString();
      tx.emit('task.cancel_requested', { taskId, by: byOf(deps.tracker.kind, c.author ?? 'someone', goal.issue!.number, c.id) });
      return {
        outcome: 'cancel_requested',
        reply: `Cancelling ${taskId} at ${who}'s request: its worker stops and its work is kept in a backup ref under refs/polly/backup/. Nothing is deleted.`,
      };
    });
  }
  const named = command.plan;
  const pending = plans.filter((p) => p.gate === 'pending');
  const target = named ? plans.find((p) => p.id === named) : (pending.at(-1) ?? plans.at(-1));
  if (named && !target)
    return { outcome: 'unknown_plan', reply: `${who}: no plan ${code(named)} on this issue (its plans: ${plans.map((p) => p.id).join(', ') || 'none yet'}). Nothing changed.` };
  if (!target) return { outcome: 'no_plan', reply: `${who}: no plan waits for an answer on this issue yet. Nothing changed.` };
  try {
    const decided = await decidePlan(deps.store, deps.config, target.id, command.verb, {
      by: byOf(deps.tracker.kind, c.author ?? 'someone', goal.issue!.number, c.id),
      now: now(),
    });
    report.decided.push(decided.id);
    return decided.gate === 'approved'
      ? {
          outcome: 'approved',
          reply: `Approved plan ${decided.id} (${who}). Polly dispatches its ${decided.tasks.length} task(s) now and opens one draft PR per task, each saying which issue it fixes. Polly never merges: a human reviews and merges.`,
        }
      : { outcome: 'rejected', reply: `Rejected plan ${decided.id} (${who}): nothing of it runs.` };
  } catch (error) {
    if (!isPollyError(error, 'conflict')) throw error;
    const plan = (await deps.store.read()).plans[target.id]!;
    const why =
      plan.gate === 'expired'
        ? `its ask expired at ${plan.decidedAt ?? '?'} (policies.ask_timeout ${deps.config.policies.ask_timeout} s) and counts as rejected`
        : `it was already ${plan.gate} by ${plan.decidedBy ?? 'someone'} at ${plan.decidedAt ?? '?'}`;
    return { outcome: `already_${plan.gate}`, reply: `${who}: plan ${plan.id} is not waiting for an answer: ${why}. This answer changes nothing.` };
  }
}

/** 3. The decision line of every posted plan comment, kept current. */
async function showDecisions(deps: IssueGateDeps, goalId: string, now: () => Date): Promise<void> {
  const { reg, goal } = await fresh(deps, goalId);
  let refused: PlanRecord[] = [];
  for (const id of goal.planIds) {
    const plan = reg.plans[id];
    if (!plan) continue;
    if (plan.gate === 'refused') {
      refused.push(plan);
      continue;
    }
    const line = decisionLine(plan, deps.config);
    if (plan.issueComment && plan.issueComment.decision !== line) {
      await deps.tracker.editComment(plan.issueComment.id, renderPlanComment(plan, refused, deps.config));
      await deps.store.update((draft, tx) => {
        const p = draft.plans[plan.id];
        if (!p?.issueComment) return;
        p.issueComment.decision = line;
        tx.emit('issue.plan_decision_shown', {
          forge: deps.tracker.kind,
          number: goal.issue!.number,
          planId: plan.id,
          gate: plan.gate,
          by: plan.decidedBy,
          at: now().toISOString(),
        });
      });
    }
    refused = [];
  }
}

/** 4. The one progress comment, posted when the first task exists and edited when it changes. */
async function keepProgress(deps: IssueGateDeps, goalId: string, report: IssueGateReport): Promise<void> {
  const { reg, goal } = await fresh(deps, goalId);
  const text = renderProgress(goal, reg);
  const link = goal.issue!;
  if (text === null || link.progressComment?.text === text) return;
  let id = link.progressComment?.id ?? null;
  if (id === null) id = (await deps.tracker.comment(link.number, text)).id;
  else await deps.tracker.editComment(id, text);
  const commentId = id;
  await deps.store.update((draft) => {
    const l = draft.goals[goalId]?.issue;
    if (!l) return;
    l.progressComment = { id: commentId, text };
    (l.seenComments ??= {})[String(commentId)] = '';
  });
  report.progress += 1;
}

/** 5. Once every PR of the goal is merged: say so, and leave the closing to `Fixes #N`. */
async function sayMerged(deps: IssueGateDeps, goalId: string, report: IssueGateReport, now: () => Date): Promise<void> {
  const { reg, goal } = await fresh(deps, goalId);
  const link = goal.issue!;
  if (link.mergedNotice) return;
  const { tasks, allMerged } = goalPullRequests(goal, reg);
  if (!allMerged) return;
  const prs = tasks.filter((t) => t.pr).map((t) => `#${t.pr!.number}`);
  const closing =
    deps.tracker.kind === 'github'
      ? `GitHub closes this issue through the ${code(`Fixes #${link.number}`)} in the last PR's description; Polly closes nothing.`
      : 'The local forge closes nothing by itself: close the issue when you are satisfied.';
  const { id } = await deps.tracker.comment(link.number, `Every PR of goal ${goal.id} is merged: ${prs.join(', ')}. ${closing}`);
  await deps.store.update((draft, tx) => {
    const l = draft.goals[goalId]?.issue;
    if (!l) return;
    l.mergedNotice = { id, at: now().toISOString() };
    (l.seenComments ??= {})[String(id)] = '';
    tx.emit('issue.all_merged', { forge: deps.tracker.kind, number: link.number, goalId, prs: tasks.filter((t) => t.pr).map((t) => t.pr!.number) });
  });
  report.merged += 1;
}
