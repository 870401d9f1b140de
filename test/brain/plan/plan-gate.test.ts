import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { decidePlan, expirePlanAsks, proposePlan } from '../../../brain/plan/plan-gate.js';
import { createFileRegistryStore, createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const task = (key: string, worker: string, reviewer: string) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker,
  reviewer,
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
});

describe('plan gate', () => {
  it('records a refused plan with its counterexample, then an admitted revision waiting for a human', async () => {
    const store = createMemoryRegistryStore();
    const bad = await proposePlan(store, DEFAULT_CONFIG, { tasks: [task('t1', 'codex', 'codex')] });
    expect(bad.admitted).toBe(false);
    expect(bad.instruction).toMatch(/REFUSED.*t1\/reviewer-vendor-differs.*plan_propose again/s);
    expect(bad.counterexamples.join('\n')).toMatch(/START[\s\S]*PR_OPENED/);
    const good = await proposePlan(store, DEFAULT_CONFIG, { tasks: [task('t1', 'codex', 'pi')] });
    expect(good.admitted).toBe(true);
    const reg = await store.read();
    expect(reg.plans[bad.planId]?.gate).toBe('refused');
    // The structured counterexample is kept beside its text, step for step (polly ui renders it).
    const traces = reg.plans[bad.planId]?.counterexampleTraces ?? [];
    expect(traces.map((v) => v.invariant)).toEqual(['t1/reviewer-vendor-differs']);
    expect(traces[0]!.trace.length).toBeGreaterThan(1);
    expect(traces[0]!.trace.map((s) => s.action)).toEqual([...bad.counterexamples[0]!.matchAll(/^ {2}\d+\. (\w+)/gm)].map((m) => m[1]));
    expect(reg.plans[good.planId]?.counterexampleTraces).toBeUndefined();
    expect(reg.plans[good.planId]?.gate).toBe('pending');
    const kinds = (await store.journal()).map((e) => e.kind);
    expect(kinds).toEqual(['plan.refused', 'plan.proposed']);
    await expect(decidePlan(store, DEFAULT_CONFIG, bad.planId, 'approve')).rejects.toThrow(/REFUSED by the checker/);
    const approved = await decidePlan(store, DEFAULT_CONFIG, good.planId, 'approve', { by: 'human:test' });
    expect(approved.gate).toBe('approved');
    await expect(decidePlan(store, DEFAULT_CONFIG, good.planId, 'reject')).rejects.toThrow(/already approved/);
  });

  it('an ask expires after ask_timeout (injected clock) and then counts as rejected', async () => {
    let now = new Date('2026-11-29T00:00:00Z');
    const store = createMemoryRegistryStore({ now: () => now });
    const p = await proposePlan(store, DEFAULT_CONFIG, { tasks: [task('t1', 'claude-code', 'codex')] }, { now: () => now });
    now = new Date(now.getTime() + 86_400 * 1000); // exactly the timeout: still open
    expect(await expirePlanAsks(store, DEFAULT_CONFIG, now)).toEqual([]);
    now = new Date(now.getTime() + 1000);
    expect(await expirePlanAsks(store, DEFAULT_CONFIG, now)).toEqual([p.planId]);
    await expect(decidePlan(store, DEFAULT_CONFIG, p.planId, 'approve', { now })).rejects.toThrow(/expired.*counts as rejected/);
    expect((await store.read()).plans[p.planId]?.gate).toBe('expired');
  });

  it('polly plan show/approve from the CLI', async () => {
    const repo = createTestRepo();
    const env = gitTestEnv();
    execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env, stdio: 'pipe' });
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    // Budgets: the config's per-goal limit, the plan's per-task one, and a task of its own (issue 20).
    // A usd budget needs a price for every worker it covers (docs/metering.md).
    const config = {
      ...DEFAULT_CONFIG,
      // A budget needs a worker Polly meters: pi pointed at an API (docs/metering.md).
      workers: { ...DEFAULT_CONFIG.workers, pi: { ...DEFAULT_CONFIG.workers.pi, model: 'scripted', base_url: 'http://127.0.0.1:9/v1' } },
      prices: { 'claude-sonnet-4-5': { input: 3, output: 15 }, scripted: { input: 0, output: 0 } },
      budgets: { per_task: { usd: 9 }, per_goal: { usd: 5, tokens: 400000 } },
    };
    const p = await proposePlan(store, config, {
      budgets: { per_task: { tokens: 200000 } },
      tasks: [task('t1', 'claude-code', 'pi'), { ...task('t2', 'claude-code', 'pi'), budget: { usd: 0.5 } }],
    });
    expect((await store.read()).plans[p.planId]!.budgets).toEqual({ perTask: { tokens: 200000 }, perGoal: { usd: 5, tokens: 400000 } });
    const show = spawnSync(process.execPath, [cli, 'plan', 'show', p.planId], { cwd: repo.dir, env, encoding: 'utf8' });
    expect(show.status).toBe(0);
    // The gate shows the budget the human approves: per task, per goal, and each task's own.
    expect(show.stdout).toContain(`budgets: per task 200000 tokens (a task's own wins); per goal $5.00 and 400000 tokens`);
    expect(show.stdout).toMatch(/\n\s+t1\s.*\s200000 tokens\s/);
    expect(show.stdout).toMatch(/\n\s+t2\s.*\s\$0\.5000\s/);
    expect(show.stdout).toContain(`admitted: plan-${p.planId}`);
    expect(show.stdout).toContain(`polly plan approve ${p.planId}`);
    const approve = spawnSync(process.execPath, [cli, 'plan', 'approve', p.planId, '--json'], { cwd: repo.dir, env, encoding: 'utf8' });
    expect(approve.status).toBe(0);
    expect(JSON.parse(approve.stdout).plan.gate).toBe('approved');
    const again = spawnSync(process.execPath, [cli, 'plan', 'approve', p.planId], { cwd: repo.dir, env, encoding: 'utf8' });
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/not waiting for approval/);
    const missing = spawnSync(process.execPath, [cli, 'plan', 'approve', 'p99'], { cwd: repo.dir, env, encoding: 'utf8' });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no plan "p99"/);
  });
});
