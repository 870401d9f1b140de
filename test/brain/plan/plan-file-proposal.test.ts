/**
 * `polly run FILE` proposes what the file says: the plan as parsed and validated is recorded as it
 * is, every field included (`proposeValidPlan`), never turned back into raw input and validated
 * again (a field that mapping dropped — a task's `base` once was — vanished silently from the
 * admitted plan).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { resolvePlanBudgets } from '../../../brain/plan/budgets.js';
import { proposeValidPlan } from '../../../brain/plan/plan-gate.js';
import { parsePlanFile } from '../../../brain/plan/plan-schema.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';

const FILE = `
goal: ship two things
budgets: {per_task: {usd: 4}, per_goal: {usd: 10, tokens: null}}
tasks:
  - key: a
    title: first
    purpose: implement
    worker: claude-code
    model: sonnet
    reviewer: codex
    prompt: do a
    acceptance: {commands: [npm test], criteria: [it works]}
    base: release/1.x
    budget: {tokens: 50000}
    batch: 1
  - key: b
    title: second
    purpose: explore
    worker: pi
    prompt: look around
    acceptance: {criteria: [a report]}
    depends_on: [a]
`;

describe('plan file → proposal', () => {
  it('records the parsed plan as it is: every field, base, budgets and batch included, in a copy of its own', async () => {
    const plan = parsePlanFile(FILE, 'plan.yaml');
    expect(plan.tasks[0]!.base).toBe('release/1.x');
    const before = structuredClone(plan);
    const store = createMemoryRegistryStore();
    const proposed = await proposeValidPlan(store, DEFAULT_CONFIG, plan, { source: 'plan.yaml' });
    const record = (await store.read()).plans[proposed.planId]!;
    expect(record.tasks).toEqual(plan.tasks);
    expect(record.tasks[0]).toMatchObject({ base: 'release/1.x', budget: { tokens: 50000 } });
    expect(record.batches).toEqual({ a: 1 });
    expect(record.budgets).toEqual(resolvePlanBudgets(DEFAULT_CONFIG, plan.budgets));
    expect(plan).toEqual(before);
  });
});
