/**
 * The model checker covers the plan gate (issue 30 item 5): a plan's compiled schedule starts at
 * the gate, APPROVED is the one approval action whatever front end gave it (the terminal, the
 * dashboard, `polly plan approve`, a maintainer's `/polly approve` comment), and no path dispatches
 * a task before it (`dispatch-only-after-plan-approval`). Broken twins — a schedule that may start
 * a turn at the gate, and one where a comment's own action opens the gate — are refused with the
 * shortest counterexample.
 */
import { describe, expect, test } from 'vitest';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { withPollyGuarantees } from '../../../workflows/check/guarantees.js';
import { PLAN_APPROVAL_INVARIANT, compileScheduleWorkflow } from '../../../brain/plan/plan-compiler.js';
import type { Workflow } from '../../../workflows/workflow-schema.js';
import { createMemoryRunStore } from '../../../workflows/run/memory-run-store.js';
import { createRuntime } from '../../../workflows/run/runtime.js';
import { createWorkflowLibrary } from '../../../workflows/workflow-library.js';

const TASK = {
  key: 't1',
  title: 'Fix sum()',
  purpose: 'implement' as const,
  worker: 'claude-code' as const,
  reviewer: 'pi' as const,
  model: null,
  prompt: 'Make sum() add.',
  acceptance: { commands: ['npm test'], criteria: [], known_red: [] },
  dependsOn: [],
};
const policy = { maxDispatchesPerTurn: 5 };

function schedule(): Workflow {
  return compileScheduleWorkflow('p1', { tasks: [TASK, { ...TASK, key: 't2', title: 'Add median()', dependsOn: ['t1'] }] as never, batches: {} }, 5);
}

describe('the plan gate in the compiled schedule', () => {
  test('the schedule starts at the gate; APPROVED leads on, REJECTED and EXPIRED close it; admitted with the approval invariant', () => {
    const wf = schedule();
    expect(wf.initial).toBe('gate');
    expect(wf.transitions.filter((t) => t.from !== '*' && t.from.includes('gate')).map((t) => [t.action, t.to])).toEqual([
      ['APPROVED', 'idle'],
      ['REJECTED', 'closed'],
      ['EXPIRED', 'closed'],
    ]);
    expect(wf.invariants.map((i) => i.name)).toContain(PLAN_APPROVAL_INVARIANT);
    const r = checkWorkflow(withPollyGuarantees(wf, policy));
    expect(r.violations).toEqual([]);
    expect(r.admitted).toBe(true);
  });

  test('broken twin: a turn may start at the gate → REFUSED for dispatch-only-after-plan-approval, the counterexample dispatches with no APPROVED before it', () => {
    const twin = schedule();
    const start = twin.transitions.find((t) => t.action === 'TURN_START')!;
    start.from = ['gate', 'idle'];
    const r = checkWorkflow(withPollyGuarantees(twin, policy));
    expect(r.admitted).toBe(false);
    const v = r.violations.find((x) => x.invariant === PLAN_APPROVAL_INVARIANT)!;
    expect(v.kind).toBe('requires_before');
    const actions = v.trace.map((s) => s.action);
    expect(actions).toEqual(['TURN_START', 'DISPATCH_t0']);
    expect(actions).not.toContain('APPROVED');
  });

  test('broken twin: an answer of its own ("a reader’s comment") opens the gate instead of APPROVED → REFUSED', () => {
    const twin = schedule();
    twin.actions.push({ ...twin.actions.find((a) => a.name === 'EXPIRED')!, name: 'COMMENT_BY_READER' });
    twin.transitions.push({ action: 'COMMENT_BY_READER', from: ['gate'], to: 'idle', when: null, set: {}, emit: [] });
    const r = checkWorkflow(withPollyGuarantees(twin, policy));
    expect(r.admitted).toBe(false);
    expect(r.violations.find((x) => x.invariant === PLAN_APPROVAL_INVARIANT)?.trace.map((s) => s.action)).toEqual(['COMMENT_BY_READER', 'TURN_START', 'DISPATCH_t0']);
  });

  test('on the runtime: the schedule run refuses a turn at the gate; APPROVED (its `by` journaled as payload) opens it', async () => {
    const wf = schedule();
    const store = createMemoryRunStore();
    const runtime = createRuntime({ store, library: createWorkflowLibrary([], { workflows: [wf] }), agentArea: 'polly', instanceArea: 'brain' });
    const runId = (await runtime.start(wf.name, { plan: 'p1' })).run!.id;
    expect(await runtime.signal(runId, 'TURN_START')).toMatchObject({ accepted: false, code: 'not_applicable' });
    const by = 'github:@alice (issue #12 comment 4242)';
    expect((await runtime.signal(runId, 'APPROVED', { by })).accepted).toBe(true);
    expect((await runtime.signal(runId, 'TURN_START')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'DISPATCH_t0')).accepted).toBe(true);
    const journal = await store.journal();
    expect(journal.find((e) => e.kind === 'run.signal_data' && e.data.action === 'APPROVED')?.data.payload).toEqual({ by });
  });
});
