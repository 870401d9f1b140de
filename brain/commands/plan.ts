/**
 * `polly plan list|show|approve|reject [ID] [--json]`: the human side of the plan gate.
 */
import { brainAfterApproval } from '../process/daemon.js';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { decidePlan, expirePlanAsks, unboundedLine } from '../plan/plan-gate.js';
import { openRepoContext } from '../registry/repo-context.js';
import type { PlanRecord } from '../registry/registry-schema.js';
import { formatTable } from './table.js';
import { compareIds } from '../registry/status-report.js';
import { formatBudget, taskBudget } from '../plan/budgets.js';

type PlanView = PlanRecord & { counterexamples?: string[]; batches?: Record<string, number> };

/** `budgets: per task $0.50; per goal 200000 tokens` — what approving the plan allows it to spend. */
export function budgetLine(plan: Pick<PlanRecord, 'budgets'>): string {
  if (!plan.budgets) return 'budgets: none (recorded before budgets existed)';
  return `budgets: per task ${formatBudget(plan.budgets.perTask)} (a task's own wins); per goal ${formatBudget(plan.budgets.perGoal)}`;
}

/** Human-readable lines for one plan: verdict, gate, budgets, tasks, and counterexamples when refused. */
export function formatPlan(plan: PlanView): string[] {
  const out = [`Plan ${plan.id}${plan.goalId ? ` (goal ${plan.goalId})` : ''}`, `  ${plan.admission?.line ?? 'not checked'}`];
  out.push(
    `  gate: ${plan.gate}${plan.decidedBy ? ` (by ${plan.decidedBy} at ${plan.decidedAt})` : plan.gate === 'pending' ? ` since ${plan.askedAt} — approve with: polly plan approve ${plan.id}` : ''}`,
  );
  // The budgets the human approves with the plan (brain/plan/budgets.ts).
  out.push(`  ${budgetLine(plan)}`);
  out.push(
    '',
    ...formatTable(
      [
        { header: 'KEY', value: (t: PlanRecord['tasks'][number]) => t.key },
        { header: 'PURPOSE', value: (t) => t.purpose },
        { header: 'WORKER', value: (t) => t.worker },
        { header: 'REVIEWER', value: (t) => t.reviewer },
        { header: 'DEPENDS', value: (t) => t.dependsOn.join(',') },
        { header: 'BUDGET', value: (t) => formatBudget(taskBudget(t.budget, plan.budgets)) },
        { header: 'TITLE', value: (t) => t.title, max: 50 },
      ],
      plan.tasks,
    ).map((l) => `  ${l}`),
  );
  for (const t of plan.tasks) {
    if (t.acceptance.commands.length || t.acceptance.criteria.length) {
      out.push('', `  ${t.key} acceptance: ${[...t.acceptance.commands.map((c) => `$ ${c}`), ...t.acceptance.criteria].join(' · ')}`);
    }
    if (t.paths) out.push('', `  ${t.key} paths: ${t.paths.join(', ')}`);
    if (t.protectedPaths?.length) out.push('', `  ${t.key} MAY CHANGE PROTECTED PATHS (Polly's config, CI, hooks, code owners): ${t.protectedPaths.join(', ')}`);
  }
  const unbounded = unboundedLine(plan);
  if (unbounded) out.push('', `  ${unbounded}`);
  if (plan.counterexamples?.length) out.push('', '  Violations (shortest counterexamples):', ...plan.counterexamples.flatMap((c) => c.split('\n').map((l) => `    ${l}`)));
  return out;
}

export const command: Command = {
  summary: 'show, approve or reject a proposed plan',
  usage: `Usage: polly plan list [--json]
       polly plan show ID [--json]
       polly plan approve ID [--json]
       polly plan reject ID [--json]

The plan gate. A plan proposed by the Brain (or by "polly run") is model-checked first; an
admitted plan waits here for a human. Nothing is dispatched for implementation before it is
approved. An ask expires after policies.ask_timeout seconds (default 86400) and then counts as
rejected.

Exit codes: 0 ok; 1 unknown plan or a plan that is not waiting (refused, decided, expired);
2 bad arguments.`,
  async run(argv, io) {
    const args = parseCommandArgs('plan', argv, { json: { type: 'boolean' } }, 2);
    const [verb, id] = args.positionals;
    const ctx = await openRepoContext(io.cwd, io.env);
    await expirePlanAsks(ctx.store, ctx.config);
    if (verb === 'list' || verb === undefined) {
      const plans = Object.values((await ctx.store.read()).plans).sort((a, b) => compareIds(a.id, b.id));
      if (args.values.json) writeJson(io.stdout, { plans });
      else if (plans.length === 0) writeLine(io.stdout, 'No plans yet.');
      else
        for (const l of formatTable(
          [
            { header: 'ID', value: (p: PlanRecord) => p.id },
            { header: 'GOAL', value: (p) => p.goalId },
            { header: 'ADMITTED', value: (p) => (p.admission ? (p.admission.admitted ? 'yes' : 'REFUSED') : '-') },
            { header: 'GATE', value: (p) => p.gate },
            { header: 'TASKS', value: (p) => p.tasks.length },
          ],
          plans,
        ))
          writeLine(io.stdout, l);
      return 0;
    }
    if (!['show', 'approve', 'reject'].includes(verb)) {
      throw new PollyError('bad_input', `polly plan: unknown action ${JSON.stringify(verb)}; use list, show, approve or reject.`, { details: { action: verb } });
    }
    if (!id) throw new PollyError('bad_input', `polly plan ${verb}: which plan? Give its id (see "polly plan list").`);
    if (verb === 'show') {
      const plan = (await ctx.store.read()).plans[id] as PlanView | undefined;
      if (!plan) throw new PollyError('not_found', `no plan "${id}". Run "polly plan list".`, { details: { planId: id } });
      if (args.values.json) writeJson(io.stdout, { plan });
      else for (const l of formatPlan(plan)) writeLine(io.stdout, l);
      return 0;
    }
    const plan = await decidePlan(ctx.store, ctx.config, id, verb as 'approve' | 'reject', { by: `human:${io.env.USER ?? 'unknown'} (polly plan ${verb})` });
    if (args.values.json) writeJson(io.stdout, { plan });
    else writeLine(io.stdout, `plan ${plan.id}: ${plan.gate}`);
    // Approved with no Brain running: one starts when config brain.start_on_approve says so;
    // otherwise nothing moves until polly resume starts one (brain/registry/brain-health.ts).
    if (plan.gate === 'approved') {
      const brain = await brainAfterApproval(ctx.store, ctx.config, ctx.repo.root, ctx.repo.pollyDir, io.env);
      if (brain.state === 'started')
        io.stderr.write(`[polly] no Brain ran: started one (pid ${brain.pid}, brain.start_on_approve) to run plan ${plan.id}; follow with polly status\n`);
      else if (brain.state === 'none') io.stderr.write(`[polly] no Brain runs: nothing of plan ${plan.id} runs until polly resume ${plan.id} starts one\n`);
    }
    return 0;
  },
};
