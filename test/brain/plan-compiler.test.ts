import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { admitPlan } from '../../brain/plan/plan-compiler.js';
import { validatePlan, type PlanInput } from '../../brain/plan/plan-schema.js';
import { formatStep } from '../../workflows/check/checker.js';

const task = (key: string, over: Partial<PlanInput['tasks'][number]> = {}) => ({
  key,
  title: `task ${key}`,
  purpose: 'implement' as const,
  worker: 'claude-code' as const,
  reviewer: 'codex' as const,
  prompt: 'do it',
  acceptance: { commands: ['npm test'], criteria: [] },
  ...over,
});

describe('plan gate: a plan compiles to workflows checked with Polly guarantees', () => {
  it('admits a two-task plan with cross-vendor reviews and prints the seed line', () => {
    const plan = validatePlan({ tasks: [task('t1'), task('t2', { worker: 'codex', reviewer: 'pi', depends_on: ['t1'] })] }, 'test');
    const verdict = admitPlan('p1', plan, DEFAULT_CONFIG);
    expect(verdict.violations).toEqual([]);
    expect(verdict.admitted).toBe(true);
    expect(verdict.line).toMatch(/^admitted: plan-p1 — paths explored: \d+ · states seen: \d+ · exhaustive within declared domains$/);
    expect(verdict.parts.map((p) => p.part)).toEqual(['schedule', 't1', 't2']);
  });

  it('refuses a same-vendor review with the invariant and a shortest counterexample', () => {
    const plan = validatePlan({ tasks: [task('t1'), task('t2', { worker: 'codex', reviewer: 'codex' })] }, 'test');
    const verdict = admitPlan('p2', plan, DEFAULT_CONFIG);
    expect(verdict.admitted).toBe(false);
    expect(verdict.line).toBe('REFUSED: plan-p2');
    const v = verdict.violations.find((x) => x.invariant === 't2/reviewer-vendor-differs');
    expect(v, JSON.stringify(verdict.violations.map((x) => x.invariant))).toBeDefined();
    const actions = v!.trace.map((s) => s.action);
    expect(actions).toEqual(['START', 'WORKER_DONE', 'TESTS_GREEN', 'PUSHED', 'PR_OPENED']);
    expect(v!.trace.at(-1)!.emitted).toContain('dispatch_reviewer');
    expect(v!.trace.map(formatStep).join('\n')).toContain('reviewer');
    // The other task is fine and is not blamed.
    expect(verdict.violations.every((x) => x.part === 't2')).toBe(true);
  });

  it('refuses six tasks pinned into one batch: more than 5 dispatches in a turn', () => {
    const tasks = ['a', 'b', 'c', 'd', 'e', 'f'].map((k) => task(k, { batch: 1 }));
    const verdict = admitPlan('p3', validatePlan({ tasks }, 'test'), DEFAULT_CONFIG);
    expect(verdict.admitted).toBe(false);
    const v = verdict.violations.find((x) => x.invariant === 'schedule/at-most-5-dispatches-per-turn');
    expect(v).toBeDefined();
    expect(v!.trace.map((s) => s.action)).toEqual(['TURN_START', 'DISPATCH_BATCH_1']);
  });

  it('admits seven unpinned tasks: the schedule itself never dispatches more than 5 per turn', () => {
    const tasks = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((k) => task(k));
    const verdict = admitPlan('p4', validatePlan({ tasks }, 'test'), DEFAULT_CONFIG);
    expect(verdict.violations).toEqual([]);
    expect(verdict.admitted).toBe(true);
  });

  it('rejects malformed plans with the field path', () => {
    expect(() => validatePlan({ tasks: [task('t1', { worker: 'gpt' as never })] }, 'plan.yaml')).toThrow(/tasks\[0\]\.worker/);
    expect(() => validatePlan({ tasks: [task('t1', { depends_on: ['nope'] })] }, 'plan.yaml')).toThrow(/unknown task "nope"/);
    expect(() => validatePlan({ tasks: [task('a', { depends_on: ['b'] }), task('b', { depends_on: ['a'] })] }, 'plan.yaml')).toThrow(/cycle: a → b → a/);
  });
});
