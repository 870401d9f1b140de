/**
 * A repository's Polly state with something of each kind that waits for a human, for the dashboard's
 * browser tests: a plan at the gate, and an approved plan whose tasks stopped or finished as a run
 * leaves them — one parked for its budget (the journal's `budget.reached` + `task.parked`, as
 * brain/task-tools/turn-budget.ts `parkForBudget` writes them), one failed with red checks (a reason
 * ending in its fix, after three acceptance runs), one whose PR is ready for a human to merge (a local forge PR opened on a real
 * pushed branch). Written through the real plan gate and registry store, with the lifecycle's own
 * transitions; no agent runs (the e2e tests run agents: test/e2e/budget-retry.test.ts).
 */
import type { RepoContext } from '../../brain/registry/repo-context.js';
import { createLocalForge } from '../../brain/forge/local-forge.js';
import { decidePlan, proposePlan } from '../../brain/plan/plan-gate.js';
import { createGoal } from '../../brain/registry/goal-record.js';
import { planTaskRecord } from '../../brain/process/brain-process.js';
import { transitionTask } from '../../brain/registry/task-lifecycle.js';
import { recordChecks } from '../../brain/registry/task-record.js';
import { budgetReason } from '../../brain/task-tools/turn-budget.js';
import type { TestRepo } from './git-repo.js';

/** A plan task as a plan file writes it (pi implements, codex reviews). */
export const uiTask = (key: string, title = `Task ${key}`) => ({
  key,
  title,
  purpose: 'implement',
  worker: 'pi',
  reviewer: 'codex',
  prompt: `Do ${key}.`,
  acceptance: { commands: ['npm test'], criteria: ['covered by a test'] },
});

/** The ids of {@link needsYouState}'s plans and tasks. */
export interface NeedsYouState {
  /** The plan waiting at the gate. */
  pending: string;
  /** The approved plan holding the three tasks. */
  approved: string;
  parked: string;
  failed: string;
  ready: string;
  /** The ready task's local PR number. */
  pr: number;
}

/**
 * Build {@link NeedsYouState} in `repo` (a test repository with an `origin`, `polly init` done).
 * The parked task ran under a 2,000-token budget and spent 2,600.
 */
export async function needsYouState(ctx: RepoContext, repo: TestRepo): Promise<NeedsYouState> {
  const exportGoal = (await createGoal(ctx.store, 'Add a CSV export of the report', 'plan')).goal;
  const waiting = await proposePlan(ctx.store, ctx.config, { goal: exportGoal.text, tasks: [uiTask('export', 'Add a CSV export of the report')] }, { goalId: exportGoal.id });
  const statsGoal = (await createGoal(ctx.store, 'Harden the stats library: median(), mean() of an empty list, API docs', 'plan')).goal;
  const run = await proposePlan(
    ctx.store,
    ctx.config,
    {
      goal: statsGoal.text,
      tasks: [uiTask('median', 'Add median() with tests'), uiTask('mean', 'Fix mean() of an empty list'), uiTask('docs', 'Document the stats API')],
    },
    { goalId: statsGoal.id },
  );
  if (!waiting.admitted || !run.admitted) throw new Error(`the fixture's plans were refused: ${waiting.line} / ${run.line}`);
  await decidePlan(ctx.store, ctx.config, run.planId, 'approve', { by: 'human:tester (polly plan approve)' });

  // The ready task's branch and its local PR, as push + open_draft_pr + mark_ready leave them.
  const readyId = `${run.planId}-docs`;
  repo.git(['checkout', '-q', '-b', `polly/${readyId}`]);
  repo.write('docs/stats.md', '# stats\n\nsum(), mean(), median().\n');
  repo.commitAll('Document the stats API');
  repo.git(['push', '-q', 'origin', `polly/${readyId}`]);
  repo.git(['checkout', '-q', 'main']);
  const forge = createLocalForge({ repoRoot: ctx.repo.root, store: ctx.store });
  const pr = await forge.openDraftPullRequest({
    head: `polly/${readyId}`,
    base: 'main',
    title: 'Document the stats API',
    body: '## What\n\nDocuments `sum()`, `mean()` and `median()`.\n\n- [x] tests green\n- reviewed by **codex**\n\n<script>alert(1)</script>\n',
  });
  await forge.markReady(pr.number);

  const at = new Date().toISOString();
  await ctx.store.update((draft, tx) => {
    const plan = draft.plans[run.planId]!;
    for (const spec of plan.tasks) {
      const t = planTaskRecord(plan, spec, ctx.config, at);
      draft.tasks[t.id] = t;
      transitionTask(t, 'running', { at });
      t.startedAt = at;
      t.worktree = `${ctx.repo.root}/.worktrees/${t.id}`;
      t.branch = `polly/${t.id}`;
      t.baseBranch = 'main';
      if (spec.key === 'median') {
        const stop = { scope: 'task' as const, goalId: null, budget: { tokens: 2000 }, reach: { kind: 'tokens' as const, limit: 2000, spent: 2600 } };
        t.budget = { tokens: 2000 };
        t.attempts = 2;
        t.checks = [{ command: 'npm test', exitCode: 1, timedOut: false, durationMs: 1830, output: 'FAIL test/stats.test.js\n  median() is not a function\n' }];
        const reason = budgetReason(stop, { taskId: t.id });
        transitionTask(t, 'parked', { reason, at });
        tx.emit('budget.reached', { taskId: t.id, goalId: null, scope: 'task', kind: 'tokens', limit: 2000, spent: 2600, orderId: `order-${t.id}`, workerId: null });
        tx.emit('task.parked', { taskId: t.id, reason, backupRef: null, worktree: t.worktree, budget: true });
      } else if (spec.key === 'mean') {
        // Three acceptance runs, as run_acceptance records them: every one is kept and shown.
        const runAt = (n: number) => new Date(Date.parse(at) - (3 - n) * 60_000).toISOString();
        t.attempts = 1;
        recordChecks(t, [{ command: 'npm test', exitCode: 1, timedOut: false, durationMs: 1950, output: 'FAIL test/stats.test.js\n  mean is not defined\n' }], runAt(1));
        t.attempts = 2;
        recordChecks(t, [{ command: 'npm test', exitCode: null, timedOut: true, durationMs: 120_000, output: 'RUNS test/stats.test.js\n' }], runAt(2));
        t.attempts = 3;
        recordChecks(
          t,
          [{ command: 'npm test', exitCode: 1, timedOut: false, durationMs: 2140, output: 'FAIL test/stats.test.js\n  mean() of [] is NaN, expected 0\n' }],
          runAt(3),
        );
        transitionTask(t, 'failed', {
          reason: `acceptance red after 3 attempts: npm test exited 1 (mean() of [] is NaN, expected 0). Fix: change the code on polly/${t.id}, then polly retry ${t.id}`,
          at,
          finished: true,
        });
        tx.emit('task.failed', { taskId: t.id, status: 'failed', reason: t.statusReason });
      } else {
        t.pr = { forge: 'local', number: pr.number, url: `local:${pr.number}`, state: 'ready' };
        transitionTask(t, 'ready', { at, finished: true });
        tx.emit('task.pr_ready', { taskId: t.id, number: pr.number, url: `local:${pr.number}` });
      }
    }
  });
  return { pending: waiting.planId, approved: run.planId, parked: `${run.planId}-median`, failed: `${run.planId}-mean`, ready: readyId, pr: pr.number };
}
