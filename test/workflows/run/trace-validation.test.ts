/**
 * A run started under an earlier version of its workflow and taken over by today's runtime (an
 * upgraded Polly): a variable declared since is read as its initial value by the runtime and by
 * trace validation (said on the verdict line), and a step taken before the journal began (the plan
 * gate's approval, brain/process/schedule-gate-upgrade.ts) is replayed only when the caller names
 * it as a preamble. Real runtime on one LMDB run store per test, two workflow versions by the same name.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLmdbRunStore } from '../../../workflows/run/lmdb-run-store.js';
import { createRuntime } from '../../../workflows/run/runtime.js';
import { validateTrace } from '../../../workflows/run/trace-validation.js';
import { createWorkflowLibrary } from '../../../workflows/workflow-library.js';

const EFFECTS = `effects:
  work: {tool: do_work, on_ok: WORKED, on_failure: FAILED, retry: {max_attempts: 1, backoff_seconds: 0, lease_seconds: 60}}`;

/** Version 1: starts idle, no `seen` variable. */
const V1 = `name: upgrade-me
states: [idle, working, done, failed]
initial: idle
terminal: [done, failed]
variables:
  rounds: {type: int, min: 0, max: 2, initial: 0}
actions:
  GO: {}
  WORKED: {}
  FAILED: {}
${EFFECTS}
transitions:
  - {action: GO, from: idle, to: working, set: {rounds: 1}, emit: [work]}
  - {action: WORKED, from: working, to: done}
  - {action: FAILED, from: working, to: failed}
`;

/** Version 2: a gate before idle, and a variable `seen` that only FAILED sets. */
const V2 = `name: upgrade-me
states: [gate, idle, working, done, failed]
initial: gate
terminal: [done, failed]
variables:
  rounds: {type: int, min: 0, max: 2, initial: 0}
  seen: {type: enum, values: [nobody, someone], initial: nobody}
actions:
  APPROVED: {extra: payload}
  GO: {}
  WORKED: {}
  FAILED: {}
${EFFECTS}
transitions:
  - {action: APPROVED, from: gate, to: idle}
  - {action: GO, from: idle, to: working, set: {rounds: 1}, emit: [work]}
  - {action: WORKED, from: working, to: done}
  - {action: FAILED, from: working, to: failed, set: {seen: someone}}
`;

function library(text: string) {
  const dir = mkdtempSync(join(tmpdir(), 'polly-upgrade-wf-'));
  mkdirSync(join(dir, 'upgrade-me'));
  writeFileSync(join(dir, 'upgrade-me', 'workflow.yaml'), text);
  const lib = createWorkflowLibrary([dir]);
  expect(lib.get('upgrade-me')?.line).toMatch(/^admitted: upgrade-me/);
  return lib;
}

/** A run begun under V1 (GO taken, its order open), then stepped by a V2 runtime on the same store. */
async function upgradedRun(outcome: 'ok' | 'failure') {
  const dir = mkdtempSync(join(tmpdir(), 'polly-upgrade-runs-'));
  const old = createLmdbRunStore(dir);
  const v1 = createRuntime({ store: old, library: library(V1), agentArea: 'a', instanceArea: 'w' });
  const s = await v1.start('upgrade-me', {});
  const go = await v1.signal(s.run!.id, 'GO');
  if (!go.accepted || !go.order) throw new Error(`GO was not accepted with an order: ${JSON.stringify(go)}`);
  expect(go.order.kind).toBe('work');
  await old.close();
  const store = createLmdbRunStore(dir);
  const lib2 = library(V2);
  const v2 = createRuntime({ store, library: lib2, agentArea: 'a', instanceArea: 'w' });
  const attached = await v2.start('upgrade-me', {});
  expect(attached.status).toBe('attached');
  expect(attached.run!.state).toEqual({ state: 'working', vars: { rounds: 1 } });
  const reported = await v2.report(s.run!.id, go.order.id, { outcome, permanent: true });
  if (!reported.accepted) throw new Error(`the V2 runtime refused the report: ${reported.code}: ${reported.reason}`);
  const wf = lib2.get('upgrade-me')!.workflow!;
  const journal = await v2.journal(s.run!.id);
  await store.close();
  return { wf, reported, run: reported.run, journal };
}

describe('trace validation of a run begun under an earlier version of its workflow', () => {
  it('a variable declared since is read as its initial value by the runtime, and the verdict says so', async () => {
    const { wf, reported, run, journal } = await upgradedRun('ok');
    // The V2 runtime steps the V1 record (before: "variable seen = undefined is outside its declared domain").
    expect(reported).toMatchObject({ accepted: true, run: { status: 'finished', outcome: 'done' } });
    expect(run.state).toEqual({ state: 'done', vars: { rounds: 1, seen: 'nobody' } });
    const preamble = { action: 'APPROVED', data: { by: 'human:tester (terminal)' }, why: 'gate passed before this run began' };
    const v = validateTrace(wf, run, journal, { preamble });
    expect(v.conforms).toBe(true);
    expect(v.line).toBe(`conforms: ${run.id} (upgrade-me) — 2 steps, 1 orders; gate passed before this run began`);
    // Without the preamble the journal's first step leaves a state the model has not reached.
    expect(validateTrace(wf, run, journal).divergence?.reason).toBe('GO is recorded from state "idle", but the run was in "gate"');
    // A preamble the model refuses is a divergence, not an excuse.
    expect(validateTrace(wf, run, journal, { preamble: { ...preamble, action: 'GO' } }).divergence?.reason).toMatch(
      /^gate passed before this run began, but GO is not a transition of upgrade-me from "gate"/,
    );
  });

  it('a record that does not hold a declared variable conforms only while the replay holds its initial value', async () => {
    const { wf, run, journal } = await upgradedRun('ok');
    const preamble = { action: 'APPROVED', data: {}, why: 'gate passed before this run began' };
    const oldRecord = { ...run, state: { state: 'done', vars: { rounds: 1 } } };
    expect(validateTrace(wf, oldRecord, journal, { preamble }).line).toMatch(/; declared after this run began, read as initial: seen = "nobody"$/);

    const failed = await upgradedRun('failure');
    expect(failed.run.state).toEqual({ state: 'failed', vars: { rounds: 1, seen: 'someone' } });
    const stripped = { ...failed.run, state: { state: 'failed', vars: { rounds: 1 } } };
    const bad = validateTrace(failed.wf, stripped, failed.journal, { preamble });
    expect(bad.conforms).toBe(false);
    expect(bad.divergence?.reason).toMatch(
      /the run record holds failed \{"rounds":1\} \(without seen: read as initial\), but its journal replays to failed \{"rounds":1,"seen":"someone"\}/,
    );
  });
});
