/**
 * The budget watch of a turn (brain/task-tools/turn-budget.ts `createBudgetWatch`) with the goal's
 * shared ledger (workers/metering/goal-ledger.ts) on disk: a request the run's metering proxy refused
 * for the budget is a budget stop, also when no usage event of this turn reached the limit (another
 * run of the goal spent it). Before, such a turn ended `cancelled` and its task was failed as
 * cancelled instead of parked for its budget (test/workers/metering/goal-ledger.test.ts saw it
 * when the second of two parallel pi tasks had no request in flight as the first crossed the limit).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addTurn, ledgerTurn } from '../../../brain/registry/cost-ledger.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';
import { budgetReason, createBudgetWatch } from '../../../brain/task-tools/turn-budget.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import type { MeteredRequest, RefusedRequest } from '../../../workers/metering/metering-proxy.js';
import { goalLedgerPath, openGoalLedger } from '../../../workers/metering/goal-ledger.js';
import { sampleTask } from '../../helpers/registry-sample.js';

const usage = (input: number, output: number) =>
  ({ type: 'usage', scope: 'call', inputTokens: input, outputTokens: output, cacheReadTokens: null, cacheWriteTokens: null, costUsd: null }) as const;

/** Goal g1 (plan p1, goal budget 1000 tokens) with tasks p1-a (spent 600 tokens) and p1-b, in a repository directory for the goal's ledger. */
async function goalRig(taskBudget: { tokens?: number; usd?: number } | null = null) {
  const repoRoot = mkdtempSync(join(tmpdir(), 'polly-turn-budget-'));
  const store = createMemoryRegistryStore();
  await store.update((d) => {
    d.goals.g1 = { id: 'g1', text: 'g', createdAt: '2026-12-01T00:00:00Z', status: 'running', planIds: ['p1'] };
    d.plans.p1 = {
      id: 'p1',
      goalId: 'g1',
      createdAt: '2026-12-01T00:00:00Z',
      tasks: [],
      admission: null,
      gate: 'approved',
      askedAt: null,
      decidedAt: null,
      decidedBy: 'me',
      budgets: { perTask: null, perGoal: { tokens: 1000 } },
    };
    d.tasks['p1-a'] = { ...sampleTask('p1-a'), planId: 'p1' };
    d.tasks['p1-a']!.ledger = addTurn(
      undefined,
      ledgerTurn([usage(500, 100)], { at: '2026-12-01T00:00:00Z', role: 'implement', harness: 'pi', workerId: 'w1', orderId: 'o-w1', status: 'ok' }),
    );
    d.tasks['p1-b'] = { ...sampleTask('p1-b'), planId: 'p1', ...(taskBudget ? { budget: taskBudget } : {}) };
  });
  return { repoRoot, store };
}

/** The events a metered run's runner records (workers/supervisor/worker-runner.ts). */
const meteringStart = (): AgentEvent => ({ type: 'metering', upstreams: ['http://127.0.0.1:9/v1'], budget: null });
const metered = (tokens: number): AgentEvent => {
  const request: MeteredRequest = {
    at: '2026-12-01T00:00:01Z',
    api: 'openai-chat',
    upstream: 'http://127.0.0.1:9/v1',
    path: '/chat/completions',
    status: 200,
    model: 'm',
    inputTokens: tokens,
    outputTokens: 0,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    impossible: [],
    costUsd: null,
    reported: true,
    durationMs: 5,
  };
  return { type: 'metered', request };
};
/** A charge to goal g1's shared ledger, as a run's metering proxy writes it when a response ends. */
function charge(repoRoot: string, by: string, task: string, tokens: number): void {
  const ledger = openGoalLedger(goalLedgerPath(join(repoRoot, '.polly'), 'g1'));
  ledger.charge({ by, task, tokens, usd: null });
  ledger.close();
}
const refusal = (r: Pick<RefusedRequest, 'scope' | 'kind' | 'limit' | 'spent'>): AgentEvent => ({
  type: 'metering_refused',
  refused: { at: '2026-12-01T00:00:02Z', api: 'openai-chat', path: '/chat/completions', ...r },
});

describe('the budget watch and the metering proxy’s refusals', () => {
  it("stops the turn for the goal's budget when the proxy refuses after another run of the goal spent it, with no usage event of this turn over the limit", async () => {
    const { repoRoot, store } = await goalRig();
    const watch = await createBudgetWatch({ store, task: (await store.read()).tasks['p1-b']!, repoRoot }, new AbortController().signal);
    watch.onEvent(meteringStart());
    charge(repoRoot, 'w-b', 'p1-b', 300);
    watch.onEvent(metered(300));
    expect(watch.stopped(), '600 carried + 300 of 1000').toBeNull();
    // The other task's proxy charges the shared ledger: the goal is now over its limit.
    charge(repoRoot, 'w-a', 'p1-a', 250);
    expect(watch.signal.aborted).toBe(false);
    // This run's next request is refused (its runner ends the turn): no metered event comes.
    watch.onEvent(refusal({ scope: 'goal', kind: 'tokens', limit: 1000, spent: 1150 }));
    expect(watch.stopped()).toMatchObject({ scope: 'goal', goalId: 'g1', budget: { tokens: 1000 }, reach: { kind: 'tokens', limit: 1000, spent: 1150 } });
    expect(watch.signal.aborted).toBe(true);
    expect(budgetReason(watch.stopped()!, { taskId: 'p1-b' })).toMatch(/^budget reached: the budget of goal g1 \(1000 tokens\): tokens 1150 ≥ limit 1000\./);
  });

  it("takes the proxy's word for a refusal the watch's own count does not show, said against the task's whole budget", async () => {
    const { repoRoot, store } = await goalRig({ tokens: 2000 });
    await store.update((d) => {
      d.tasks['p1-b']!.ledger = addTurn(
        undefined,
        ledgerTurn([usage(100, 0)], { at: '2026-12-01T00:00:00Z', role: 'implement', harness: 'pi', workerId: 'w0', orderId: 'o-w0', status: 'ok' }),
      );
      d.plans.p1!.budgets = { perTask: null, perGoal: null };
    });
    const watch = await createBudgetWatch({ store, task: (await store.read()).tasks['p1-b']!, repoRoot }, new AbortController().signal);
    expect(watch.remaining()).toEqual({ tokens: 1900 });
    watch.onEvent(meteringStart());
    // The proxy enforced what remained (1900) and counted 1950 in this run (its metered events were not seen).
    watch.onEvent(refusal({ scope: 'task', kind: 'tokens', limit: 1900, spent: 1950 }));
    expect(watch.stopped()).toMatchObject({ scope: 'task', budget: { tokens: 2000 }, reach: { kind: 'tokens', limit: 2000, spent: 2050 } });
    expect(watch.signal.aborted).toBe(true);
  });

  it('a cancel of the run is no budget stop, but a refusal that follows it is', async () => {
    const { repoRoot, store } = await goalRig();
    const parent = new AbortController();
    const watch = await createBudgetWatch({ store, task: (await store.read()).tasks['p1-b']!, repoRoot }, parent.signal);
    watch.onEvent(meteringStart());
    charge(repoRoot, 'w-b', 'p1-b', 100);
    watch.onEvent(metered(100));
    parent.abort();
    expect(watch.signal.aborted).toBe(true);
    expect(watch.stopped()).toBeNull();
    charge(repoRoot, 'w-a', 'p1-a', 400);
    watch.onEvent(refusal({ scope: 'goal', kind: 'tokens', limit: 1000, spent: 1100 }));
    expect(watch.stopped()).toMatchObject({ scope: 'goal', reach: { spent: 1100 } });
  });
});
