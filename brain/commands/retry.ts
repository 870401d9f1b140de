/**
 * `polly retry TASK-ID… [--yes] [--json] [--detach]`: run tasks that stopped (failed, an agent
 * missing or exited, cancelled or skipped) again, in the worktree and on the branch they stopped
 * in, with their work. The retry is a plan of its own (brain/plan/plan-retry.ts): model-checked with
 * Polly's guarantees, approved at the plan gate, then run by the Brain like `polly run`; a PR the
 * earlier attempt opened is carried on, never opened twice.
 */
import { parseCommandArgs } from './args.js';
import type { Command } from './command.js';
import { pendingRetry, retryPlan } from '../plan/plan-retry.js';
import { reconcileDeadBrain } from '../process/resume.js';
import { followExisting } from './resume.js';
import { openRepoContext } from './repo-context.js';
import { proposeAndFollow, refuseUnstartableAgents } from './run.js';

export const command: Command = {
  summary: 'run tasks that stopped again, in their worktree, with their work',
  usage: `Usage: polly retry TASK-ID... [--yes] [--json] [--detach]

Run tasks that stopped (failed, agent_missing, agent_exited, blocked_on_prompt, cancelled or
skipped) again. Each keeps its id, worktree, branch and work (uncommitted files included) and its
PR if it has one; its worker starts a new session told why the earlier attempt stopped. The
retry is a plan of its own: model-checked like any plan, it waits at the plan gate (--yes
approves), then runs like "polly run". A task that depends on another stopped task needs that
one in the same retry (polly retry p1-t1 p1-t2); dependencies on ready tasks are met. A retry
plan already pending for exactly these tasks is followed; one that also retries other tasks is
named and left pending (approve or reject it with polly plan).

  --yes     approve the retry plan if it is admitted (only one retrying exactly these tasks)
  --json    print {plan, admitted, line, goal, tasks} as JSON
  --detach  return once the plan is admitted and the Brain runs

Exit codes: 0 every task ready; 1 a task that cannot be retried (its status, an unmet
dependency), refused, rejected, or a task failed again; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('retry', argv, { yes: { type: 'boolean' }, json: { type: 'boolean' }, detach: { type: 'boolean' } }, Number.POSITIVE_INFINITY);
    const ctx = await openRepoContext(io.cwd, io.env);
    await reconcileDeadBrain(ctx.store);
    const reg = await ctx.store.read();
    const flags = { yes: Boolean(values.yes), json: Boolean(values.json), detach: Boolean(values.detach) };
    // A retry of exactly these tasks already proposed and not yet taken over: follow it (no second
    // plan). A pending one covering other tasks too is refused by pendingRetry, naming it.
    const pending = positionals.length > 0 ? pendingRetry(reg, positionals)?.follow : undefined;
    if (pending?.goalId) {
      io.stderr.write(`[polly] plan ${pending.id} (${pending.gate}) already retries ${positionals.join(', ')}; following it\n`);
      return followExisting(ctx, pending.id, pending.goalId, flags.yes, flags.json, flags.detach, io);
    }
    const retry = retryPlan(reg, positionals);
    refuseUnstartableAgents(retry.plan.tasks, ctx.config, io.env);
    for (const [key, id] of Object.entries(retry.retries)) {
      const t = reg.tasks[id]!;
      io.stderr.write(
        `[polly] retrying ${id} (${t.status}${t.statusReason ? `: ${t.statusReason.split('\n')[0]}` : ''}) as task ${key} of a retry plan, in ${t.worktree ?? 'a new worktree'}${t.pr ? `, PR #${t.pr.number}` : ''}\n`,
      );
    }
    return proposeAndFollow(ctx, retry.plan, { goal: retry.plan.goal!, source: `polly retry ${positionals.join(' ')}`, retries: retry.retries }, flags, io);
  },
};
