/**
 * `polly goal "TEXT" [--yes] [--json] [--detach]`: state a goal. The Brain (started when none
 * runs) investigates, proposes a plan that must pass the checker, waits at the plan gate, then
 * runs the tasks to pull requests. Polly never merges.
 *
 * `polly goal --issue N`: the goal is issue N of the repository's tracker (GitHub's issues, or the
 * local forge's: `polly issue add`), taken in by hand (brain/forge/issue-intake.ts): its title and
 * body quoted as data, the goal linked to the issue, the plan posted on it and answerable there.
 */
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { createGoal } from '../registry/goal-record.js';
import { followGoalInRepo, formatSummary, goalSummary, signalExitCode } from './follow-goal.js';
import { ensureBrain } from '../process/daemon.js';
import { openRepoContext } from '../registry/repo-context.js';
import { openForge } from '../forge/forge-select.js';
import { takeIssueIn } from '../forge/issue-intake.js';
import type { GoalRecord } from '../registry/registry-schema.js';

export const command: Command = {
  summary: 'state a goal: the Brain investigates and proposes a plan',
  usage: `Usage: polly goal "TEXT" [--yes] [--json] [--detach]
       polly goal --issue N [--yes] [--json] [--detach]

The Brain (an LLM session that never writes business code) investigates the repository,
possibly with read-only explore/search workers, and proposes a plan. Polly model-checks the
plan: a plan whose workflow could merge, force-push, open a PR before green tests or a clean
review, or review with the implementer's vendor is REFUSED and the Brain revises it. An
admitted plan waits at the plan gate: you are asked in a terminal, --yes approves, otherwise
"polly plan approve ID". Then Claude Code / Codex / pi workers run in their own worktrees until
their checks are green, another vendor reviews each diff, and Polly opens one PR per task.

  --issue N the goal is issue N (GitHub's, or the local forge's: polly issue add): its title
            and body quoted as data; the plan is posted on the issue, where a maintainer's
            "/polly approve" comment answers it as the terminal does (the first answer wins),
            and each PR says Fixes #N
  --yes     approve the admitted plan without asking
  --json    print the summary as JSON
  --detach  return at once with the goal id (follow with polly status)

The Brain uses Claude (config brain.model). With the scripted model server it needs no key.
Exit codes: 0 every task ready; 1 refused/rejected/failed; 2 bad input.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'goal',
      argv,
      { yes: { type: 'boolean' }, json: { type: 'boolean' }, detach: { type: 'boolean' }, issue: { type: 'string' } },
      1,
    );
    let text = positionals[0]?.trim();
    if (values.issue !== undefined && text)
      throw new PollyError('bad_input', 'polly goal: give either the goal in quotes or --issue N, not both.', { details: { flag: '--issue' } });
    if (values.issue === undefined && !text)
      throw new PollyError('bad_input', 'polly goal: state the goal in quotes, e.g. polly goal "add a median() helper with tests", or name an issue with --issue N.');
    const ctx = await openRepoContext(io.cwd, io.env);
    let created: { goal: GoalRecord; seq: number };
    if (values.issue !== undefined) {
      const number = Number(values.issue.replace(/^#/, ''));
      if (!Number.isInteger(number) || number < 1)
        throw new PollyError('bad_input', `polly goal --issue: ${JSON.stringify(values.issue)} is not an issue number (e.g. --issue 12).`, { details: { flag: '--issue' } });
      const { issues } = await openForge({ repoRoot: ctx.repo.root, config: ctx.config, store: ctx.store, env: io.env });
      const issue = await issues.getIssue(number);
      if (issue.state !== 'open') throw new PollyError('conflict', `issue #${number} is closed; reopen it first or state the goal in quotes.`, { details: { number } });
      const taken = await takeIssueIn(ctx.store, issue, { forge: issues.kind, via: 'hand', labelledBy: [] });
      if (!taken.created) {
        throw new PollyError('conflict', `issue #${number} is goal ${taken.goal.id} already (${taken.goal.status}). Follow it with polly status, or wait until it is done.`, {
          details: { number, goalId: taken.goal.id },
        });
      }
      created = taken;
      text = `issue #${number}: ${issue.title}`;
    } else {
      created = await createGoal(ctx.store, text!, 'llm');
    }
    const { goal, seq } = created;
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
