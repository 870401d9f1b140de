/**
 * The durable runtime in-process: leases, retries, stale and queued reports, signals that
 * supersede orders, polly-task started by a signal, one store.updateRun per operation, and two
 * runtimes (two store instances, as two processes would have) racing on one run store directory.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLmdbRunStore } from '../../../workflows/run/lmdb-run-store.js';
import { createMemoryRunStore } from '../../../workflows/run/memory-run-store.js';
import type { RunStore } from '../../../workflows/run/run-store.js';
import { orderIdFor, runIdFor } from '../../../workflows/run/run-identity.js';
import { createRuntime, type Runtime } from '../../../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../../workflows/workflow-library.js';
import { compileTaskWorkflow, taskBounds } from '../../../brain/plan/plan-compiler.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import type { PlanTaskSpec } from '../../../brain/registry/registry-schema.js';

const library = createWorkflowLibrary(builtinWorkflowDirs());
const BRIEF = { channel: '#cs', day: '2026-11-30' };

function setup(store: RunStore = createMemoryRunStore()) {
  let t = Date.parse('2026-11-30T09:00:00Z');
  const clock = {
    now: () => new Date(t),
    advance: (s: number) => {
      t += s * 1000;
    },
  };
  const updates = { count: 0 };
  const counted: RunStore = {
    ...store,
    updateRun: (id, fn) => {
      updates.count++;
      return store.updateRun(id, fn);
    },
  };
  const rt = createRuntime({ store: counted, library, agentArea: 'a', instanceArea: 'w', clock: clock.now });
  return { rt, clock, store, updates };
}

async function journalKinds(rt: Runtime, runId: string): Promise<string[]> {
  return (await rt.journal(runId)).map((e) => e.kind);
}

describe('runtime', () => {
  it('ids are derived: run = hash(areas | workflow | key), order = hash(run, seq, kind, ordinal)', async () => {
    const { rt } = setup();
    const s = await rt.start('customer-brief', BRIEF);
    expect(s.run!.id).toBe(runIdFor('a', 'w', 'customer-brief', 'brief:#cs:2026-11-30'));
    expect(s.order!.id).toBe(orderIdFor(s.run!.id, 1, 'fetch_tickets', 0));
    expect(runIdFor('a', 'w2', 'customer-brief', 'brief:#cs:2026-11-30')).not.toBe(s.run!.id);
    expect(runIdFor('a|w', '', 'customer-brief', 'brief:#cs:2026-11-30')).not.toBe(runIdFor('a', 'w|', 'customer-brief', 'brief:#cs:2026-11-30'));
  });

  it('every operation is one store.updateRun with its journal lines; attach writes nothing', async () => {
    const { rt, updates, store } = setup();
    const s = await rt.start('customer-brief', BRIEF);
    expect(updates.count).toBe(1);
    expect(await journalKinds(rt, s.run!.id)).toEqual(['run.started', 'run.action', 'run.order']);
    const before = (await store.journal()).length;
    await rt.start('customer-brief', BRIEF);
    expect(updates.count).toBe(2);
    expect((await store.journal()).length).toBe(before);
    await rt.claim(s.run!.id, { owner: 'brain' });
    await rt.report(s.run!.id, s.order!.id, { outcome: 'ok', data: { count: 1 } });
    expect(updates.count).toBe(4);
    const j = await rt.journal(s.run!.id);
    expect(j.slice(-4).map((e) => e.kind)).toEqual(['run.claimed', 'run.reported', 'run.action', 'run.order']);
    // The report's lines were one transaction: one timestamp, consecutive seqs.
    const last3 = j.slice(-3);
    expect(new Set(last3.map((e) => e.at)).size).toBe(1);
    expect(last3.map((e) => e.seq)).toEqual([last3[0]!.seq, last3[0]!.seq + 1, last3[0]!.seq + 2]);
  });

  it('leases: held leases block others, renew for the owner, and an expired lease re-offers the same order', async () => {
    const { rt, clock } = setup();
    const s = await rt.start('customer-brief', BRIEF);
    const runId = s.run!.id;
    const a = await rt.claim(runId, { owner: 'brain:1' });
    expect(a).toMatchObject({ id: s.order!.id, leasedBy: 'brain:1', leaseExpiresAt: '2026-11-30T09:05:00.000Z' });
    expect(await rt.claim(runId, { owner: 'brain:2' })).toBeNull();
    clock.advance(100);
    expect(await rt.claim(runId, { owner: 'brain:1' })).toMatchObject({ leaseExpiresAt: '2026-11-30T09:06:40.000Z' });
    clock.advance(301);
    expect(await rt.expireLeases()).toEqual([{ run: runId, order: s.order!.id, owner: 'brain:1' }]);
    const b = await rt.claim(runId, { owner: 'brain:2' });
    expect(b).toMatchObject({ id: s.order!.id, attempt: 1, leasedBy: 'brain:2' });
    expect(await journalKinds(rt, runId)).toContain('run.lease_expired');
    // Either owner's report completes it once; the other's is a duplicate.
    expect((await rt.report(runId, s.order!.id, { outcome: 'ok', data: { count: 0 } })).accepted).toBe(true);
    expect(await rt.report(runId, s.order!.id, { outcome: 'ok', data: { count: 0 } })).toMatchObject({ accepted: false, code: 'duplicate' });
    expect(await rt.claim(runId, { owner: 'brain:2' })).toBeNull();
  });

  it('retries: a transient failure re-offers the same order with attempt+1 after the backoff; then on_exhausted', async () => {
    const { rt, clock } = setup();
    const s = await rt.start('customer-brief', BRIEF);
    const runId = s.run!.id;
    const id = s.order!.id;
    const r1 = await rt.report(runId, id, { outcome: 'failure', note: 'zendesk 503' });
    expect(r1).toMatchObject({ accepted: true, order: { id, attempt: 2, availableAt: '2026-11-30T09:00:30.000Z' } });
    if (r1.accepted) expect(r1.instruction).toContain('It is a retry');
    expect(await rt.claim(runId, { owner: 'o' })).toBeNull(); // backoff not over
    clock.advance(30);
    expect(await rt.claim(runId, { owner: 'o' })).toMatchObject({ id, attempt: 2 });
    // A late report of attempt 1 is stale.
    expect(await rt.report(runId, id, { outcome: 'ok', data: { count: 1 }, attempt: 1 })).toMatchObject({ accepted: false, code: 'stale' });
    await rt.report(runId, id, { outcome: 'failure' });
    const last = await rt.report(runId, id, { outcome: 'failure', attempt: 3 });
    expect(last).toMatchObject({ accepted: true, order: null, run: { status: 'finished', outcome: 'failed' } });
    const j = await rt.journal(runId);
    expect(j.filter((e) => e.kind === 'run.retry').map((e) => e.data.attempt)).toEqual([2, 3]);
    expect(j.find((e) => e.kind === 'run.reported' && e.data.applied === 'FETCH_FAILED')).toBeDefined();
  });

  it('bad completion data is rejected and the order stays open', async () => {
    const { rt } = setup();
    const s = await rt.start('customer-brief', BRIEF);
    // No rule maps a string onto count's int 0..2 (a count of 7 would saturate to 2: see data-mapping.test.ts).
    const r = await rt.report(s.run!.id, s.order!.id, { outcome: 'ok', data: { count: 'seven' } });
    expect(r).toMatchObject({ accepted: false, code: 'bad_data' });
    expect((await rt.state(s.run!.id)).order?.id).toBe(s.order!.id);
    expect(await rt.report(s.run!.id, 'ord-unknown', { outcome: 'ok' })).toMatchObject({ accepted: false, code: 'not_open' });
  });

  it('polly-task waits for START with the vendor; CANCEL supersedes the open order, whose report is then stale', async () => {
    const { rt } = setup();
    const s = await rt.start('polly-task', { task: 't1' });
    expect(s).toMatchObject({ status: 'started', order: null });
    expect(s.instruction).toContain('START with data {vendor: claude-code|codex|pi}');
    const runId = s.run!.id;
    const started = await rt.signal(runId, 'START', { vendor: 'codex' });
    expect(started).toMatchObject({ accepted: true, order: { kind: 'dispatch_implementer', tool: 'dispatch' } });
    const dispatch = started.accepted ? started.order! : null;
    const tests = await rt.report(runId, dispatch!.id, { outcome: 'ok' });
    expect(tests).toMatchObject({ accepted: true, order: { kind: 'run_acceptance' } });
    const cancel = await rt.signal(runId, 'CANCEL');
    expect(cancel).toMatchObject({ accepted: true, order: null, run: { status: 'finished', outcome: 'cancelled' } });
    const orderId = tests.accepted ? tests.order!.id : '';
    expect(await rt.report(runId, orderId, { outcome: 'ok' })).toMatchObject({ accepted: false, code: 'stale' });
    expect(await rt.signal(runId, 'START', { vendor: 'pi' })).toMatchObject({ accepted: false, code: 'finished' });
    expect(await rt.list({ workflow: 'polly-task', status: 'finished' })).toHaveLength(1);
  });

  it('a permanent failure takes on_failure at once (red tests / blocking review are results)', async () => {
    const { rt } = setup();
    const s = await rt.start('polly-task', { task: 't2' });
    const runId = s.run!.id;
    const d = await rt.signal(runId, 'START', { vendor: 'claude-code' });
    const t = await rt.report(runId, d.accepted ? d.order!.id : '', { outcome: 'ok' });
    const red = await rt.report(runId, t.accepted ? t.order!.id : '', { outcome: 'failure', permanent: true, note: '1 test failed' });
    expect(red).toMatchObject({ accepted: true, order: { kind: 'send_followup' }, run: { state: { state: 'implementing', vars: { attempts: 1 } } } });
  });

  it('a step emitting several effects queues them: one open at a time, in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-two-effects-'));
    writeFileSync(
      join(dir, 'workflow.yaml'),
      `name: two-effects
states: [idle, working, done, failed]
initial: idle
terminal: [done, failed]
variables:
  left: {type: int, min: 0, max: 2, initial: 0}
actions:
  START: {}
  A_DONE: {}
  B_DONE: {}
  FAILED: {}
effects:
  a: {tool: tool_a, on_ok: A_DONE, on_failure: FAILED, retry: {max_attempts: 1, backoff_seconds: 0, lease_seconds: 60}}
  b: {tool: tool_b, on_ok: B_DONE, on_failure: FAILED, retry: {max_attempts: 1, backoff_seconds: 0, lease_seconds: 60}}
transitions:
  - {action: START, from: idle, to: working, set: {left: 2}, emit: [a, b]}
  - {action: A_DONE, from: working, when: "left == 2", set: {left: 1}}
  - {action: B_DONE, from: working, to: done, when: "left == 1", set: {left: 0}}
  - {action: FAILED, from: working, to: failed}
`,
    );
    const lib = createWorkflowLibrary([dir]);
    expect(lib.get('two-effects')?.line).toMatch(/^admitted: two-effects/);
    const rt = createRuntime({ store: createMemoryRunStore(), library: lib, agentArea: 'a', instanceArea: 'w' });
    const s = await rt.start('two-effects', {});
    expect(s.order).toMatchObject({ kind: 'a', ordinal: 0 });
    expect(s.run!.outbox).toHaveLength(1);
    const bId = s.run!.outbox![0]!.id;
    expect(await rt.report(s.run!.id, bId, { outcome: 'ok' })).toMatchObject({ accepted: false, code: 'not_open' });
    const next = await rt.report(s.run!.id, s.order!.id, { outcome: 'ok' });
    expect(next).toMatchObject({ accepted: true, order: { id: bId, kind: 'b', ordinal: 1 } });
    expect(await rt.report(s.run!.id, bId, { outcome: 'ok' })).toMatchObject({ accepted: true, run: { outcome: 'done' } });
  });

  it('two runtimes on one run store directory (two store instances) apply a raced report exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-runtime-race-'));
    const one = createRuntime({ store: createLmdbRunStore(dir), library, agentArea: 'a', instanceArea: 'w' });
    const two = createRuntime({ store: createLmdbRunStore(dir), library, agentArea: 'a', instanceArea: 'w' });
    const [s1, s2] = await Promise.all([one.start('customer-brief', BRIEF), two.start('customer-brief', BRIEF)]);
    expect([s1.status, s2.status].sort()).toEqual(['attached', 'started']);
    expect(s1.order!.id).toBe(s2.order!.id);
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => one.report(s1.run!.id, s1.order!.id, { outcome: 'ok', data: { count: 2 } })),
      ...Array.from({ length: 4 }, () => two.report(s1.run!.id, s1.order!.id, { outcome: 'ok', data: { count: 2 } })),
    ]);
    expect(results.filter((r) => r.accepted)).toHaveLength(1);
    expect(results.filter((r) => !r.accepted).map((r) => !r.accepted && r.code)).toEqual(Array(7).fill('duplicate'));
    const j = await createLmdbRunStore(dir).journal();
    expect(j.filter((e) => e.kind === 'run.order' && e.data.kind === 'ask_approval')).toHaveLength(1);
    expect(j.map((e) => e.seq)).toEqual(j.map((_e, i) => i + 1));
  });

  it('a compiled plan task added to the library starts on its own (single-valued START) and runs to ready, Brain-style', async () => {
    const task: PlanTaskSpec = {
      key: 't1',
      title: 'Fix sum',
      purpose: 'implement',
      worker: 'claude-code',
      model: null,
      reviewer: 'codex',
      prompt: 'Fix sum',
      acceptance: { commands: ['npm test'], criteria: [] },
      dependsOn: [],
    };
    const lib = createWorkflowLibrary(builtinWorkflowDirs());
    const entry = lib.add(compileTaskWorkflow('p1', task, 'codex', taskBounds(DEFAULT_CONFIG, task)));
    expect(entry).toMatchObject({ name: 'plan-p1-t1', admitted: true });
    expect(lib.add(compileTaskWorkflow('p1', task, 'codex', taskBounds(DEFAULT_CONFIG, task)))).toBe(entry);
    const rt = createRuntime({ store: createMemoryRunStore(), library: lib, agentArea: 'brain', instanceArea: 'repo' });
    const s = await rt.start('plan-p1-t1', { task: 't1' });
    expect(s.order).toMatchObject({ kind: 'dispatch_implementer', tool: 'dispatch' });
    const tools: string[] = [];
    const data: Record<string, Record<string, unknown>> = { open_draft_pr: { reviewer: 'codex' } };
    for (;;) {
      const order = await rt.claim(s.run!.id, { owner: 'brain:42' });
      if (!order) break;
      tools.push(order.tool);
      const r = await rt.report(s.run!.id, order.id, { outcome: 'ok', data: data[order.tool] ?? {} });
      expect(r.accepted).toBe(true);
    }
    expect(tools).toEqual(['dispatch', 'run_acceptance', 'push', 'open_draft_pr', 'dispatch_review', 'mark_ready']);
    // Ready: the run watches the PR (no open order) until a PR event or a human's merge.
    expect((await rt.state(s.run!.id)).run).toMatchObject({ status: 'running', state: { state: 'watching' }, openOrder: null });
    expect(await rt.signal(s.run!.id, 'MERGED')).toMatchObject({ accepted: true, run: { status: 'finished', outcome: 'done' } });
  });
});
