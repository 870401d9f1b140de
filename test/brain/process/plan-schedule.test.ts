/**
 * The plan's schedule workflow on the real runtime (memory registry store): the admitted model is
 * what bounds the Brain's dispatch decisions. Any step the admitted schedule does not allow — a
 * sixth dispatch in a turn, a dependant before its dependency, a pinned task alone — is refused
 * by the runtime as an observable reject (journaled `run.rejected`), and the run's journal
 * replays through the model (trace validation). A corrupted journal step is reported as a divergence.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { admitPlan } from '../../../brain/plan/plan-compiler.js';
import { validatePlan, type PlanInput } from '../../../brain/plan/plan-schema.js';
import { createMemoryRunStore } from '../../../workflows/run/memory-run-store.js';
import { createRuntime } from '../../../workflows/run/runtime.js';
import { validateTrace } from '../../../workflows/run/trace-validation.js';
import { createWorkflowLibrary } from '../../../workflows/workflow-library.js';

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

/** Admit `tasks` as plan `id` and start its schedule on a runtime over a memory store. */
async function scheduleRun(id: string, tasks: ReturnType<typeof task>[]) {
  const verdict = admitPlan(id, validatePlan({ tasks }, 'test'), DEFAULT_CONFIG);
  expect(verdict.admitted, verdict.violations.map((v) => v.invariant).join(', ')).toBe(true);
  const schedule = verdict.parts.find((p) => p.part === 'schedule')!.workflow;
  const store = createMemoryRunStore();
  const library = createWorkflowLibrary([], { workflows: [schedule] });
  const runtime = createRuntime({ store, library, agentArea: 'polly', instanceArea: 'brain' });
  const started = await runtime.start(schedule.name, { plan: id });
  expect(started.status).toBe('started');
  // The run starts at the plan gate: the approval (whoever gave it) is its first step.
  expect((await runtime.signal(started.run!.id, 'APPROVED', { by: 'human:test (terminal)' })).accepted).toBe(true);
  return { runtime, store, schedule, runId: started.run!.id };
}

describe('the admitted schedule bounds the dispatches on the runtime', () => {
  it('spawn bound 5 with 7 tasks: five dispatches in a turn apply, the sixth is refused and journaled', async () => {
    const { runtime, store, runId } = await scheduleRun(
      'p7',
      ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((k) => task(k)),
    );
    expect((await runtime.signal(runId, 'TURN_START')).accepted).toBe(true);
    for (let i = 0; i < 5; i++) expect((await runtime.signal(runId, `DISPATCH_t${i}`)).accepted, `DISPATCH_t${i}`).toBe(true);
    const sixth = await runtime.signal(runId, 'DISPATCH_t5');
    expect(sixth).toMatchObject({ accepted: false, code: 'not_applicable' });
    const journal = await store.journal();
    expect(journal.filter((e) => e.kind === 'run.rejected' && e.data.action === 'DISPATCH_t5')).toHaveLength(1);
    expect(journal.filter((e) => e.kind === 'run.action' && String(e.data.action).startsWith('DISPATCH_'))).toHaveLength(5);
    // The next turn may dispatch the other two.
    expect((await runtime.signal(runId, 'TURN_END')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'TURN_START')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'DISPATCH_t5')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'DISPATCH_t6')).accepted).toBe(true);
  }, 120_000);

  it('dependencies, batches and a failure skipping its dependants; the journal replays through the model, a corrupted one diverges', async () => {
    const tasks = [task('a'), task('b', { depends_on: ['a'] }), task('c', { depends_on: ['b'] }), task('d', { batch: 1 }), task('e', { batch: 1 })];
    const { runtime, store, schedule, runId } = await scheduleRun('p5', tasks);
    expect((await runtime.signal(runId, 'TURN_START')).accepted).toBe(true);
    // b before its dependency a: refused. d alone although pinned to batch 1: no such action.
    expect(await runtime.signal(runId, 'DISPATCH_t1')).toMatchObject({ accepted: false, code: 'not_applicable' });
    expect(await runtime.signal(runId, 'DISPATCH_t3')).toMatchObject({ accepted: false, code: 'unknown_action' });
    // The batch goes out in one step (two orders), then a.
    const batch = await runtime.signal(runId, 'DISPATCH_BATCH_1');
    expect(batch.accepted).toBe(true);
    expect((await runtime.signal(runId, 'DISPATCH_t0')).accepted).toBe(true);
    const steps = (await store.journal()).filter((e) => e.kind === 'run.action');
    expect(steps.map((e) => [e.data.action, e.data.emitted])).toEqual([
      ['APPROVED', []],
      ['TURN_START', []],
      ['DISPATCH_BATCH_1', ['dispatch_t3', 'dispatch_t4']],
      ['DISPATCH_t0', ['dispatch_t0']],
    ]);
    // The Brain performs the dispatch orders one at a time: each task started.
    const kinds: string[] = [];
    for (;;) {
      const order = await runtime.claim(runId, { owner: 'polly-brain' });
      if (!order) break;
      kinds.push(order.kind);
      expect((await runtime.report(runId, order.id, { outcome: 'ok', attempt: order.attempt })).accepted).toBe(true);
    }
    expect(kinds).toEqual(['dispatch_t3', 'dispatch_t4', 'dispatch_t0']);
    expect((await runtime.signal(runId, 'TURN_END')).accepted).toBe(true);
    // a fails: b and c can never run; FINISH waits until they are skipped.
    expect((await runtime.signal(runId, 'FAIL_t0')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'DONE_t3')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'DONE_t4')).accepted).toBe(true);
    expect(await runtime.signal(runId, 'FINISH')).toMatchObject({ accepted: false, code: 'not_applicable' });
    expect(await runtime.signal(runId, 'SKIP_t2')).toMatchObject({ accepted: false, code: 'not_applicable' }); // c's dependency b has not failed yet
    expect((await runtime.signal(runId, 'SKIP_t1')).accepted).toBe(true);
    expect((await runtime.signal(runId, 'SKIP_t2')).accepted).toBe(true);
    const end = await runtime.signal(runId, 'FINISH');
    expect(end).toMatchObject({ accepted: true, run: { status: 'finished', outcome: 'finished' } });

    const run = (await store.getRun(runId))!;
    const journal = await store.journal();
    const verdict = validateTrace(schedule, run, journal);
    expect(verdict, verdict.line).toMatchObject({ conforms: true, steps: 14, orders: 3 });

    // Corrupt one step: the journal says c was dispatched where the model had b skipped.
    const i = journal.findIndex((e) => e.kind === 'run.action' && e.data.action === 'SKIP_t1');
    const corrupted = structuredClone(journal);
    corrupted[i]!.data.action = 'DISPATCH_t1';
    const bad = validateTrace(schedule, run, corrupted);
    expect(bad.conforms).toBe(false);
    expect(bad.divergence).toMatchObject({ journalSeq: journal[i]!.seq, kind: 'run.action' });
    expect(bad.line).toMatch(/^DIVERGES: .* DISPATCH_t1 is not a transition of plan-p5 in state "idle"/);
    // An emitted effect the model does not emit there diverges too.
    const extra = structuredClone(journal);
    const j = extra.findIndex((e) => e.kind === 'run.action' && e.data.action === 'DISPATCH_t0');
    extra[j]!.data.emitted = ['dispatch_t0', 'dispatch_t1'];
    expect(validateTrace(schedule, run, extra).divergence?.reason).toMatch(/DISPATCH_t0 emits \[dispatch_t0\] in the model, but the journal says \[dispatch_t0, dispatch_t1\]/);
  }, 120_000);
});
