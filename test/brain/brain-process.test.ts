/**
 * The Brain process's own rules, with the real registry store, runtime, plan library, worktree
 * manager, worker supervisor and local forge, and in-memory task tools (the tools are an interface:
 * here they record each order and finish when the test releases them; the real tools are covered
 * by the worker, PR-step and end-to-end suites).
 *
 * - nothing is dispatched before the plan gate approves;
 * - a plan of 7 tasks dispatches 5 in the first turn and the other 2 only after a task finished;
 * - an expired ask (injected clock) is rejected and nothing is dispatched;
 * - cancelling a task stops it and keeps its work in a backup ref;
 * - a second Brain for the same repository is refused, naming the first one's pid.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../brain/config/config-schema.js';
import { createBrainDeps } from '../../brain/process/brain-deps.js';
import { claimBrain, runBrainProcess } from '../../brain/process/brain-process.js';
import { createBrainTools } from '../../brain/mcp/brain-tools.js';
import { createGoal } from '../../brain/registry/goal-record.js';
import { decidePlan, proposePlan } from '../../brain/plan/plan-gate.js';
import { openRepoContext } from '../../brain/commands/repo-context.js';
import type { Registry } from '../../brain/registry/registry-schema.js';
import type { TaskTool, TaskToolOutcome } from '../../brain/task-tools/types.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

interface Harness {
  repo: TestRepo;
  calls: Array<{ task: string; tool: string; order: string }>;
  /** Release every pending `dispatch` of these tasks (the worker "finishes"). */
  release(tasks?: string[]): void;
  pending(): string[];
  stop(): Promise<void>;
  started: Promise<void>;
  registry(): Promise<Registry>;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

const task = (key: string) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker: 'claude-code',
  reviewer: 'codex',
  prompt: 'change something',
  acceptance: { commands: ['true'], criteria: [] },
});

/** A repo with Polly initialised and a Brain process running with recording tools. */
async function startBrain(options: { clock?: () => Date; config?: Partial<PollyConfig> } = {}): Promise<Harness> {
  const repo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  const ctx = await openRepoContext(repo.dir, gitTestEnv());
  const config = { ...ctx.config, ...options.config };
  const deps = await createBrainDeps({ ...ctx, config }, gitTestEnv(), () => {});
  const calls: Harness['calls'] = [];
  const waiting = new Map<string, (o: TaskToolOutcome) => void>();
  const recorder =
    (outcome: (taskId: string) => TaskToolOutcome | Promise<TaskToolOutcome>): TaskTool =>
    async (tctx) => {
      calls.push({ task: tctx.task.id, tool: tctx.order.tool, order: tctx.order.id });
      return outcome(tctx.task.id);
    };
  const tools: Record<string, TaskTool> = {
    dispatch: async (tctx) => {
      calls.push({ task: tctx.task.id, tool: 'dispatch', order: tctx.order.id });
      // A real worktree with uncommitted work, so that a cancel has something to keep.
      const wt = await tctx.worktrees.create({ id: tctx.task.id });
      await tctx.store.update((d) => {
        Object.assign(d.tasks[tctx.task.id]!, { worktree: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, baseCommit: wt.baseCommit });
      });
      writeFileSync(join(wt.path, `${tctx.task.id}.txt`), 'work in progress\n');
      return new Promise<TaskToolOutcome>((resolve) => waiting.set(tctx.task.id, resolve));
    },
    run_acceptance: recorder(() => ({ outcome: 'ok', note: 'green' })),
    push: recorder(() => ({ outcome: 'ok', note: 'pushed' })),
    open_draft_pr: recorder(() => ({ outcome: 'ok', data: { reviewer: 'codex' }, note: 'opened' })),
    dispatch_review: recorder(() => ({ outcome: 'ok', note: 'clean' })),
    mark_ready: recorder(() => ({ outcome: 'ok', note: 'ready' })),
  };
  const controller = new AbortController();
  let markStarted: () => void = () => {};
  const started = new Promise<void>((r) => (markStarted = r));
  const done = runBrainProcess({
    ...deps,
    tools,
    startGoalBrain: null,
    mergeWatchSeconds: 3600,
    signal: controller.signal,
    ...(options.clock ? { clock: options.clock } : {}),
    log: (l) => {
      if (l.includes('forge')) markStarted();
    },
  });
  // createBrainDeps logged the forge before runBrainProcess started; claimBrain is its first step.
  void (async () => {
    for (let i = 0; i < 200; i++) {
      if ((await ctx.store.read()).brain?.pid === process.pid) return markStarted();
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  const stop = async () => {
    for (const r of waiting.values()) r({ outcome: 'failure', permanent: true, note: 'test over' });
    controller.abort();
    await done.catch(() => {});
  };
  stops.push(stop);
  return {
    repo,
    calls,
    release(tasks) {
      for (const [id, resolve] of [...waiting.entries()]) {
        if (tasks && !tasks.includes(id)) continue;
        waiting.delete(id);
        resolve({ outcome: 'ok', note: 'worker finished' });
      }
    },
    pending: () => [...waiting.keys()].sort(),
    stop,
    started,
    registry: () => ctx.store.read(),
  };
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the Brain process', () => {
  it('dispatches nothing before approval, then a plan of 7 tasks as 5, then 2 after a task finished', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'seven things', 'plan');
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map(task) }, { goalId: goal.id });
    expect(plan.admitted).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.calls, 'dispatched before approval').toEqual([]);

    await decidePlan(ctx.store, ctx.config, plan.planId, 'approve');
    await until('5 dispatches', async () => h.pending().length === 5);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.pending()).toHaveLength(5);
    expect(h.calls.filter((c) => c.tool === 'dispatch')).toHaveLength(5);

    h.release([h.pending()[0]!]);
    await until('the other 2 dispatched', async () => h.calls.filter((c) => c.tool === 'dispatch').length === 7 && h.pending().length === 6);
    h.release();
    const reg = await until('all tasks ready', async () => {
      const r = await h.registry();
      return Object.values(r.tasks).every((t) => t.status === 'ready' && t.finishedAt) && r.goals[goal.id]?.status !== 'running' ? r : null;
    });
    expect(reg.goals[goal.id]?.status).toBe('done');
    // Each task's orders ran once each, in the polly-task order.
    for (const t of Object.keys(reg.tasks)) {
      expect(h.calls.filter((c) => c.task === t).map((c) => c.tool)).toEqual(['dispatch', 'run_acceptance', 'push', 'open_draft_pr', 'dispatch_review', 'mark_ready']);
    }
    // The journal shows at most 5 task.started before the first task finished.
    const journal = await ctx.store.journal();
    const firstFinish = journal.findIndex((e) => e.kind === 'task.finished');
    expect(journal.slice(0, firstFinish).filter((e) => e.kind === 'task.started')).toHaveLength(5);
  }, 120_000);

  it('an expired plan ask is rejected and nothing is dispatched', async () => {
    let now = new Date();
    const h = await startBrain({ clock: () => now });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'one thing', 'plan');
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: [task('a')] }, { goalId: goal.id, now: () => now });
    now = new Date(now.getTime() + (DEFAULT_CONFIG.policies.ask_timeout + 1) * 1000);
    await ctx.store.update((_d, tx) => tx.emit('test.tick', {})); // wake the Brain
    const reg = await until('the ask to expire', async () => {
      const r = await h.registry();
      return r.plans[plan.planId]?.gate === 'expired' ? r : null;
    });
    expect(reg.goals[goal.id]?.status).toBe('failed');
    await expect(decidePlan(ctx.store, ctx.config, plan.planId, 'approve', { now })).rejects.toThrow(/expired/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(h.calls).toEqual([]);
    expect(Object.keys((await h.registry()).tasks)).toEqual([]);
  }, 60_000);

  it('sys_cancel_task stops a running task and keeps its work in a backup ref', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'two things', 'plan');
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: [task('a'), task('b')] }, { goalId: goal.id });
    await decidePlan(ctx.store, ctx.config, plan.planId, 'approve');
    await until('both dispatched', async () => h.pending().length === 2);
    const tools = createBrainTools({ store: ctx.store, config: ctx.config, gateContext: { repoRoot: h.repo.dir, worktree: h.repo.dir, branch: 'main', defaultBranch: 'main', home: '/root' } });
    const cancel = tools.find((t) => t.name === 'sys_cancel_task')!;
    const id = `${plan.planId}-a`;
    expect((await cancel.handler({ task_id: id } as never)).structured).toMatchObject({ cancelled: true });
    const reg = await until('the cancel', async () => {
      const r = await h.registry();
      return r.tasks[id]?.status === 'cancelled' ? r : null;
    });
    const ref = reg.tasks[id]!.backupRefs.at(-1);
    expect(ref).toMatch(new RegExp(`^refs/polly/backup/${id}/`));
    expect(h.repo.git(['show', `${ref}:${id}.txt`])).toBe('work in progress');
    const journal = await ctx.store.journal();
    expect(journal.some((e) => e.kind === 'task.cancelled' && e.data.taskId === id && e.data.backupRef === ref)).toBe(true);
    // The other task goes on.
    h.release();
    await until('the other task ready', async () => (await h.registry()).tasks[`${plan.planId}-b`]?.status === 'ready');
  }, 90_000);

  it('refuses a second Brain for the same repository, naming the first one', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    await expect(claimBrain(ctx.store, () => new Date(), process.pid + 100_000)).rejects.toThrow(new RegExp(`a Brain already runs for this repository \\(pid ${process.pid}`));
  }, 60_000);
});
