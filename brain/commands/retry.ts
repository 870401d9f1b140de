/**
 * `polly retry TASK-ID… [--budget B] [--goal-budget B] [--yes] [--json] [--detach] [--script FILE]`: run tasks
 * that stopped (failed, an agent missing or exited, cancelled or skipped, parked for their budget or
 * a full disk) again, in the worktree and on the branch they stopped
 * in, with their work. The retry is a plan of its own (brain/plan/plan-retry.ts): model-checked with
 * Polly's guarantees, approved at the plan gate, then run by the Brain like `polly run`; a PR the
 * earlier attempt opened is carried on, never opened twice. `--script` runs it with the scripted
 * models of `polly try` (./scripted-models.ts).
 */
import { parseCommandArgs } from './args.js';
import type { Command, CommandIO } from './command.js';
import { budgetFlow, parkCauses, pendingRetry, retryPlan, type RetryBudgets } from '../plan/plan-retry.js';
import { parseBudgetText } from '../plan/plan-schema.js';
import { planTaskId } from '../registry/task-record.js';
import type { PlanRecord } from '../registry/registry-schema.js';
import { reconcileDeadBrain } from '../process/resume.js';
import { followExisting } from './resume.js';
import { openRepoContext } from '../registry/repo-context.js';
import { refuseUnstartableAgents } from '../plan/plan-agents.js';
import { proposeAndFollow } from './run.js';
import { withScriptedModels } from './scripted-models.js';
import { PollyError } from '../core/errors.js';
import { setupAgain } from '../task-tools/dispatch.js';
import { formatBudget } from '../plan/budgets.js';

/**
 * Refuse to follow `pending` (a retry of these tasks already proposed) when the budgets asked for
 * differ from the ones it was proposed with: `--yes` would approve figures the user did not give.
 * @throws PollyError `conflict` naming the plan, both budgets and the commands that decide it.
 */
function refuseOtherBudgets(pending: PlanRecord, asked: RetryBudgets): void {
  const differs: string[] = [];
  if (asked.budget !== undefined) {
    for (const s of pending.tasks) {
      const had = s.budget ?? null;
      if (JSON.stringify(had) !== JSON.stringify(asked.budget)) differs.push(`${planTaskId(pending, s.key)} has budget ${budgetFlow(had)}`);
    }
  }
  if (asked.goalBudget !== undefined && JSON.stringify(pending.budgets?.perGoal ?? null) !== JSON.stringify(asked.goalBudget))
    differs.push(`its goal budget is ${budgetFlow(pending.budgets?.perGoal ?? null)}`);
  if (differs.length === 0) return;
  throw new PollyError(
    'conflict',
    `polly retry: plan ${pending.id} (${pending.gate}) already retries these tasks with other budgets (${differs.join('; ')}); nothing was approved. ${
      pending.gate === 'pending'
        ? `Reject it (polly plan reject ${pending.id}) and run polly retry again, or approve it as it is (polly plan approve ${pending.id}).`
        : 'Wait for it to end (polly status), then retry again.'
    }`,
    { details: { plan: pending.id, asked } },
  );
}

/**
 * The body of `polly retry` (see the module doc): follow a retry of these tasks already proposed, or
 * propose a new retry plan and follow it.
 * @param budgets  `--budget` / `--goal-budget`, parsed (absent: the budgets the tasks ran under).
 * @returns the exit code (as `proposeAndFollow`).
 */
async function retryTasks(positionals: string[], flags: { yes: boolean; json: boolean; detach: boolean }, budgets: RetryBudgets, io: CommandIO): Promise<number> {
  const ctx = await openRepoContext(io.cwd, io.env);
  await reconcileDeadBrain(ctx.store);
  const reg = await ctx.store.read();
  // A retry of exactly these tasks already proposed and not yet taken over: follow it (no second
  // plan). A pending one covering other tasks too is refused by pendingRetry, naming it.
  const pending = positionals.length > 0 ? pendingRetry(reg, positionals)?.follow : undefined;
  if (pending?.goalId) {
    refuseOtherBudgets(pending, budgets);
    io.stderr.write(`[polly] plan ${pending.id} (${pending.gate}) already retries ${positionals.join(', ')}; following it\n`);
    return followExisting(ctx, pending.id, pending.goalId, flags.yes, flags.json, flags.detach, io);
  }
  const parks = parkCauses(await ctx.store.journal());
  const retry = retryPlan(reg, positionals, { ...budgets, parks });
  refuseUnstartableAgents(retry.plan.tasks, ctx.config, io.env);
  for (const [key, id] of Object.entries(retry.retries)) {
    const t = reg.tasks[id]!;
    const again = setupAgain(t, ctx.config.worktrees.setup);
    const where = again.action === 'fresh' ? 'a new worktree from the base as it is now' : (t.worktree ?? 'a new worktree');
    const spec = retry.plan.tasks.find((s) => s.key === key)!;
    const budget = JSON.stringify(spec.budget ?? null) !== JSON.stringify(t.budget ?? null) ? `, budget ${formatBudget(t.budget)} → ${formatBudget(spec.budget)}` : '';
    io.stderr.write(
      `[polly] retrying ${id} (${t.status}${t.statusReason ? `: ${t.statusReason.split('\n')[0]}` : ''}) as task ${key} of a retry plan, in ${where}${t.pr ? `, PR #${t.pr.number}` : ''}${budget}\n`,
    );
    if (again.action !== 'none')
      io.stderr.write(
        `[polly] ${id}: worktrees.setup "${ctx.config.worktrees.setup}" runs again before the worker, ${again.action === 'fresh' ? `in a new worktree (${t.worktree} is backed up and removed: no agent ran there)` : `in ${t.worktree}`}: ${again.reason}\n`,
      );
  }
  return proposeAndFollow(ctx, retry.plan, { goal: retry.plan.goal!, source: `polly retry ${positionals.join(' ')}`, retries: retry.retries }, flags, io);
}

export const command: Command = {
  summary: 'run tasks that stopped again, in their worktree, with their work',
  usage: `Usage: polly retry TASK-ID... [--budget B] [--goal-budget B] [--yes] [--json] [--detach] [--script FILE]

Run tasks that stopped (failed, agent_missing, agent_exited, blocked_on_prompt, cancelled or
skipped, or parked for their budget or a full disk) again. Each keeps its id, worktree, branch and work (uncommitted files included) and its
PR if it has one; its worker starts a new session told why the earlier attempt stopped. The
retry is a plan of its own: model-checked like any plan, it waits at the plan gate (--yes
approves), then runs like "polly run". A task that depends on another stopped task needs that
one in the same retry (polly retry p1-t1 p1-t2); dependencies on ready tasks are met. A retry
plan already pending for exactly these tasks is followed; one that also retries other tasks is
named and left pending (approve or reject it with polly plan).

  --budget B       each retried task's hard budget, written as in a plan file:
            '{tokens: 400000}', '{usd: 2, tokens: 400000}', or null for no limit. It is counted
            over every attempt of the task: a task parked for its budget needs a higher one (a
            budget it already reached is refused, naming one that would do). Default: the budget
            it ran under. Shown at the plan gate; journaled as task.budget_changed.
  --goal-budget B  the retry goal's budget, counted over the retried tasks (same spelling).
            Default: the goal budget of the plan they came from.
  --yes     approve the retry plan if it is admitted (only one retrying exactly these tasks)
  --json    print {plan, admitted, line, goal, tasks} as JSON
  --detach  return once the plan is admitted and the Brain runs
  --script FILE  answer every model call from this model script, as "polly try" does (no API
            key): go on after a "polly try" whose task failed; not with --detach

When a task's worktree is kept and worktrees.setup changed since it ran there, or the lockfiles
it installs from changed, or it failed, the setup runs again before the worker (said on stderr).

Exit codes: 0 every task ready; 1 a task that cannot be retried (its status, an unmet
dependency), refused, rejected, or a task failed again; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'retry',
      argv,
      {
        yes: { type: 'boolean' },
        json: { type: 'boolean' },
        detach: { type: 'boolean' },
        script: { type: 'string' },
        budget: { type: 'string' },
        'goal-budget': { type: 'string' },
      },
      Number.POSITIVE_INFINITY,
    );
    const flags = { yes: Boolean(values.yes), json: Boolean(values.json), detach: Boolean(values.detach) };
    const budgets: RetryBudgets = {
      ...(values.budget !== undefined ? { budget: parseBudgetText(values.budget, '--budget') } : {}),
      ...(values['goal-budget'] !== undefined ? { goalBudget: parseBudgetText(values['goal-budget'], '--goal-budget') } : {}),
    };
    if (values.script === undefined) return retryTasks(positionals, flags, budgets, io);
    if (flags.detach)
      throw new PollyError('bad_input', 'polly retry: --detach cannot be used with --script: the scripted models are set up for the length of the command only. Drop --detach.');
    return withScriptedModels('retry', values.script, io, (scripted) => retryTasks(positionals, flags, budgets, scripted));
  },
};
