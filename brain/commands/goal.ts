/**
 * `polly goal "TEXT" [--yes] [--json] [--detach]`: state a goal. The Brain (started when none
 * runs) investigates, proposes a plan that must pass the checker, waits at the plan gate, then
 * runs the tasks to pull requests. Polly never merges.
 */
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { createGoal } from '../registry/goal-record.js';
import { followGoalInRepo, formatSummary, goalSummary, signalExitCode } from './follow-goal.js';
import { ensureBrain } from '../process/daemon.js';
import { openRepoContext } from './repo-context.js';

export const command: Command = {
  summary: 'state a goal: the Brain investigates and proposes a plan',
  usage: `Usage: polly goal "TEXT" [--yes] [--json] [--detach]

The Brain (an LLM session that never writes business code) investigates the repository,
possibly with read-only explore/search workers, and proposes a plan. Polly model-checks the
plan: a plan whose workflow could merge, force-push, open a PR before green tests or a clean
review, or review with the implementer's vendor is REFUSED and the Brain revises it. An
admitted plan waits at the plan gate: you are asked in a terminal, --yes approves, otherwise
"polly plan approve ID". Then Claude Code / Codex / pi workers run in their own worktrees until
their checks are green, another vendor reviews each diff, and Polly opens one PR per task.

  --yes     approve the admitted plan without asking
  --json    print the summary as JSON
  --detach  return at once with the goal id (follow with polly status)

The Brain uses Claude (config brain.model). With the scripted model server it needs no key.
Exit codes: 0 every task ready; 1 refused/rejected/failed; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('goal', argv, { yes: { type: 'boolean' }, json: { type: 'boolean' }, detach: { type: 'boolean' } }, 1);
    const text = positionals[0]?.trim();
    if (!text) throw new PollyError('bad_input', 'polly goal: state the goal in quotes, e.g. polly goal "add a median() helper with tests".');
    const ctx = await openRepoContext(io.cwd, io.env);
    const { goal, seq } = await createGoal(ctx.store, text, 'llm');
    const brain = await ensureBrain(ctx.store, ctx.repo.root, ctx.repo.pollyDir, io.env);
    io.stderr.write(`[polly] goal ${goal.id}: ${text}\n[polly] Brain ${brain.started ? 'started' : 'running'} (pid ${brain.pid}); log in .polly/brain.log\n`);
    if (values.detach) {
      if (values.json) writeJson(io.stdout, { goal: goal.id, brainPid: brain.pid });
      else writeLine(io.stdout, goal.id);
      return 0;
    }
    const { goal: final, interrupted } = await followGoalInRepo(ctx, io, { goalId: goal.id, afterSeq: seq, yes: Boolean(values.yes), brain });
    const reg = await ctx.store.read();
    const journal = await ctx.store.journal();
    const rows = goalSummary(reg, goal.id, journal);
    const plans = final.planIds.map((id) => reg.plans[id]).filter(Boolean);
    if (values.json)
      writeJson(io.stdout, {
        goal: final.id,
        status: final.status,
        plans: plans.map((p) => ({ id: p!.id, gate: p!.gate, line: p!.admission?.line })),
        tasks: rows,
        report: final.brainReport ?? null,
      });
    else {
      for (const p of plans) writeLine(io.stdout, `${p!.id}: ${p!.admission?.line ?? ''} [${p!.gate}]`);
      if (rows.length === 0) {
        // The progress stream (stderr) already printed goal.done with its reason: say it once.
        const done = journal.filter((e) => e.kind === 'goal.done' && e.data.goalId === final.id).pop();
        const said = done !== undefined && done.data.reason === final.brainReport;
        writeLine(io.stdout, `goal ${final.id}: ${final.status}${final.brainReport && !said ? ` — ${final.brainReport}` : ''}`);
      } else {
        writeLine(io.stdout);
        for (const l of formatSummary(rows)) writeLine(io.stdout, l);
      }
    }
    if (interrupted) return signalExitCode(interrupted);
    return final.status === 'done' ? 0 : 1;
  },
};
