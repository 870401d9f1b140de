/**
 * `polly resume [PLAN-ID] [--yes] [--json] [--detach] [--script FILE]`: after a stop or a crash of the Brain (and of
 * the `polly run`/`polly goal` that followed it), start the Brain again and follow the plan's
 * existing tasks to the end. The Brain re-attaches: it adopts workers that still run, claims the
 * same open work orders (tools are idempotent per order id), and never opens a second PR for a task.
 * `--script` runs it with the scripted models of `polly try` (./scripted-models.ts).
 */
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command, type CommandIO } from './command.js';
import { PollyError } from '../core/errors.js';
import { followGoalInRepo, formatSummary, goalSummary, signalExitCode } from './follow-goal.js';
import { decidePlan } from '../plan/plan-gate.js';
import { parkCauses, retryHints } from '../plan/plan-retry.js';
import { ensureBrain } from '../process/daemon.js';
import { askForPrs, prWaitingPlans, reconcileDeadBrain, resumablePlans } from '../process/resume.js';
import { openRepoContext, type RepoContext } from '../registry/repo-context.js';
import { withScriptedModels } from './scripted-models.js';

/**
 * Follow an existing plan's goal to its end: approve a pending plan with `yes`, ask for the PR
 * events waiting on its ready tasks to be acted on (brain/process/resume.ts `askForPrs`), start the
 * Brain when none runs, print the summary (table or JSON).
 * @returns the exit code: 0 when the goal is done, 1 otherwise.
 */
export async function followExisting(ctx: RepoContext, planId: string, goalId: string, yes: boolean, json: boolean, detach: boolean, io: CommandIO): Promise<number> {
  const plan = (await ctx.store.read()).plans[planId];
  if (plan?.gate === 'pending' && yes) await decidePlan(ctx.store, ctx.config, planId, 'approve', { by: 'polly --yes' });
  // PR events another goal's Brain left waiting on this plan's ready PRs: this run acts on them.
  if (await askForPrs(ctx.store, planId)) io.stderr.write(`[polly] plan ${planId}: the feedback, failing checks or conflicts waiting on its ready PRs start their fix rounds\n`);
  const afterSeq = (await ctx.store.journal()).at(-1)?.seq ?? 0;
  const brain = await ensureBrain(ctx.store, ctx.repo.root, ctx.repo.pollyDir, io.env);
  if (detach) {
    if (json) writeJson(io.stdout, { plan: planId, goal: goalId, brainPid: brain.pid });
    else writeLine(io.stdout, `plan ${planId} resumed (Brain pid ${brain.pid}); follow with polly status`);
    return 0;
  }
  const { goal: final, interrupted } = await followGoalInRepo(ctx, io, { goalId, afterSeq, yes, brain });
  const rows = goalSummary(await ctx.store.read(), goalId, await ctx.store.journal());
  if (json) writeJson(io.stdout, { plan: planId, goal: goalId, status: final.status, tasks: rows });
  else for (const l of formatSummary(rows)) writeLine(io.stdout, l);
  for (const l of retryHints(
    await ctx.store.read(),
    rows.map((r) => r.task),
    parkCauses(await ctx.store.journal()),
  ))
    io.stderr.write(`${l}\n`);
  if (interrupted) return signalExitCode(interrupted);
  return final.status === 'done' ? 0 : 1;
}

/**
 * The body of `polly resume` (see the module doc): follow `wanted`, or every resumable plan, to its end.
 * @returns the highest exit code of the plans followed (0 when there is nothing to resume).
 */
async function resumePlans(wanted: string | undefined, flags: { yes: boolean; json: boolean; detach: boolean }, io: CommandIO): Promise<number> {
  const ctx = await openRepoContext(io.cwd, io.env);
  const dead = await reconcileDeadBrain(ctx.store);
  if (dead !== null) io.stderr.write(`[polly] the Brain (pid ${dead}) is gone; its work resumes\n`);
  const reg = await ctx.store.read();
  const unfinished = resumablePlans(reg);
  const plans = wanted ? [reg.plans[wanted]].filter((p) => p !== undefined) : [...unfinished, ...prWaitingPlans(reg).filter((p) => !unfinished.includes(p))];
  if (wanted && plans.length === 0) throw new PollyError('not_found', `polly resume: no plan ${wanted}. List plans with polly plan list.`, { details: { plan: wanted } });
  if (plans.length === 0) {
    if (flags.json) writeJson(io.stdout, { resumed: [] });
    else writeLine(io.stdout, 'nothing to resume: no approved plan has unfinished tasks or waiting PR events');
    for (const l of retryHints(reg, undefined, parkCauses(await ctx.store.journal()))) io.stderr.write(`${l}\n`);
    return 0;
  }
  let code = 0;
  for (const plan of plans) {
    if (!plan.goalId) continue;
    io.stderr.write(`[polly] resuming plan ${plan.id} (goal ${plan.goalId})\n`);
    code = Math.max(code, await followExisting(ctx, plan.id, plan.goalId, flags.yes, flags.json, flags.detach, io));
  }
  return code;
}

export const command: Command = {
  summary: 'resume a plan after the Brain stopped or crashed',
  usage: `Usage: polly resume [PLAN-ID] [--yes] [--json] [--detach] [--script FILE]

Start the Brain again (unless one runs) and follow a plan's existing tasks to the end. Workers
that still run are adopted, open work orders are claimed again (never repeated), and no task
gets a second PR. Without PLAN-ID: every approved plan with unfinished tasks, or with review
feedback, failing checks or conflicts on its ready PRs that another goal's Brain left waiting
(a Brain acts only on its own goals' PRs; polly status names them); those fix rounds run now.
"polly run" on the same plan file does the same.

  --yes     approve the plan if it still waits at the plan gate
  --json    print {plan, goal, status, tasks} as JSON
  --detach  return once the Brain runs
  --script FILE  answer every model call from this model script, as "polly try" does (no API
            key): go on after Ctrl-C during "polly try"; not with --detach

A task that failed is not run again by resume: each one is named on stderr with the
command that retries it in its worktree (polly retry TASK-ID).

Exit codes: 0 every task ready (or nothing to resume); 1 a task failed; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'resume',
      argv,
      { yes: { type: 'boolean' }, json: { type: 'boolean' }, detach: { type: 'boolean' }, script: { type: 'string' } },
      1,
    );
    const flags = { yes: Boolean(values.yes), json: Boolean(values.json), detach: Boolean(values.detach) };
    if (values.script === undefined) return resumePlans(positionals[0], flags, io);
    if (flags.detach)
      throw new PollyError('bad_input', 'polly resume: --detach cannot be used with --script: the scripted models are set up for the length of the command only. Drop --detach.');
    return withScriptedModels('resume', values.script, io, (scripted) => resumePlans(positionals[0], flags, scripted));
  },
};
