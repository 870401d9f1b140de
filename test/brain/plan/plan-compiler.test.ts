import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { applyAction, initialState } from '../../../workflows/run/interpreter.js';
import type { Workflow } from '../../../workflows/workflow-schema.js';
import { admitPlan } from '../../../brain/plan/plan-compiler.js';
import { validatePlan, type PlanInput } from '../../../brain/plan/plan-schema.js';
import { formatStep } from '../../../workflows/check/checker.js';

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
    expect(v!.trace.map((s) => s.action)).toEqual(['APPROVED', 'TURN_START', 'DISPATCH_BATCH_1']);
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

describe('config bounds go into the checked task workflow', () => {
  const run = (wf: Workflow, actions: Array<[string, Record<string, unknown>?]>): string => {
    let state = initialState(wf, { task: 't1' });
    for (const [a, data] of actions) {
      const step = applyAction(wf, state, a, data ?? {});
      if ('rejected' in step) throw new Error(`${a}: ${step.rejected}`);
      state = step.state;
    }
    return state.state;
  };
  const taskPart = (config: PollyConfig) => {
    const verdict = admitPlan('pb', validatePlan({ tasks: [task('t1')] }, 'test'), config);
    expect(verdict.admitted, verdict.violations.map((v) => v.invariant).join(', ')).toBe(true);
    return verdict.parts.find((p) => p.part === 't1')!.workflow;
  };
  const toReview: Array<[string, Record<string, unknown>?]> = [
    ['START', { vendor: 'claude-code' }],
    ['WORKER_DONE'],
    ['TESTS_GREEN'],
    ['PUSHED'],
    ['PR_OPENED', { reviewer: 'codex' }],
  ];

  it('acceptance.max_attempts 1: the admitted model fails the task on the first red run', () => {
    const config = structuredClone(DEFAULT_CONFIG);
    config.acceptance.max_attempts = 1;
    const wf = taskPart(config);
    expect(wf.variables.find((v) => v.name === 'attempts')).toMatchObject({ type: 'int', max: 0 });
    expect(run(wf, [['START', { vendor: 'claude-code' }], ['WORKER_DONE'], ['TESTS_RED']])).toBe('failed');
    // The default (3) sends two red runs back before failing.
    const three = taskPart(DEFAULT_CONFIG);
    expect(run(three, [['START', { vendor: 'claude-code' }], ['WORKER_DONE'], ['TESTS_RED'], ['WORKER_DONE'], ['TESTS_RED'], ['WORKER_DONE']])).toBe('testing');
    expect(run(three, [['START', { vendor: 'claude-code' }], ['WORKER_DONE'], ['TESTS_RED'], ['WORKER_DONE'], ['TESTS_RED'], ['WORKER_DONE'], ['TESTS_RED']])).toBe('failed');
  });

  it('review.max_rounds 1 and 0: blocking findings go back that many times, then the task fails', () => {
    const one = structuredClone(DEFAULT_CONFIG);
    one.review.max_rounds = 1;
    const wf = taskPart(one);
    expect(wf.variables.find((v) => v.name === 'rounds')).toMatchObject({ type: 'int', max: 1 });
    expect(run(wf, [...toReview, ['REVIEW_BLOCKING']])).toBe('implementing');
    expect(run(wf, [...toReview, ['REVIEW_BLOCKING'], ['WORKER_DONE'], ['TESTS_GREEN'], ['PUSHED'], ['REVIEW_BLOCKING']])).toBe('failed');
    const zero = structuredClone(DEFAULT_CONFIG);
    zero.review.max_rounds = 0;
    expect(run(taskPart(zero), [...toReview, ['REVIEW_BLOCKING']])).toBe('failed');
  });

  it('pr.max_fix_rounds is compiled into the model: that many PR events go back to the worker, the next one parks the task', () => {
    const toReady: Array<[string, Record<string, unknown>?]> = [...toReview, ['REVIEW_CLEAN'], ['MARKED_READY']];
    const round: Array<[string, Record<string, unknown>?]> = [
      ['FEEDBACK', { author: 'maintainer' }],
      ['WORKER_DONE'],
      ['TESTS_GREEN'],
      ['REVIEW_CLEAN'],
      ['PUSHED'],
      ['REPLIED'],
      ['MARKED_READY'],
    ];
    const one = structuredClone(DEFAULT_CONFIG);
    one.pr.max_fix_rounds = 1;
    const r1 = admitPlan('pl', validatePlan({ tasks: [task('t1')] }, 'test'), one);
    expect(r1.admitted, r1.violations.map((v) => `${v.invariant}: ${JSON.stringify(v).slice(0, 600)}`).join('\n')).toBe(true); // the checker proves termination with the bound the run obeys
    const wf = taskPart(one);
    expect(wf.variables.find((v) => v.name === 'fix_rounds')).toMatchObject({ type: 'int', max: 1 });
    expect(run(wf, toReady)).toBe('watching');
    expect(run(wf, [...toReady, ...round])).toBe('watching');
    expect(run(wf, [...toReady, ...round, ['FEEDBACK', { author: 'maintainer' }]])).toBe('parked');
    // A non-maintainer's feedback does not apply: it moves nothing and spends no round (issue 26).
    expect(() => run(wf, [...toReady, ['FEEDBACK', { author: 'other' }]])).toThrow(/^FEEDBACK: /);
    expect(run(wf, [...toReady, ...round, ['FEEDBACK', { author: 'maintainer' }]])).toBe('parked');
    expect(run(wf, [...toReady, ['CONFLICTS'], ['BASE_CONFLICTED'], ['WORKER_DONE'], ['TESTS_RED']])).toBe('parked'); // red re-tests count a round too
    expect(run(wf, [...toReady, ['MERGED']])).toBe('done');
    // The local forge's check red on the merge with the moved base: the base is merged in, then the worker fixes (one round).
    const baseRound: Array<[string, Record<string, unknown>?]> = [
      ['BASE_CHECKS_FAILED'],
      ['BASE_MERGED'],
      ['WORKER_DONE'],
      ['TESTS_GREEN'],
      ['REVIEW_CLEAN'],
      ['PUSHED'],
      ['REPLIED'],
      ['MARKED_READY'],
    ];
    expect(run(wf, [...toReady, ['BASE_CHECKS_FAILED']])).toBe('integrating');
    expect(run(wf, [...toReady, ...baseRound])).toBe('watching');
    expect(run(wf, [...toReady, ...baseRound, ['BASE_CHECKS_FAILED']])).toBe('parked');
    // The default: 3 rounds; 0 parks on the first PR event.
    expect(taskPart(DEFAULT_CONFIG).variables.find((v) => v.name === 'fix_rounds')).toMatchObject({ max: 3 });
    const zero = structuredClone(DEFAULT_CONFIG);
    zero.pr.max_fix_rounds = 0;
    expect(run(taskPart(zero), [...toReady, ['CHECKS_FAILED']])).toBe('parked');
  });

  it('the acceptance lease covers every command at the configured timeout', () => {
    const config = structuredClone(DEFAULT_CONFIG);
    config.acceptance.timeout = 1000;
    const wf = admitPlan('pl', validatePlan({ tasks: [task('t1', { acceptance: { commands: ['npm test', 'npm run lint'], criteria: [] } })] }, 'test'), config).parts.find(
      (p) => p.part === 't1',
    )!.workflow;
    expect(wf.effects.find((e) => e.kind === 'run_acceptance')!.retry.lease_seconds).toBe(2060);
  });
});
