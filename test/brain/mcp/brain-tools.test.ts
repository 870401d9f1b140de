import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { createBrainTools } from '../../../brain/mcp/brain-tools.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';

const context = { repoRoot: '/repo', worktree: '/repo', branch: 'main', defaultBranch: 'main', home: '/home/dev' };

function tools(config = DEFAULT_CONFIG) {
  const store = createMemoryRegistryStore();
  const list = createBrainTools({ store, config, gateContext: context });
  const call = (name: string, args: Record<string, unknown>) => list.find((t) => t.name === name)!.handler(args as never);
  return { store, call };
}

describe('the Brain dispatch protocol tools', () => {
  it('sys_session_send queues read-only work through the gate and stops at 5 per turn', async () => {
    const { store, call } = tools();
    for (let i = 1; i <= 5; i++) {
      const r = await call('sys_session_send', { title: `look ${i}`, purpose: 'explore', prompt: 'read the code' });
      expect(r.structured).toMatchObject({ dispatched: true, task_id: `x${i}` });
    }
    const sixth = await call('sys_session_send', { title: 'one more', purpose: 'search', prompt: 'grep' });
    expect(sixth.structured).toMatchObject({ dispatched: false, decision: { decision: 'deny', rule: 'spawn_bounds.max_dispatches_per_turn' } });
    const reg = await store.read();
    expect(Object.keys(reg.tasks)).toHaveLength(5);
    expect(reg.tasks.x1).toMatchObject({ purpose: 'explore', worker: 'pi', status: 'queued' });
  });

  it('refuses unknown purposes and ad-hoc implement work (it comes from an approved plan)', async () => {
    const { call, store } = tools();
    const bogus = await call('sys_session_send', { title: 'x', purpose: 'deploy', prompt: 'ship it' });
    expect(bogus.structured).toMatchObject({ dispatched: false, decision: { decision: 'deny', rule: 'purpose_guard.unknown_purpose' } });
    const impl = await call('sys_session_send', { title: 'x', purpose: 'implement', prompt: 'write code' });
    expect(impl.structured).toMatchObject({ dispatched: false, decision: { rule: 'purpose_guard.plan_gate' } });
    expect(Object.keys((await store.read()).tasks)).toHaveLength(0);
  });

  it('sys_read_inbox blocks until an event arrives, then continues from its cursor', async () => {
    const { call, store } = tools();
    const started = Date.now();
    const pending = call('sys_read_inbox', { wait_s: 10 });
    setTimeout(() => void store.update((_d, tx) => tx.emit('task.finished', { taskId: 'x1', report: 'found it' })), 150);
    const r = await pending;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.structured.events).toEqual([expect.objectContaining({ kind: 'task.finished', taskId: 'x1', report: 'found it' })]);
    const again = await call('sys_read_inbox', { wait_s: 0 });
    expect(again.structured.events).toEqual([]);
    // Journal entries that are not inbox events (gate decisions) do not wake it.
    await store.update((_d, tx) => tx.emit('gate.decision', { decision: 'allow' }));
    expect((await call('sys_read_inbox', { wait_s: 0 })).structured.events).toEqual([]);
  });

  it('plan_propose returns the verdict and the counterexample text', async () => {
    const { call } = tools();
    const t = {
      key: 't1',
      title: 'fix',
      purpose: 'implement',
      worker: 'pi',
      reviewer: 'pi',
      prompt: 'fix it',
      acceptance: { commands: ['npm test'], criteria: [] },
      depends_on: [],
    };
    const r = await call('plan_propose', { tasks: [t] });
    expect(r.structured).toMatchObject({ admitted: false, line: 'REFUSED: plan-p1' });
    expect(r.instruction).toMatch(/t1\/reviewer-vendor-differs/);
  });

  it("plan_propose takes the plan's budgets and a task's own; the plan records what the gate shows", async () => {
    // Budgets hold only on workers Polly meters: pi and codex pointed at an API (docs/metering.md).
    const metered = structuredClone(DEFAULT_CONFIG);
    metered.workers.pi.base_url = 'http://127.0.0.1:9/v1';
    metered.workers.codex.provider = { id: 'p', base_url: 'http://127.0.0.1:9/v1', env_key: 'K' };
    const { call, store } = tools(metered);
    const t = {
      key: 't1',
      title: 'fix',
      purpose: 'implement',
      worker: 'pi',
      reviewer: 'codex',
      prompt: 'fix it',
      acceptance: { commands: ['npm test'], criteria: [] },
      budget: { tokens: 5000 },
    };
    // (A usd limit would need prices for pi and codex's models: docs/metering.md.)
    const r = await call('plan_propose', { tasks: [t], budgets: { per_goal: { tokens: 20000 } } });
    expect(r.structured).toMatchObject({ admitted: true });
    const plan = Object.values((await store.read()).plans)[0]!;
    expect(plan.budgets).toEqual({ perTask: null, perGoal: { tokens: 20000 } });
    expect(plan.tasks[0]!.budget).toEqual({ tokens: 5000 });
    await expect(call('plan_propose', { tasks: [t], budgets: { per_goal: { usd: -1 } } })).rejects.toThrow();
  });

  it('sys_cancel_task records the request for the Brain process', async () => {
    const { call, store } = tools();
    await call('sys_session_send', { title: 'look', purpose: 'explore', prompt: 'read' });
    const r = await call('sys_cancel_task', { task_id: 'x1' });
    expect(r.structured).toMatchObject({ cancelled: true });
    expect((await store.journal()).map((e) => e.kind)).toContain('task.cancel_requested');
    expect((await call('sys_cancel_task', { task_id: 'nope' })).structured).toMatchObject({ cancelled: false });
  });
});
