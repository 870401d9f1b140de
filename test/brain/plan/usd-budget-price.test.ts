/**
 * A dollar budget Polly cannot price is refused at the plan gate, naming the
 * config key to add (the metering proxy prices requests from config `prices`; an unpriced model's
 * cost is unknown, so a usd limit could never be met). Fails on the code before the metering proxy:
 * such a plan was admitted.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { proposePlan } from '../../../brain/plan/plan-gate.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';

const task = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker: 'claude-code',
  reviewer: 'codex',
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
  ...extra,
});

function config(patch: (c: PollyConfig) => void = () => {}): PollyConfig {
  const c = structuredClone(DEFAULT_CONFIG);
  patch(c);
  return c;
}

describe('plan gate: usd budgets need a price', () => {
  it('refuses a task usd budget whose worker model has no price, naming prices.<model>', async () => {
    const store = createMemoryRegistryStore();
    const r = await proposePlan(store, config(), { tasks: [task('t1', { budget: { usd: 0.5 } })] });
    expect(r.admitted).toBe(false);
    const text = r.counterexamples.join('\n');
    expect(text).toContain('usd_budget_priced');
    expect(text).toContain('task t1 has a usd budget of $0.5000, but model claude-sonnet-4-5 (claude-code) has no price: add prices.claude-sonnet-4-5');
    // The reviewer spends the task's budget too.
    expect(text).toContain('model gpt-5-codex (codex) has no price: add prices.gpt-5-codex');
    expect((await store.read()).plans[r.planId]?.gate).toBe('refused');
  });

  it('refuses a config per-goal usd budget for a worker with no model set, naming workers.<harness>.model', async () => {
    const store = createMemoryRegistryStore();
    const c = config((x) => {
      x.budgets.per_goal = { usd: 2 };
    });
    const r = await proposePlan(store, c, { tasks: [task('t1', { worker: 'pi', reviewer: null })] });
    expect(r.admitted).toBe(false);
    expect(r.counterexamples.join('\n')).toContain("task t1 has the goal's usd budget of $2.00, but its pi worker's model is not set (workers.pi.model)");
  });

  it('admits the same plan once the models have prices, and a tokens budget without any', async () => {
    const store = createMemoryRegistryStore();
    const priced = config((x) => {
      x.prices = { 'claude-sonnet-4-5': { input: 3, output: 15 }, 'gpt-5-codex': { input: 1.25, output: 10 } };
    });
    // (codex signs in with its API key here: metered; see the next block.)
    const env = { OPENAI_API_KEY: 'k' };
    expect((await proposePlan(store, priced, { tasks: [task('t1', { budget: { usd: 0.5 } })] }, { env })).admitted).toBe(true);
    expect((await proposePlan(store, config(), { tasks: [task('t2', { budget: { tokens: 1000 } })] }, { env })).admitted).toBe(true);
  });
});

/**
 * Issue 26: a budget on a worker Polly cannot meter (pi on a built-in provider, codex signed in
 * with a ChatGPT account) would never be enforced: the plan gate refuses it, naming the config that
 * makes the worker meterable. On the code before, such a plan was admitted and ran unbounded.
 */
describe('plan gate: a budget needs a worker Polly can meter', () => {
  const pi = (extra: Record<string, unknown> = {}) => task('t1', { worker: 'pi', reviewer: null, ...extra });
  it('refuses a tokens budget on pi with no workers.pi.base_url, naming it', async () => {
    const r = await proposePlan(createMemoryRegistryStore(), config(), { tasks: [pi({ budget: { tokens: 5000 } })] }, { env: {} });
    expect(r.admitted).toBe(false);
    const text = r.counterexamples.join('\n');
    expect(text).toContain('budget_metered (unmetered-budget)');
    expect(text).toContain('task t1 has a budget of 5000 tokens, but pi runs a built-in provider whose endpoint Polly does not know');
    expect(text).toContain('set workers.pi.base_url (and workers.pi.api)');
  });

  it("refuses the goal's budget on a codex reviewer with no provider and no API key (a ChatGPT login), naming workers.codex.provider and OPENAI_API_KEY", async () => {
    const c = config((x) => {
      x.budgets.per_goal = { tokens: 100_000 };
    });
    const r = await proposePlan(createMemoryRegistryStore(), c, { tasks: [task('t1')] }, { env: {} });
    expect(r.admitted).toBe(false);
    expect(r.counterexamples.join('\n')).toContain(
      "task t1 has the goal's budget of 100000 tokens, but codex has no workers.codex.provider and no OPENAI_API_KEY or CODEX_API_KEY",
    );
  });

  it('admits them once the workers are meterable, and a plan with no budget at all', async () => {
    const c = config((x) => {
      x.workers.pi.base_url = 'http://127.0.0.1:9/v1';
      x.workers.codex.provider = { id: 'p', base_url: 'http://127.0.0.1:9/v1', env_key: 'K' };
    });
    expect((await proposePlan(createMemoryRegistryStore(), c, { tasks: [pi({ budget: { tokens: 5000 } })] }, { env: {} })).admitted).toBe(true);
    expect((await proposePlan(createMemoryRegistryStore(), config(), { tasks: [task('t2', { budget: { tokens: 1 } })] }, { env: { CODEX_API_KEY: 'k' } })).admitted).toBe(true);
    expect((await proposePlan(createMemoryRegistryStore(), config(), { tasks: [pi()] }, { env: {} })).admitted).toBe(true);
  });
});

describe('config prices', () => {
  it('reads prices by model id (any id, dots included) and rejects a negative price at its key', async () => {
    const { parseConfig } = await import('../../../brain/config/config.js');
    const ok = parseConfig('version: 1\nprices:\n  gpt-5.5: {input: 1.25, output: 10}\n  local: {input: 0, output: 0, cache_read: null}\n', 'config.yaml');
    expect(ok.prices).toEqual({ 'gpt-5.5': { input: 1.25, output: 10 }, local: { input: 0, output: 0, cache_read: null } });
    expect(() => parseConfig('version: 1\nprices:\n  m: {input: -1, output: 1}\n', 'config.yaml')).toThrow(
      /config\.yaml:3:\d+: prices\.m\.input: expected a number >= 0, found -1/,
    );
    expect(() => parseConfig('version: 1\nprices:\n  m: {input: 1, outptu: 1}\n', 'config.yaml')).toThrow(/prices\.m\.outptu: unknown key/);
  });
});
