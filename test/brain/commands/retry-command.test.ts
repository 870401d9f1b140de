/**
 * `polly retry … --yes` approves only a retry plan that retries exactly the tasks named (issue 26
 * item 7): a pending retry plan that also covers other tasks is refused, named with what it
 * covers, and stays pending. Real git, the built CLI, a registry as the Brain writes it.
 */
import { describe, expect, it } from 'vitest';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import { proposePlan, proposeValidPlan } from '../../../brain/plan/plan-gate.js';
import { pendingRetry, retryPlan } from '../../../brain/plan/plan-retry.js';
import { createGoal } from '../../../brain/registry/goal-record.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';
import { makeTask, NPM_TEST_PROJECT } from '../../helpers/worker-tools.js';

describe('polly retry with a retry plan already pending', () => {
  it('--yes approves nothing when the pending plan retries other tasks too; it names the plan and what it covers', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const ctx = await openRepoContext(repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'a and b', 'plan');
    const spec = (key: string) => ({
      key,
      purpose: 'implement',
      title: `Task ${key}`,
      worker: 'pi',
      reviewer: 'codex',
      prompt: `Do ${key}.`,
      acceptance: { commands: ['npm test'], criteria: [`${key} works`] },
    });
    const first = await proposePlan(ctx.store, ctx.config, { goal: 'a and b', tasks: [spec('a'), spec('b')] }, { goalId: goal.id });
    const ids = ['a', 'b'].map((k) => `${first.planId}-${k}`);
    await ctx.store.update((d) => {
      d.plans[first.planId]!.gate = 'approved';
      for (const id of ids) d.tasks[id] = makeTask(id, 'pi', { planId: first.planId, status: 'failed', statusReason: 'acceptance red after 3 attempts' });
    });
    // A retry of both tasks, proposed and waiting at the gate.
    const both = retryPlan(await ctx.store.read(), ids);
    const { goal: retryGoal } = await createGoal(ctx.store, both.plan.goal!, 'plan');
    const proposed = await proposeValidPlan(ctx.store, ctx.config, both.plan, { goalId: retryGoal.id, retries: both.retries });
    expect((await ctx.store.read()).plans[proposed.planId]?.gate).toBe('pending');

    const one = runCli(['retry', ids[0]!, '--yes'], repo.dir);
    expect(one.code, one.stderr).toBe(1);
    expect(one.stderr).toContain(`plan ${proposed.planId} is pending at the plan gate and retries ${ids.join(', ')}, not exactly ${ids[0]}; nothing was approved`);
    expect(one.stderr).toContain(`polly plan approve ${proposed.planId}`);
    const after = await ctx.store.read();
    expect(after.plans[proposed.planId]?.gate).toBe('pending');
    expect(Object.keys(after.plans)).toHaveLength(2); // no second retry plan either
    expect(after.tasks[ids[0]!]?.planId).toBe(first.planId);

    // The exact set is the one followed; an unrelated task is not touched by it.
    expect(pendingRetry(after, ids)?.follow.id).toBe(proposed.planId);
    expect(pendingRetry(after, [...ids].reverse())?.follow.id).toBe(proposed.planId);
    expect(pendingRetry(after, ['p9-z'])).toBeNull();
  }, 60_000);
});
