/**
 * The cost ledger's arithmetic (brain/registry/cost-ledger.ts), budget resolution and reaching
 * (brain/plan/budgets.ts), and how config and plans declare budgets and notifications.
 */
import { describe, expect, it } from 'vitest';
import { addTurn, formatCost, ledgerTurn, turnUsage, type LedgerTurn } from '../../../brain/registry/cost-ledger.js';
import { budgetReached, formatBudget, resolvePlanBudgets, taskBudget } from '../../../brain/plan/budgets.js';
import { parseConfig } from '../../../brain/config/config.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { validatePlan } from '../../../brain/plan/plan-schema.js';
import { isPollyError } from '../../../brain/core/errors.js';
import { renderPrBody } from '../../../brain/forge/pr-body.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';
import { budgetReason, createBudgetWatch } from '../../../brain/task-tools/turn-budget.js';
import { sampleTask } from '../../helpers/registry-sample.js';

const call = (input: number, output: number, cost: number | null, callId: string | null = null) =>
  ({ type: 'usage', scope: 'call', callId, inputTokens: input, outputTokens: output, cacheReadTokens: null, cacheWriteTokens: null, costUsd: cost }) as const;
const whole = (input: number, output: number, cost: number | null, cacheRead: number | null = null) =>
  ({ type: 'usage', scope: 'turn', inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheWriteTokens: null, costUsd: cost }) as const;
const meta = (workerId: string, role: LedgerTurn['role'] = 'implement') => ({
  at: '2026-12-01T00:00:00Z',
  role,
  harness: 'pi' as const,
  workerId,
  orderId: `o-${workerId}`,
  status: 'ok',
});

describe('turnUsage', () => {
  it('sums per-call usage (pi), one entry per repeated call id (claude repeats a message on each block)', () => {
    expect(turnUsage([call(10, 2, 0.01), { type: 'text' }, call(20, 3, 0.02)])).toEqual({
      inputTokens: 30,
      outputTokens: 5,
      cacheReadTokens: null,
      cacheWriteTokens: null,
      costUsd: 0.03,
    });
    expect(turnUsage([call(10, 1, null, 'm1'), call(10, 4, null, 'm1'), call(5, 1, null, 'm2')])).toMatchObject({ inputTokens: 15, outputTokens: 5, costUsd: null });
  });
  it('takes the turn-scoped figures over the calls when the CLI gives both (claude: result after its messages)', () => {
    expect(turnUsage([call(10, 1, null, 'm1'), whole(12, 6, 0.5, 4)])).toEqual({ inputTokens: 12, outputTokens: 6, cacheReadTokens: 4, cacheWriteTokens: null, costUsd: 0.5 });
  });
  it('is null without usage, and a ledger turn without usage has an unknown cost', () => {
    expect(turnUsage([{ type: 'text' }])).toBeNull();
    expect(ledgerTurn([], meta('w0'))).toMatchObject({ reported: false, inputTokens: 0, costUsd: null });
  });
});

describe('the task ledger', () => {
  it('keeps exact totals and per-role totals while the turn list is capped', () => {
    let ledger = addTurn(undefined, ledgerTurn([call(100, 10, 0.1)], meta('w1')), 2);
    ledger = addTurn(ledger, ledgerTurn([call(50, 5, 0.05)], meta('w2', 'followup')), 2);
    ledger = addTurn(ledger, ledgerTurn([whole(40, 4, null)], meta('w3', 'review')), 2);
    expect(ledger.totals).toMatchObject({ turns: 3, inputTokens: 190, outputTokens: 19, unknownCostTurns: 1 });
    expect(ledger.totals.costUsd).toBeCloseTo(0.15, 10);
    expect(ledger.byRole.followup).toMatchObject({ turns: 1, inputTokens: 50 });
    expect(ledger.byRole.review).toMatchObject({ turns: 1, unknownCostTurns: 1 });
    expect(ledger.turns.map((t) => t.workerId)).toEqual(['w2', 'w3']);
    expect(ledger.droppedTurns).toBe(1);
  });
  it('says unknown, never 0, where agents report no cost', () => {
    expect(formatCost({ turns: 2, costUsd: 0, unknownCostTurns: 2 })).toBe('unknown');
    expect(formatCost({ turns: 3, costUsd: 0.15, unknownCostTurns: 1 })).toBe('≥ $0.1500 (some turns unknown)');
    expect(formatCost({ turns: 1, costUsd: 1.5, unknownCostTurns: 0 })).toBe('$1.50');
  });
  it('shows the cost per role in the PR body', () => {
    const ledger = addTurn(addTurn(undefined, ledgerTurn([call(100, 10, 0.1)], meta('w1'))), ledgerTurn([whole(40, 4, null)], meta('w2', 'review')));
    const body = renderPrBody({ taskId: 't1', title: 'T', prompt: 'p', acceptance: { commands: [], criteria: [] }, checks: [], reviews: [], ledger });
    expect(body).toContain('## Cost');
    expect(body).toContain('| implement | 1 | 100 | 10 | 0 | $0.1000 |');
    expect(body).toContain('| review | 1 | 40 | 4 | 0 | unknown |');
    expect(body).toContain('| **total** | 2 | 140 | 14 | 0 | ≥ $0.1000 (some turns unknown) |');
  });
});

describe('budgets', () => {
  it('resolve task over plan over config, whole objects', () => {
    const config = { budgets: { per_task: { usd: 1 }, per_goal: { tokens: 1000 } } };
    expect(resolvePlanBudgets(config, null)).toEqual({ perTask: { usd: 1 }, perGoal: { tokens: 1000 } });
    const plan = resolvePlanBudgets(config, { per_task: { tokens: 50 }, per_goal: null });
    expect(plan).toEqual({ perTask: { tokens: 50 }, perGoal: null });
    expect(taskBudget(undefined, plan)).toEqual({ tokens: 50 });
    expect(taskBudget({ usd: 0.2 }, plan)).toEqual({ usd: 0.2 });
    expect(taskBudget(null, plan)).toBeNull();
    expect(formatBudget({ usd: 0.5, tokens: 2000 })).toBe('$0.5000 and 2000 tokens');
  });
  it('are reached at spent ≥ limit, tokens first; an unknown cost never reaches a USD limit', () => {
    expect(budgetReached({ tokens: 100 }, { tokens: 99, usd: 0 })).toBeNull();
    expect(budgetReached({ tokens: 100, usd: 1 }, { tokens: 100, usd: 5 })).toEqual({ kind: 'tokens', limit: 100, spent: 100 });
    expect(budgetReached({ usd: 1 }, { tokens: 10 ** 9, usd: 0.99 })).toBeNull();
    expect(budgetReached({ usd: 1 }, { tokens: 0, usd: 1 })).toEqual({ kind: 'usd', limit: 1, spent: 1 });
  });
  it('are config keys with clear errors', () => {
    const c = parseConfig('budgets:\n  per_task: {usd: 0.25}\n  per_goal: {tokens: 5000}\nnotifications:\n  webhook_url: http://127.0.0.1:9/hook\n', 'c.yaml');
    expect(c.budgets).toEqual({ per_task: { usd: 0.25 }, per_goal: { tokens: 5000 } });
    expect(c.notifications).toEqual({ ...DEFAULT_CONFIG.notifications, webhook_url: 'http://127.0.0.1:9/hook' });
    const fail = (text: string): string => {
      try {
        parseConfig(text, 'c.yaml');
      } catch (error) {
        if (isPollyError(error, 'config_invalid')) return error.message;
      }
      throw new Error(`accepted: ${text}`);
    };
    expect(fail('budgets:\n  per_task: {usd: 0}\n')).toMatch(/^c\.yaml:2:\d+: budgets\.per_task\.usd: expected a number > 0, found 0/);
    expect(fail('budgets:\n  per_task: {}\n')).toMatch(/budgets\.per_task: a budget needs usd, tokens or both/);
    expect(fail('budgets:\n  per_task: {dollars: 3}\n')).toMatch(/unknown key "dollars" \(accepted here: usd, tokens\)/);
    const secret = 'hooks.slack.invalid/T000/B000/XXXXSECRET';
    const m = fail(`notifications:\n  webhook_url: "ftp://${secret}"\n`);
    expect(m).toMatch(/notifications\.webhook_url: expected an http\(s\) URL/);
    expect(m).not.toContain('SECRET');
  });
  it('are plan and plan-task fields', () => {
    const plan = validatePlan(
      {
        budgets: { per_task: { tokens: 1000 }, per_goal: { usd: 2 } },
        tasks: [{ key: 't1', title: 'T', purpose: 'implement', worker: 'pi', prompt: 'p', acceptance: { commands: ['true'] }, budget: { usd: 0.1 } }],
      },
      'plan.yaml',
    );
    expect(plan.budgets).toEqual({ per_task: { tokens: 1000 }, per_goal: { usd: 2 } });
    expect(plan.tasks[0]!.budget).toEqual({ usd: 0.1 });
    expect(() =>
      validatePlan({ tasks: [{ key: 't1', title: 'T', purpose: 'implement', worker: 'pi', prompt: 'p', acceptance: { commands: ['true'] }, budget: {} }] }, 'plan.yaml'),
    ).toThrow(/tasks\[0\]\.budget: a budget needs usd, tokens or both/);
  });
});

describe('the budget watch of a turn', () => {
  const usage = (input: number, output: number, cost: number | null) =>
    ({ type: 'usage', scope: 'call', inputTokens: input, outputTokens: output, cacheReadTokens: null, cacheWriteTokens: null, costUsd: cost }) as const;
  /** Goal g1 with an approved plan p1 (goal budget 1000 tokens) and two tasks; p1-a has spent 600 tokens. */
  async function store(taskBudget: { tokens?: number; usd?: number } | null) {
    const s = createMemoryRegistryStore();
    await s.update((d) => {
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
      d.tasks['p1-a']!.ledger = addTurn(undefined, ledgerTurn([usage(500, 100, 0.01)], meta('w1')));
      d.tasks['p1-b'] = { ...sampleTask('p1-b'), planId: 'p1', ...(taskBudget ? { budget: taskBudget } : {}) };
    });
    return s;
  }

  it("stops on the usage event that reaches the task's limit, aborting the turn's signal", async () => {
    const s = await store({ usd: 0.05 });
    const parent = new AbortController();
    const watch = await createBudgetWatch({ store: s, task: (await s.read()).tasks['p1-b']! }, parent.signal);
    expect(watch.stopped()).toBeNull();
    watch.onEvent(usage(100, 10, 0.03));
    expect(watch.signal.aborted).toBe(false);
    watch.onEvent({ type: 'text', text: 'x' } as never);
    watch.onEvent(usage(100, 10, 0.02));
    expect(watch.signal.aborted).toBe(true);
    expect(watch.stopped()).toMatchObject({ scope: 'task', reach: { kind: 'usd', limit: 0.05 } });
    expect(budgetReason(watch.stopped()!)).toMatch(/^budget reached: the task budget \(\$0\.0500\): cost \$0\.0500 ≥ limit \$0\.0500\./);
  });

  it("counts the other tasks of the goal against the goal's limit", async () => {
    const s = await store(null);
    const watch = await createBudgetWatch({ store: s, task: (await s.read()).tasks['p1-b']! }, new AbortController().signal);
    watch.onEvent(usage(300, 99, null));
    expect(watch.stopped()).toBeNull();
    watch.onEvent(usage(0, 1, null));
    expect(watch.stopped()).toMatchObject({ scope: 'goal', goalId: 'g1', reach: { kind: 'tokens', limit: 1000, spent: 1000 } });
  });

  it('is stopped before the turn when the budget is already spent, and follows a cancel of the run', async () => {
    const s = await store({ tokens: 600 });
    await s.update((d) => {
      d.tasks['p1-b']!.ledger = addTurn(undefined, ledgerTurn([usage(550, 50, null)], meta('w2')));
    });
    const spent = await createBudgetWatch({ store: s, task: (await s.read()).tasks['p1-b']! }, new AbortController().signal);
    expect(spent.stopped()).toMatchObject({ scope: 'task', reach: { kind: 'tokens', spent: 600 } });
    expect(spent.signal.aborted).toBe(true);
    // p1-a and p1-b have now spent 1200 tokens of goal g1's 1000: p1-a may not start either.
    expect((await createBudgetWatch({ store: s, task: (await s.read()).tasks['p1-a']! }, new AbortController().signal)).stopped()).toMatchObject({ scope: 'goal' });
    const fresh = await store(null);
    const parent = new AbortController();
    const free = await createBudgetWatch({ store: fresh, task: (await fresh.read()).tasks['p1-b']! }, parent.signal);
    expect(free.signal.aborted).toBe(false);
    parent.abort();
    expect(free.signal.aborted).toBe(true);
    expect(free.stopped()).toBeNull();
  });
});
