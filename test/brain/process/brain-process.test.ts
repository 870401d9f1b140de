/**
 * The Brain process's own rules, with the real registry store, runtime, plan library, worktree
 * manager, worker supervisor and local forge, and in-memory task tools (the tools are an interface:
 * here they record each order and finish when the test releases them; the real tools are covered
 * by the worker, PR-step and end-to-end suites).
 *
 * - nothing is dispatched before the plan gate approves;
 * - a plan of 7 tasks dispatches 5 in the first turn and the other 2 only after a task finished;
 * - dependencies, a batch and a failed task skipping its dependants dispatch as the admitted
 *   schedule allows (the Brain runs it on the runtime);
 * - acceptance.max_attempts 1 and review.max_rounds 1 bound the run as they bound the checked model,
 *   and the failed task says why;
 * - every run of every test replays through its admitted workflow (the shared trace assertion,
 *   test/helpers/trace-conformance.ts); a corrupted journal step is a divergence: the Brain fails
 *   the task and journals run.trace_divergence, and `polly check --run` exits 1;
 * - an expired ask (injected clock) is rejected and nothing is dispatched;
 * - cancelling a task stops it and keeps its work in a backup ref;
 * - a second Brain for the same repository is refused, naming the first one's pid.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { createBrainDeps } from '../../../brain/process/brain-deps.js';
import { claimBrain, runBrainProcess } from '../../../brain/process/brain-process.js';
import { createBrainTools } from '../../../brain/mcp/brain-tools.js';
import { createGoal } from '../../../brain/registry/goal-record.js';
import { decidePlan, proposePlan } from '../../../brain/plan/plan-gate.js';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import type { Registry } from '../../../brain/registry/registry-schema.js';
import type { TaskTool, TaskToolOutcome } from '../../../brain/task-tools/types.js';
import { transitionTask } from '../../../brain/registry/task-lifecycle.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';
import { expectRunsConform } from '../../helpers/trace-conformance.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

interface Harness {
  repo: TestRepo;
  /** The config the Brain runs with (propose plans with it: the plan gate compiles with it). */
  config: PollyConfig;
  /** Fail every pending `dispatch` of these tasks (the worker "fails"). */
  fail(tasks: string[]): void;
  calls: Array<{ task: string; tool: string; order: string }>;
  /** Every `dispatch` with the task's worktree (null before its first) and prompt as the tool saw them. */
  dispatches: Array<{ task: string; worktree: string | null; prompt: string }>;
  /** Release every pending `dispatch` of these tasks (the worker "finishes"). */
  release(tasks?: string[]): void;
  pending(): string[];
  stop(): Promise<void>;
  started: Promise<void>;
  registry(): Promise<Registry>;
  /** One run's journal (run events live in the run store's journal, not in journal.jsonl). */
  runJournal(runId: string): Promise<Array<{ kind: string; data: Record<string, unknown> }>>;
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
async function startBrain(
  options: { clock?: () => Date; config?: Partial<PollyConfig>; tools?: Record<string, TaskTool>; conforming?: boolean; repo?: TestRepo } = {},
): Promise<Harness> {
  // A given repo is one a stopped Brain ran in (a restart); otherwise a fresh one, initialised.
  const repo = options.repo ?? createTestRepo();
  if (!options.repo) execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  const ctx = await openRepoContext(repo.dir, gitTestEnv());
  const config = { ...ctx.config, ...options.config };
  // The agents never start here (recording tools), but a fix round checks that its worker could:
  // Claude Code may run as root and has a (dummy) key; codex has none (OPENAI_API_KEY empty).
  config.workers = { ...config.workers, 'claude-code': { ...config.workers['claude-code'], allow_root_sandbox: true } };
  const deps = await createBrainDeps({ ...ctx, config }, { ...gitTestEnv(), ANTHROPIC_API_KEY: 'sk-ant-dummy', OPENAI_API_KEY: '' }, () => {});
  const calls: Harness['calls'] = [];
  const dispatches: Harness['dispatches'] = [];
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
      dispatches.push({ task: tctx.task.id, worktree: tctx.task.worktree, prompt: tctx.task.prompt });
      // A real worktree with uncommitted work, so that a cancel has something to keep; a task that
      // has one (a retry) keeps it, as the real dispatch tool does.
      if (tctx.task.worktree && existsSync(join(tctx.task.worktree, `${tctx.task.id}.txt`))) return new Promise<TaskToolOutcome>((resolve) => waiting.set(tctx.task.id, resolve));
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
    send_followup: recorder(() => ({ outcome: 'ok', note: 'fixed' })),
    dispatch_review: recorder(() => ({ outcome: 'ok', note: 'clean' })),
    mark_ready: recorder(() => ({ outcome: 'ok', note: 'ready' })),
  };
  for (const [name, tool] of Object.entries(options.tools ?? {}))
    tools[name] = async (tctx) => {
      calls.push({ task: tctx.task.id, tool: tctx.order.tool, order: tctx.order.id });
      return tool(tctx);
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
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const r of waiting.values()) r({ outcome: 'failure', permanent: true, note: 'test over' });
    controller.abort();
    await done.catch(() => {});
    // The shared trace assertion: every run replays through its admitted workflow.
    if (options.conforming !== false) await expectRunsConform(repo.dir);
  };
  stops.push(stop);
  return {
    repo,
    config,
    calls,
    dispatches,
    fail(tasks) {
      for (const id of tasks) {
        waiting.get(id)?.({ outcome: 'failure', permanent: true, note: 'dispatch: agent_exited: the worker crashed' });
        waiting.delete(id);
      }
    },
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
    // runs live in the run store (.polly/runs), the rest in registry.json: one view for the assertions
    runJournal: (runId: string) => deps.runtime.journal(runId),
    registry: async () => ({ ...(await ctx.store.read()), runs: Object.fromEntries((await deps.runtime.list({ allAreas: true })).map((r) => [r.id, r])) }),
  };
}

/**
 * `node <args>` without blocking this process's event loop, bounded at 60 s (then its process group
 * is killed): status, stdout and stderr.
 */
function nodeAsync(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, 60_000);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
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
  // Six tasks, one past the per-turn bound of 5: a seventh only made the plan's model check ~6x
  // larger (3.9 M paths against 660 k, checked at proposal).
  it('dispatches nothing before approval, then a plan of 6 tasks as 5, then the sixth after a task finished', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'six things', 'plan');
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: ['a', 'b', 'c', 'd', 'e', 'f'].map(task) }, { goalId: goal.id });
    expect(plan.admitted).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.calls, 'dispatched before approval').toEqual([]);

    await decidePlan(ctx.store, ctx.config, plan.planId, 'approve');
    // Allow for a loaded machine.
    await until('5 dispatches', async () => h.pending().length === 5, 150_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.pending()).toHaveLength(5);
    expect(h.calls.filter((c) => c.tool === 'dispatch')).toHaveLength(5);

    h.release([h.pending()[0]!]);
    await until('the sixth dispatched', async () => h.calls.filter((c) => c.tool === 'dispatch').length === 6 && h.pending().length === 5);
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
  }, 300_000);

  it('a restarted Brain runs no admission: it verifies the hashes recorded at proposal and journals them', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'two things', 'plan');
    const plan = await proposePlan(ctx.store, h.config, { tasks: ['a', 'b'].map(task) }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    await until('2 dispatches', async () => h.pending().length === 2);
    await h.stop();
    const again = await startBrain({ repo: h.repo });
    await again.started;
    const verified = await until('the restarted Brain took the plan in', async () => {
      const events = (await ctx.store.journal()).filter((e) => e.kind === 'plan.admission_verified');
      return events.length === 2 ? events : null;
    });
    const recorded = (await ctx.store.read()).plans[plan.planId]!.admission!.workflows!;
    expect(recorded).toHaveLength(3);
    for (const e of verified) expect(e.data).toEqual({ planId: plan.planId, verified: recorded.map((w) => ({ name: w.name, key: w.key })), checked: [] });
    expect((await ctx.store.journal()).filter((e) => e.kind === 'plan.admission_rechecked')).toEqual([]);
  });

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
      return r.plans[plan.planId]?.gate === 'expired' && ['done', 'failed', 'cancelled'].includes(r.goals[goal.id]?.status ?? '') ? r : null;
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
    const tools = createBrainTools({
      store: ctx.store,
      config: ctx.config,
      gateContext: { repoRoot: h.repo.dir, worktree: h.repo.dir, branch: 'main', defaultBranch: 'main', home: '/root' },
    });
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
  it('dispatches dependencies and a batch as the admitted schedule allows; a failed task skips its dependants', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'a chain and a batch', 'plan');
    const tasks = [task('a'), { ...task('b'), depends_on: ['a'] }, { ...task('c'), depends_on: ['b'] }, { ...task('d'), batch: 1 }, { ...task('e'), batch: 1 }, task('f')];
    const plan = await proposePlan(ctx.store, h.config, { tasks }, { goalId: goal.id });
    expect(plan.admitted).toBe(true);
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    const id = (k: string) => `${plan.planId}-${k}`;
    await until('a, d, e, f dispatched', async () => h.pending().length === 4);
    await new Promise((r) => setTimeout(r, 1000));
    expect(h.pending()).toEqual(['a', 'd', 'e', 'f'].map(id));
    h.fail([id('a')]);
    const reg = await until('b and c skipped', async () => {
      const r = await h.registry();
      return r.tasks[id('b')]?.status === 'cancelled' && r.tasks[id('c')]?.status === 'cancelled' ? r : null;
    });
    expect(reg.tasks[id('a')]).toMatchObject({ status: 'failed', statusReason: 'the worker failed: agent_exited: the worker crashed' });
    expect(reg.tasks[id('b')]!.statusReason).toBe(`skipped: it depends on ${id('a')}, which ended failed (the worker failed: agent_exited: the worker crashed)`);
    expect(reg.tasks[id('c')]!.statusReason).toMatch(new RegExp(`^skipped: it depends on ${id('b')}, which ended cancelled`));
    h.release();
    const end = await until('the goal to end', async () => {
      const r = await h.registry();
      return ['done', 'failed'].includes(r.goals[goal.id]?.status ?? '') ? r : null;
    });
    expect(end.goals[goal.id]?.status).toBe('failed');
    expect(new Set(h.calls.filter((c) => c.tool === 'dispatch').map((c) => c.task))).toEqual(new Set(['a', 'd', 'e', 'f'].map(id)));
    // The schedule run's steps: the plan gate's approval, the batch in one step with both orders, then a and f, the skips, FINISH.
    const scheduleRun = Object.values(end.runs).find((r) => r.input.plan === plan.planId)!;
    expect(scheduleRun).toMatchObject({ status: 'finished', outcome: 'finished' });
    const journal = await h.runJournal(scheduleRun.id);
    const steps = journal.filter((e) => e.kind === 'run.action' && e.data.run === scheduleRun.id).map((e) => e.data.action);
    expect(steps.slice(0, 5)).toEqual(['APPROVED', 'TURN_START', 'DISPATCH_BATCH_1', 'DISPATCH_t0', 'DISPATCH_t5']);
    expect(journal.find((e) => e.kind === 'run.signal_data' && e.data.action === 'APPROVED')?.data.payload).toMatchObject({ by: expect.any(String) });
    expect(journal.find((e) => e.kind === 'run.action' && e.data.action === 'DISPATCH_BATCH_1')?.data.emitted).toEqual(['dispatch_t3', 'dispatch_t4']);
    expect(steps).toContain('SKIP_t1');
    expect(steps).toContain('SKIP_t2');
    expect(steps.at(-1)).toBe('FINISH');
    expect(steps.filter((a) => String(a).startsWith('DISPATCH_t1') || String(a).startsWith('DISPATCH_t2'))).toEqual([]);
  }, 120_000);

  it('polly retry runs a failed task and its skipped dependant again under an admitted retry plan, in the same worktree with its uncommitted work', async () => {
    const h = await startBrain();
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'a then b', 'plan');
    // pi implements (Claude Code as root would need allow_root_sandbox in the file the CLI reads).
    const piTask = (key: string) => ({ ...task(key), worker: 'pi', reviewer: 'codex' });
    const plan = await proposePlan(ctx.store, h.config, { tasks: [piTask('a'), { ...piTask('b'), depends_on: ['a'] }] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    const id = (k: string) => `${plan.planId}-${k}`;
    await until('a dispatched', async () => h.pending().includes(id('a')));
    const firstWorktree = h.dispatches[0]!.worktree ?? (await h.registry()).tasks[id('a')]!.worktree!;
    h.fail([id('a')]);
    await until('the goal to fail with b skipped', async () => {
      const r = await h.registry();
      return r.goals[goal.id]?.status === 'failed' && r.tasks[id('b')]?.status === 'cancelled';
    });
    const env = { ...gitTestEnv(), ANTHROPIC_API_KEY: 'sk-ant-dummy', OPENAI_API_KEY: 'sk-dummy' }; // keys the retry's preflight looks for
    // resume has nothing to run, and names the retry command for each stopped task (stderr).
    const resumed = await nodeAsync([cli, 'resume'], h.repo.dir, env);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`Retry it there with: polly retry ${id('a')}`);
    expect(resumed.stderr).toContain(`Retry it there with: polly retry ${id('b')}`);
    // b alone cannot run: it depends on a, which stopped.
    const alone = await nodeAsync([cli, 'retry', id('b')], h.repo.dir, env);
    expect(alone.status).toBe(1);
    expect(alone.stderr).toContain(`${id('b')} depends on ${id('a')}, which is failed; retry both: polly retry ${id('b')} ${id('a')}`);

    const retry = nodeAsync([cli, 'retry', id('a'), id('b'), '--yes'], h.repo.dir, env);
    await until('a dispatched again', async () => h.dispatches.filter((d) => d.task === id('a')).length === 2 && h.pending().includes(id('a')), 45_000);
    const again = h.dispatches.filter((d) => d.task === id('a'))[1]!;
    expect(again.worktree).toBe(firstWorktree);
    expect(readFileSync(join(firstWorktree, `${id('a')}.txt`), 'utf8')).toBe('work in progress\n');
    expect(again.prompt).toMatch(
      new RegExp(
        `This is a retry: an earlier attempt of task ${id('a')} ended failed: the worker failed: agent_exited: the worker crashed\\. Its work, committed or not, is in this worktree`,
      ),
    );
    h.release([id('a')]);
    await until('b dispatched after a is ready', async () => h.pending().includes(id('b')), 45_000);
    h.release([id('b')]);
    const out = await retry;
    expect(out.status, out.stderr).toBe(0);
    expect(out.stderr).toContain(`[polly] retrying ${id('a')} (failed: the worker failed: agent_exited: the worker crashed) as task a of a retry plan, in ${firstWorktree}`);
    expect(out.stdout).toMatch(/admitted: .* exhaustive within declared domains/);

    const reg = await h.registry();
    const retryPlanId = Object.keys(reg.plans).find((p) => p !== plan.planId)!;
    expect(reg.plans[retryPlanId]).toMatchObject({ gate: 'approved', retries: { a: id('a'), b: id('b') } });
    // The same task records (no new task ids), now the retry plan's, ready; the earlier attempt kept.
    expect(Object.keys(reg.tasks).sort()).toEqual([id('a'), id('b')]);
    expect(reg.tasks[id('a')]).toMatchObject({ planId: retryPlanId, status: 'ready', worktree: firstWorktree, retriedFrom: [{ planId: plan.planId, status: 'failed' }] });
    expect(reg.tasks[id('b')]).toMatchObject({ planId: retryPlanId, status: 'ready', retriedFrom: [{ planId: plan.planId, status: 'cancelled' }] });
    expect(reg.goals[goal.id]?.status).toBe('failed');
    expect(reg.goals[reg.plans[retryPlanId]!.goalId!]?.status).toBe('done');
    // One PR step per task: the retry opened each PR once (the tool adopts an existing one).
    expect(h.calls.filter((c) => c.tool === 'open_draft_pr').map((c) => c.task)).toEqual([id('a'), id('b')]);
    const journal = await ctx.store.journal();
    expect(journal.filter((e) => e.kind === 'task.retried').map((e) => [e.data.taskId, e.data.previousStatus])).toEqual([
      [id('a'), 'failed'],
      [id('b'), 'cancelled'],
    ]);
    // polly status --json shows the earlier attempt.
    const status = await nodeAsync([cli, 'status', '--json'], h.repo.dir, env);
    const shown = (JSON.parse(status.stdout) as { tasks: Array<{ id: string; retriedFrom?: unknown }> }).tasks.find((t) => t.id === id('a'));
    expect(shown?.retriedFrom).toEqual([expect.objectContaining({ planId: plan.planId, status: 'failed', reason: 'the worker failed: agent_exited: the worker crashed' })]);
    // A ready task is not retried.
    const ready = await nodeAsync([cli, 'retry', id('a')], h.repo.dir, env);
    expect(ready.status).toBe(1);
    expect(ready.stderr).toContain(`task ${id('a')} is ready; only a task that stopped`);
  }, 120_000);

  it('acceptance.max_attempts 1: the task goes red once, then fails, saying why with the last output', async () => {
    const config = structuredClone(DEFAULT_CONFIG);
    config.acceptance = { ...config.acceptance, max_attempts: 1 };
    const h = await startBrain({
      config: { acceptance: config.acceptance },
      tools: {
        run_acceptance: async (tctx) => {
          await tctx.store.update((d) => {
            d.tasks[tctx.task.id]!.feedback = '$ npm test\nsum(2, 3) should be 5 but was 6';
          });
          return { outcome: 'failure', permanent: true, note: 'run_acceptance: red (npm test exited 1)' };
        },
      },
    });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'one red thing', 'plan');
    const plan = await proposePlan(ctx.store, h.config, { tasks: [task('a')] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    await until('dispatched', async () => h.pending().length === 1);
    h.release();
    const id = `${plan.planId}-a`;
    const reg = await until('the task to fail', async () => {
      const r = await h.registry();
      return r.tasks[id]?.finishedAt ? r : null;
    });
    expect(reg.tasks[id]!.status).toBe('failed');
    expect(reg.tasks[id]!.statusReason).toBe('acceptance red after 1 attempt: red (npm test exited 1); last output: $ npm test\nsum(2, 3) should be 5 but was 6');
    expect(h.calls.filter((c) => c.task === id).map((c) => c.tool)).toEqual(['dispatch', 'run_acceptance']);
  }, 90_000);

  it('review.max_rounds 1: one blocking review goes back, the second fails the task', async () => {
    const config = structuredClone(DEFAULT_CONFIG);
    config.review = { ...config.review, max_rounds: 1 };
    const h = await startBrain({
      config: { review: config.review },
      tools: { dispatch_review: async () => ({ outcome: 'failure', permanent: true, note: 'dispatch_review: 2 blocking findings' }) },
    });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'one disputed thing', 'plan');
    const plan = await proposePlan(ctx.store, h.config, { tasks: [task('a')] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    await until('dispatched', async () => h.pending().length === 1);
    h.release();
    const id = `${plan.planId}-a`;
    const reg = await until('the task to fail', async () => {
      const r = await h.registry();
      return r.tasks[id]?.finishedAt ? r : null;
    });
    expect(reg.tasks[id]).toMatchObject({ status: 'failed', statusReason: 'review blocking after 2 rounds: 2 blocking findings' });
    expect(h.calls.filter((c) => c.task === id).map((c) => c.tool)).toEqual([
      'dispatch',
      'run_acceptance',
      'push',
      'open_draft_pr',
      'dispatch_review',
      'send_followup',
      'run_acceptance',
      'push',
      'dispatch_review',
    ]);
  }, 90_000);

  it('a corrupted journal step is a divergence: the Brain fails the task and journals it; polly check --run exits 1', async () => {
    const h = await startBrain({ conforming: false });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'one thing', 'plan');
    const plan = await proposePlan(ctx.store, h.config, { tasks: [task('a')] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    await until('dispatched', async () => h.pending().length === 1);
    const id = `${plan.planId}-a`;
    const runId = Object.values((await h.registry()).runs).find((r) => r.input.task === id)!.id;
    // Never spawnSync here: the check opens the run store, whose writer lock the Brain in this
    // test process may hold, and a blocked event loop cannot release it (CI hung 90 minutes on it).
    const check = (args: string[]) => nodeAsync([cli, 'check', ...args], h.repo.dir, gitTestEnv());
    expect((await check(['--run', runId])).stdout).toMatch(/^conforms: /);
    // Rewrite the START step: the journal now says it went straight to testing (same line length,
    // while the Brain waits on the worker).
    await new Promise((r) => setTimeout(r, 2000));
    // The run's journal is in the run store (LMDB, .polly/runs/runs.mdb): another process edits the
    // stored entry, as a damaged or tampered store would (LMDB is opened once per process).
    const edit = [
      "const { open } = require('lmdb');",
      "const root = open({ path: process.argv[1], noSubdir: true, maxDbs: 8, encoding: 'json' });",
      "const journal = root.openDB({ name: 'journal', encoding: 'json' });",
      'let done = 0;',
      'for (const { key, value } of journal.getRange()) {',
      "  if (value.kind === 'run.action' && value.data.run === process.argv[2] && value.data.action === 'START') { journal.putSync(key, { ...value, data: { ...value.data, to: 'testing' } }); done++; }",
      '}',
      'process.stdout.write(String(done));',
    ].join('\n');
    const edited = await nodeAsync(['-e', edit, join(h.repo.dir, '.polly', 'runs', 'runs.mdb'), runId], process.cwd(), process.env);
    expect(edited.stdout, edited.stderr).toBe('1');
    h.release();
    const reg = await until('the task to end', async () => {
      const r = await h.registry();
      return r.tasks[id]?.finishedAt ? r : null;
    });
    expect(reg.tasks[id]!.status).toBe('failed');
    expect(reg.tasks[id]!.statusReason).toBe(
      'the run diverged from its admitted workflow: START from "planned" goes to "implementing" in the model, but the journal says "testing"',
    );
    const journal = await ctx.store.journal();
    expect(journal.filter((e) => e.kind === 'run.trace_divergence').map((e) => e.data)).toEqual([expect.objectContaining({ run: runId, step: 1 })]);
    const out = await check(['--run', runId, '--json']);
    expect(out.status, out.stderr).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({ run: runId, conforms: false, divergence: { step: 1, kind: 'run.action' } });
    expect((await check(['--run', 'run-nope'])).status).toBe(2);
  }, 90_000);
  it('a failing check on a ready PR (pr.checks_failed, as the GitHub watcher emits it) is one fix round of the same task, routed exactly once; a human merge ends the run', async () => {
    const h = await startBrain({
      tools: {
        reply_pr: async () => ({ outcome: 'ok', note: 'replied' }),
        open_draft_pr: async (tctx) => ({ outcome: 'ok', data: { reviewer: tctx.task.reviewer ?? 'none' }, note: 'opened' }),
      },
    });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'one checked thing', 'plan');
    // b's worker is codex, with no model key in the Brain's environment: its round cannot start.
    const plan = await proposePlan(ctx.store, h.config, { tasks: [task('a'), { ...task('b'), worker: 'codex', reviewer: 'claude-code' }] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    await until('dispatched', async () => h.pending().length === 2, 150_000);
    h.release();
    const id = `${plan.planId}-a`;
    const idB = `${plan.planId}-b`;
    await until('ready', async () => {
      const r = await h.registry();
      return [id, idB].every((x) => r.tasks[x]?.status === 'ready' && r.tasks[x]?.finishedAt);
    });
    const runOf = async () => Object.values((await h.registry()).runs).find((r) => r.input.task === id)!;
    expect((await runOf()).state).toMatchObject({ state: 'watching' });
    const before = h.calls.length;
    await ctx.store.update((_d, tx) => {
      for (const [taskId, number] of [
        [idB, 8],
        [id, 7],
      ] as const)
        tx.emit('pr.checks_failed', {
          forge: 'github',
          number,
          taskId,
          headCommit: 'a'.repeat(40),
          checks: [{ name: 'ci / test', conclusion: 'failure', summary: '1 test failed', logExcerpt: 'expected 5, got 6' }],
        });
    });
    const reg = await until('ready again after the round', async () => {
      const r = await h.registry();
      const t = r.tasks[id];
      return h.calls.slice(before).some((c) => c.tool === 'mark_ready') && t?.status === 'ready' && t.finishedAt ? r : null;
    });
    expect(h.calls.slice(before).map((c) => c.tool)).toEqual(['send_followup', 'run_acceptance', 'dispatch_review', 'push', 'reply_pr', 'mark_ready']);
    expect(reg.tasks[id]!.fixRound).toMatchObject({ round: 1, action: 'CHECKS_FAILED', eventSeqs: [expect.any(Number)] });
    expect(reg.tasks[id]!.feedback).toContain('expected 5, got 6'); // the log excerpt went to the worker
    // Exactly once: the Brain wakes on later journal lines and starts no second round.
    await ctx.store.update((_d, tx) => tx.emit('pr.comment', { forge: 'github', number: 7 }));
    await new Promise((r) => setTimeout(r, 2000));
    const journal = await ctx.store.journal();
    expect(journal.filter((e) => e.kind === 'task.fix_round')).toHaveLength(1);
    expect(h.calls.slice(before).filter((c) => c.tool === 'send_followup')).toHaveLength(1);
    // b: no round, no tool call, still ready, the reason journaled once and on the task.
    expect(h.calls.slice(before).filter((c) => c.task === idB)).toEqual([]);
    const notStarted = journal.filter((e) => e.kind === 'task.fix_round_not_started');
    expect(notStarted.map((e) => [e.data.taskId, e.data.action])).toEqual([[idB, 'CHECKS_FAILED']]);
    expect(reg.tasks[idB]!.status).toBe('ready');
    expect(reg.tasks[idB]!.fixRound ?? null).toBeNull();
    expect((await h.registry()).tasks[idB]!.statusReason).toMatch(/^fix round not started: codex has no model key: none of OPENAI_API_KEY is set\. Fix: export OPENAI_API_KEY/);
    // A human merge (as the merge watch records it) ends the run `done`.
    await ctx.store.update((d) => {
      transitionTask(d.tasks[id]!, 'merged', { at: new Date().toISOString() });
    });
    await until('the run ended done', async () => {
      const r = await runOf();
      return r.status === 'finished' && r.outcome === 'done';
    });
    await h.stop();
  }, 200_000);

  it('a worker that made no change: the task fails saying so, and nothing is pushed', async () => {
    const h = await startBrain({
      tools: {
        dispatch: async () => ({ outcome: 'failure', permanent: true, note: 'dispatch: the worker made no change (claude-code ended its turn ok, but the worktree is unchanged)' }),
      },
    });
    await h.started;
    const ctx = await openRepoContext(h.repo.dir, gitTestEnv());
    const { goal } = await createGoal(ctx.store, 'nothing to do', 'plan');
    const plan = await proposePlan(ctx.store, h.config, { tasks: [task('a')] }, { goalId: goal.id });
    await decidePlan(ctx.store, h.config, plan.planId, 'approve');
    const id = `${plan.planId}-a`;
    const reg = await until('the task to end', async () => {
      const r = await h.registry();
      return r.tasks[id]?.finishedAt ? r : null;
    });
    expect(reg.tasks[id]).toMatchObject({ status: 'failed', statusReason: 'the worker made no change' });
    expect(h.calls.filter((c) => c.task === id).map((c) => c.tool)).toEqual(['dispatch']);
  }, 90_000);
});
