/**
 * `polly run FILE` proposes what the file says: a plan file parsed and turned back into a proposal
 * validates to the same plan, every field included (a field the mapping dropped — a task's `base`
 * once was — would vanish silently from the admitted plan).
 */
import { describe, expect, it } from 'vitest';
import { parsePlanFile, planToProposal, validatePlan } from '../../../brain/plan/plan-schema.js';

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
  it('round-trips every field, base, budgets and batch included', () => {
    const plan = parsePlanFile(FILE, 'plan.yaml');
    expect(plan.tasks[0]!.base).toBe('release/1.x');
    const again = validatePlan(planToProposal(plan), 'round trip');
    expect(again).toEqual(plan);
    expect(planToProposal(plan).tasks[0]).toMatchObject({ base: 'release/1.x', budget: { tokens: 50000 }, batch: 1 });
  });
});
