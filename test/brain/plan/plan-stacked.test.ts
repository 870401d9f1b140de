/**
 * Plan key `stacked_on` (issue 29 item 3, docs/landing-order.md): a stacked task depends on its
 * parent, starts from the parent's branch and its PR targets it; bad values are refused naming the
 * field and what to do. Real git for the worktree: a temp repository with a bare origin and the
 * real worktree manager (ensureWorktree, as dispatch runs it).
 */
import { describe, expect, test } from 'vitest';
import { parsePlanFile } from '../../../brain/plan/plan-schema.js';
import { planTaskRecord } from '../../../brain/process/brain-process.js';
import type { PlanRecord } from '../../../brain/registry/registry-schema.js';
import { ensureWorktree } from '../../../brain/task-tools/dispatch.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { git } from '../../helpers/git-repo.js';
import type { TaskToolContext } from '../../../brain/task-tools/types.js';

const task = (key: string, extra = '') => `
  - key: ${key}
    title: Task ${key}
    purpose: implement
    worker: claude-code
    reviewer: codex
    prompt: Do ${key}.
    acceptance: { commands: ["true"] }${extra}`;

describe('stacked_on', () => {
  test('implies depends_on, and the task record starts from the parent branch', () => {
    const plan = parsePlanFile(`tasks:${task('api')}${task('users', '\n    stacked_on: api')}`, 'plan.yaml');
    expect(plan.tasks[1]).toMatchObject({ key: 'users', stackedOn: 'api', dependsOn: ['api'] });
    const at = new Date().toISOString();
    const record: PlanRecord = { id: 'p7', goalId: null, createdAt: at, tasks: plan.tasks, admission: null, gate: 'approved', askedAt: null, decidedAt: at, decidedBy: 'test' };
    const users = planTaskRecord(record, plan.tasks[1]!, testConfig(null), at);
    expect(users).toMatchObject({ id: 'p7-users', stackedOn: 'p7-api', baseBranch: 'polly/p7-api', dependsOn: ['p7-api'] });
    expect(planTaskRecord(record, plan.tasks[0]!, testConfig(null), at).stackedOn).toBeUndefined();
  });

  test.each([
    [`${task('a')}${task('b', '\n    stacked_on: c')}`, 'tasks[1].stacked_on: unknown task "c"; known: a, b'],
    [`${task('a', '\n    stacked_on: a')}`, 'tasks[0].stacked_on: task "a" cannot be stacked on itself'],
    [`${task('a')}${task('b', '\n    stacked_on: a\n    base: release/1.x')}`, `tasks[1].stacked_on: a stacked task's base is the branch of "a"; leave base out`],
    [
      `${task('a').replace('purpose: implement', 'purpose: explore').replace('reviewer: codex', 'reviewer: null').replace('acceptance: { commands: ["true"] }', 'acceptance: {}')}${task('b', '\n    stacked_on: a')}`,
      'tasks[1].stacked_on: only an implement task can be stacked, and only on an implement task',
    ],
  ])('refuses a bad stacked_on (%#)', (yaml, message) => {
    expect(() => parsePlanFile(`tasks:${yaml}`, 'plan.yaml')).toThrow(message);
  });

  test("dispatch creates the stacked task's worktree from its parent's pushed branch", async () => {
    const s = createPrStepSetting({ 'a.txt': 'a\n' });
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const parent = await createGreenTask(s, 'px-api', { 'b.txt': 'b\n' });
    expect((await runner.run(createPushTool(), 'px-api', 'push')).outcome).toBe('ok');
    // The stacked task's record as the Brain makes it on approval.
    const plan = parsePlanFile(`tasks:${task('api')}${task('users', '\n    stacked_on: api')}`, 'plan.yaml');
    const at = new Date().toISOString();
    const record: PlanRecord = { id: 'px', goalId: null, createdAt: at, tasks: plan.tasks, admission: null, gate: 'approved', askedAt: null, decidedAt: at, decidedBy: 'test' };
    const users = planTaskRecord(record, plan.tasks[1]!, testConfig(null), at);
    await s.store.update((draft) => {
      draft.tasks[users.id] = users;
    });
    const ctx = {
      repoRoot: s.repo.dir,
      store: s.store,
      config: testConfig(null),
      task: users,
      worktrees: s.worktrees,
      order: { id: 'o1', kind: 'tool', tool: 'dispatch_task', attempt: 1 },
      progress: () => {},
      clock: () => new Date(),
    } as unknown as TaskToolContext;
    const { task: child } = await ensureWorktree(ctx);
    expect(child).toMatchObject({ branch: 'polly/px-users', baseBranch: 'polly/px-api', baseCommit: parent.headCommit });
    expect(git(child.worktree!, ['show', 'HEAD:b.txt'])).toBe('b');
  }, 60_000);
});
