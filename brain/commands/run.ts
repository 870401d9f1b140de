/**
 * `polly run PLAN.yaml [--yes] [--json]`: admit and execute a human-written plan through the same
 * checker, plan gate and Brain as an LLM's plan — no LLM involved.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command, type CommandIO } from './command.js';
import { PollyError } from '../core/errors.js';
import { createGoal } from '../registry/goal-record.js';
import { endGoal } from '../registry/goal-lifecycle.js';
import { followGoalInRepo, formatSummary, goalSummary, signalExitCode } from './follow-goal.js';
import { ensureBrain } from '../process/daemon.js';
import { proposeValidPlan } from '../plan/plan-gate.js';
import { budgetFlow, resolvePlanBudgets, taskBudget } from '../plan/budgets.js';
import { parkCauses } from '../plan/plan-retry.js';
import { planTaskId } from '../registry/task-record.js';
import { parsePlanFile, type Plan } from '../plan/plan-schema.js';
import { refuseUnstartableAgents } from '../plan/plan-agents.js';
import { openRepoContext, type RepoContext } from '../registry/repo-context.js';
import { createGitRunner } from '../../workers/git/git.js';
import { describeIdentity, resolveCommitIdentity, uncommittedChanges } from '../../workers/git/commit-identity.js';

/**
 * What a run should say before it starts (stderr lines): whose identity Polly's commits will carry,
 * and the uncommitted changes of the main checkout that no worktree will see (worktrees start
 * from the base branch's last commit).
 */
export async function checkoutNotes(root: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const git = createGitRunner({ baseEnv: env });
  const lines = [`[polly] commits by ${describeIdentity(await resolveCommitIdentity(git, root, env))}`];
  const changes = await uncommittedChanges(git, root);
  if (changes.length > 0) {
    const shown = changes.slice(0, 10).join(', ') + (changes.length > 10 ? `, … (${changes.length - 10} more)` : '');
    lines.push(
      `[polly] warning: ${changes.length} uncommitted change(s) in ${root} are left out of every worktree (they start from the last commit): ${shown}. Commit them first if the workers need them.`,
    );
  }
  return lines;
}
import { matchPlanFile, reconcileDeadBrain } from '../process/resume.js';
import { followExisting } from './resume.js';

/**
 * Propose `plan` for a new goal, and follow it (the tail of `polly run`): the checkout notes on
 * stderr, the admission (a refused plan prints its counterexamples and fails the goal), the plan
 * gate, the Brain, and the summary (table or JSON) on stdout.
 * @param what  the goal's text, the plan's source (a file path, or the command that made it) and,
 *   for a retry plan, the tasks it takes over (brain/plan/plan-retry.ts).
 * @returns the exit code: 0 when the goal is done, 1 refused or failed, 128+n after a signal.
 */
export async function proposeAndFollow(
  ctx: RepoContext,
  plan: Plan,
  what: { goal: string; source: string; retries?: Record<string, string> },
  flags: { yes: boolean; json: boolean; detach: boolean },
  io: CommandIO,
): Promise<number> {
  for (const line of await checkoutNotes(ctx.repo.root, io.env)) io.stderr.write(`${line}\n`);
  const { goal, seq } = await createGoal(ctx.store, what.goal, 'plan');
  const proposed = await proposeValidPlan(ctx.store, ctx.config, plan, { goalId: goal.id, source: what.source, ...(what.retries ? { retries: what.retries } : {}) });
  // The admission line is a result: stdout has it once (below, or in the summary); the progress on
  // stderr shows it once more as "plan pN: …" while following.
  if (!proposed.admitted) {
    for (const c of proposed.counterexamples) io.stderr.write(`${c}\n`);
    await ctx.store.update((draft, tx) => {
      endGoal(draft.goals[goal.id]!, 'failed', tx, { reason: 'plan refused' });
    });
    if (flags.json) writeJson(io.stdout, { plan: proposed.planId, admitted: false, line: proposed.line, counterexamples: proposed.counterexamples });
    else writeLine(io.stdout, proposed.line);
    return 1;
  }
  const brain = await ensureBrain(ctx.store, ctx.repo.root, ctx.repo.pollyDir, io.env);
  if (flags.detach) {
    if (flags.json) writeJson(io.stdout, { plan: proposed.planId, admitted: true, line: proposed.line, goal: goal.id });
    else writeLine(io.stdout, `${proposed.line}\nplan ${proposed.planId} waits for approval (polly plan approve ${proposed.planId}); follow with polly status`);
    return 0;
  }
  const { goal: final, interrupted } = await followGoalInRepo(ctx, io, { goalId: goal.id, afterSeq: seq, yes: flags.yes, brain });
  const reg = await ctx.store.read();
  const rows = goalSummary(reg, goal.id, await ctx.store.journal());
  if (flags.json) writeJson(io.stdout, { plan: proposed.planId, admitted: true, line: proposed.line, goal: final.id, status: final.status, tasks: rows });
  else for (const l of [proposed.line, '', ...formatSummary(rows)]) writeLine(io.stdout, l);
  if (interrupted) return signalExitCode(interrupted);
  return final.status === 'done' ? 0 : 1;
}

export const command: Command = {
  summary: 'admit and execute a human-written plan file',
  usage: `Usage: polly run PLAN.yaml [--yes] [--json] [--detach]

Model-check the plan with Polly's guarantees (REFUSED plans print the violated invariants and
their shortest counterexamples, exit 1), wait at the plan gate for approval (--yes approves;
in a terminal you are asked; otherwise run "polly plan approve ID"), then let the Brain run
every task: worktree, worker, acceptance checks, push, draft PR, cross-review, ready.
Polly never merges. Prints a summary table (or JSON) when every task has finished.

  --yes     approve the plan if it is admitted
  --json    print {plan, admitted, line, goal, tasks} as JSON
  --detach  return once the plan is admitted and the Brain runs

As root, a plan with a claude-code worker or reviewer is refused before anything starts unless
workers.claude-code.allow_root_sandbox is true (Claude Code refuses to run as root otherwise).
So is a plan whose workers or reviewers have no model key in the environment (the variables are
named, as polly doctor names them; never their values).

Exit codes: 0 every task ready; 1 refused, rejected, expired, an agent that cannot start here, or a task failed; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('run', argv, { yes: { type: 'boolean' }, json: { type: 'boolean' }, detach: { type: 'boolean' } }, 1);
    const file = positionals[0];
    if (!file) throw new PollyError('bad_input', 'polly run: which plan? Give the path of a plan file (YAML), e.g. polly run plan.yaml.');
    const path = resolve(io.cwd, file);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new PollyError('bad_input', `polly run: cannot read the plan file ${path}: ${(error as Error).message}`, { cause: error, details: { file: path } });
    }
    const plan = parsePlanFile(text, path);
    const ctx = await openRepoContext(io.cwd, io.env);
    refuseUnstartableAgents(plan.tasks, ctx.config, io.env);
    await reconcileDeadBrain(ctx.store);
    const goal = plan.goal ?? `polly run ${file}`;
    const match = matchPlanFile(await ctx.store.read(), { goal, tasks: plan.tasks, batches: plan.batches, budgets: resolvePlanBudgets(ctx.config, plan.budgets) });
    const known = match.kind === 'same' ? match.plan : null;
    if (known?.goalId) {
      // The same plan file again (e.g. after a crash of the Brain and of this command): re-attach to
      // its tasks and runs instead of proposing it anew, which would open a second PR per task.
      io.stderr.write(`[polly] ${file} is plan ${known.id} (${known.gate}), already proposed for goal ${known.goalId}; resuming it (no new plan, no second PR)\n`);
      return followExisting(ctx, known.id, known.goalId, Boolean(values.yes), Boolean(values.json), Boolean(values.detach), io);
    }
    if (match.kind === 'changed') {
      const { plan: old, differences } = match;
      const what = differences.join(', ');
      if (match.unsettled) {
        const fix =
          old.gate === 'pending'
            ? `Reject it first (polly plan reject ${old.id}), then run the file again, or restore the file to run ${old.id}.`
            : `Wait until its tasks have finished and their PRs are merged or closed (polly status), then run the file again as a new plan, or restore the file to resume ${old.id}.`;
        throw new PollyError(
          'conflict',
          `polly run: ${file} has the tasks of plan ${old.id} (${old.gate}) but differs from it in ${what}; a new plan now would run those tasks twice. ${fix}`,
          {
            details: { file: path, plan: old.id, differences },
          },
        );
      }
      io.stderr.write(`[polly] ${file} differs from plan ${old.id} in ${what}; proposing it as a new plan\n`);
      // A task of the old plan parked for its budget keeps its work: the new plan starts it over, a retry continues it.
      const reg = await ctx.store.read();
      const parks = parkCauses(await ctx.store.journal());
      const resolved = resolvePlanBudgets(ctx.config, plan.budgets);
      for (const spec of old.tasks) {
        const t = reg.tasks[planTaskId(old, spec.key)];
        const now = plan.tasks.find((s) => s.key === spec.key);
        if (!t || !now || t.status !== 'parked' || parks.get(t.id)?.cause !== 'budget') continue;
        io.stderr.write(
          `[polly] ${t.id} (task ${spec.key} of ${old.id}) was parked for its budget${t.worktree ? ` with its work in ${t.worktree}` : ''}; the new plan starts task ${spec.key} over. To continue that work under the file's budget instead, stop here and run: polly retry ${t.id} --budget '${budgetFlow(taskBudget(now.budget, resolved))}'\n`,
        );
      }
    }
    return proposeAndFollow(ctx, plan, { goal, source: path }, { yes: Boolean(values.yes), json: Boolean(values.json), detach: Boolean(values.detach) }, io);
  },
};
