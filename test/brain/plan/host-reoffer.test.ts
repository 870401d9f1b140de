// The model checker gets the host where it matters (issue 28 item 5): a re-offer of an implement
// turn after its remote host was lost is an action of the task's workflow (HOST_LOST), a new
// dispatch within the plan's dispatch bound, bounded by host_losses, and the guarantees still hold.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { admitPlan, compileTaskWorkflow, taskBounds } from '../../../brain/plan/plan-compiler.js';
import { validatePlan } from '../../../brain/plan/plan-schema.js';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { withPollyGuarantees } from '../../../workflows/check/guarantees.js';
import { applyAction, initialState, type RunState } from '../../../workflows/run/interpreter.js';
import type { Workflow } from '../../../workflows/workflow-schema.js';

const plan = validatePlan(
  {
    tasks: [{ key: 't1', title: 'task t1', purpose: 'implement', worker: 'claude-code', reviewer: 'codex', prompt: 'do it', acceptance: { commands: ['npm test'], criteria: [] } }],
  },
  'test',
);
const config = (over: { rounds?: number; dispatches?: number } = {}): PollyConfig => {
  const c = structuredClone(DEFAULT_CONFIG);
  if (over.rounds !== undefined) c.review.max_rounds = over.rounds;
  if (over.dispatches !== undefined) c.policies.spawn_bounds.max_dispatches_per_turn = over.dispatches;
  return c;
};
const compile = (c: PollyConfig): Workflow => compileTaskWorkflow('p1', plan.tasks[0]!, 'codex', taskBounds(c, plan.tasks[0]!));

/** Apply `actions` from the initial state; the state after each, or the refusal. */
function run(wf: Workflow, actions: Array<[string, Record<string, unknown>?]>): RunState {
  let state = initialState(wf, { task: 'p1-t1' });
  for (const [action, data] of actions) {
    const step = applyAction(wf, state, action, data ?? {});
    if ('rejected' in step) throw new Error(`${action}: ${step.rejected}`);
    state = step.state;
  }
  return state;
}

describe('re-offers after a lost host in the task workflow', () => {
  it('default config: one re-offer (what the dispatch bound of 5 leaves after the first dispatch and three reviews); then the task fails', () => {
    const wf = compile(DEFAULT_CONFIG);
    expect(taskBounds(DEFAULT_CONFIG, plan.tasks[0]!).hostReoffers).toBe(1);
    const once = run(wf, [['START', { vendor: 'claude-code' }], ['HOST_LOST']]);
    expect(once.state).toBe('reoffered');
    expect(once.vars.host_losses).toBe(1);
    // The re-offered turn finishes as the first would have.
    expect(run(wf, [['START', { vendor: 'claude-code' }], ['HOST_LOST'], ['WORKER_DONE']]).state).toBe('testing');
    // A second loss: no re-offer left.
    expect(run(wf, [['START', { vendor: 'claude-code' }], ['HOST_LOST'], ['HOST_LOST']]).state).toBe('failed');
    const verdict = admitPlan('p1', plan, DEFAULT_CONFIG);
    expect(verdict.violations).toEqual([]);
    expect(verdict.admitted).toBe(true);
  });

  it('a config whose reviews use up the dispatch bound gets no re-offer: a lost host fails the task', () => {
    const c = config({ rounds: 3 });
    expect(taskBounds(c, plan.tasks[0]!).hostReoffers).toBe(0);
    expect(run(compile(c), [['START', { vendor: 'claude-code' }], ['HOST_LOST']]).state).toBe('failed');
    expect(admitPlan('p1', plan, c).admitted).toBe(true);
  });

  it('a wider dispatch bound gives two re-offers, alternating states so the lost order is dropped', () => {
    const c = config({ dispatches: 8 });
    expect(taskBounds(c, plan.tasks[0]!).hostReoffers).toBe(2);
    const s = run(compile(c), [['START', { vendor: 'claude-code' }], ['HOST_LOST'], ['HOST_LOST']]);
    expect([s.state, s.vars.host_losses]).toEqual(['implementing', 2]);
    expect(run(compile(c), [['START', { vendor: 'claude-code' }], ['HOST_LOST'], ['HOST_LOST'], ['HOST_LOST']]).state).toBe('failed');
    expect(admitPlan('p1', plan, c).admitted).toBe(true);
  });

  it('more re-offers than the bound leaves is REFUSED by the checker, with the trace of lost hosts', () => {
    // The twin: the default config's workflow with two re-offers instead of one.
    const wf = compile(DEFAULT_CONFIG);
    const losses = wf.variables.find((v) => v.name === 'host_losses');
    if (losses?.type !== 'int') throw new Error('host_losses is not an int variable');
    losses.max = 2;
    for (const t of wf.transitions) if (t.when === 'host_losses < 1') t.when = 'host_losses < 2';
    const r = checkWorkflow(withPollyGuarantees(wf, { maxDispatchesPerTurn: 5 }));
    expect(r.admitted).toBe(false);
    const v = r.violations.find((x) => x.invariant === 'at-most-5-dispatches-per-turn')!;
    expect(v.trace.filter((s) => s.action === 'HOST_LOST')).toHaveLength(2);
  });

  it('one PR per task however many re-offers: the invariant is checked and holds', () => {
    const wf = withPollyGuarantees(compile(config({ dispatches: 8 })), { maxDispatchesPerTurn: 8 });
    expect(wf.invariants.map((i) => i.name)).toContain('one-pr-per-task');
    expect(checkWorkflow(wf).admitted).toBe(true);
  });
});
