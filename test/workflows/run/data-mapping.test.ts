/**
 * Real data onto the checked domain: the mapping rules' image lies inside the declared domain for
 * every real value tried (so the checker's exhaustive run covers whatever the runtime applies), a
 * rule whose target is outside the domain is refused at load, and the runtime journals the real
 * data while the state holds the mapped value.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { createMemoryRunStore } from '../../../workflows/run/memory-run-store.js';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { loadWorkflow, parseWorkflow } from '../../../workflows/load-workflow.js';
import { mapActionData, mapValue } from '../../../workflows/run/data-mapping.js';
import { createRuntime } from '../../../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../../workflows/workflow-library.js';
import type { DataField, Domain } from '../../../workflows/workflow-schema.js';

const MAPPED = `
name: mapped
input: {}
states: [a, b]
initial: a
terminal: [b]
actions:
  GO:
    extra: payload
    data:
      n: {type: int, min: 0, max: 2, map: saturate}
      size: {type: int, min: 0, max: 3, map: {buckets: [{at_least: 0, value: 0}, {at_least: 1, value: 1}, {at_least: 10, value: 2}, {at_least: 100, value: 3}]}}
      status: {type: enum, values: [pending, done, other], map: {values: {open: pending, new: pending, solved: done, closed: done}, otherwise: other}}
      level: {type: enum, values: [low, high], map: {values: {critical: high}}}
transitions:
  - {action: GO, from: a, to: b}
invariants:
  - {name: ends, terminates: true}
`;

function inDomain(d: Domain, v: unknown): boolean {
  if (d.type === 'int') return typeof v === 'number' && Number.isInteger(v) && v >= d.min && v <= d.max;
  if (d.type === 'enum') return typeof v === 'string' && d.values.includes(v);
  return typeof v === 'boolean';
}

/** A deterministic spread of real values: ints from far below to far above, strings, odd types. */
function realValues(): unknown[] {
  const out: unknown[] = [];
  let x = 12345;
  for (let i = 0; i < 2000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push((x % 2_000_001) - 1_000_000, x % 300, `s${x % 50}`);
  }
  out.push(
    0,
    1,
    2,
    3,
    9,
    10,
    99,
    100,
    -1,
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
    'open',
    'new',
    'solved',
    'closed',
    'pending',
    'done',
    'other',
    'critical',
    'low',
    'high',
    '',
    1.5,
    true,
    null,
    {},
    [],
  );
  return out;
}

describe('data mapping', () => {
  const wf = parseWorkflow(MAPPED, 'mapped.yaml');
  const go = wf.actions.find((a) => a.name === 'GO')!;

  it('every rule maps every real value into the declared domain, or leaves it for the interpreter to refuse', () => {
    let mappedCount = 0;
    for (const field of go.data as DataField[]) {
      for (const v of realValues()) {
        const m = mapValue(field, field.map!, v);
        if (m === undefined) continue;
        mappedCount++;
        expect(inDomain(field, m), `${field.name}: ${JSON.stringify(v)} → ${JSON.stringify(m)}`).toBe(true);
      }
    }
    expect(mappedCount).toBeGreaterThan(8000);
  });

  it('saturate, buckets and rename give the documented values', () => {
    const f = (name: string) => (go.data as DataField[]).find((x) => x.name === name)!;
    expect([5, 2, 0, -3].map((v) => mapValue(f('n'), f('n').map!, v))).toEqual([2, 2, 0, 0]);
    expect([0, 1, 9, 10, 99, 100, 5000, -1].map((v) => mapValue(f('size'), f('size').map!, v))).toEqual([0, 1, 1, 2, 2, 3, 3, undefined]);
    expect(['open', 'solved', 'pending', 'weird'].map((v) => mapValue(f('status'), f('status').map!, v))).toEqual(['pending', 'done', 'pending', 'other']);
    expect(['critical', 'low', 'weird'].map((v) => mapValue(f('level'), f('level').map!, v))).toEqual(['high', 'low', undefined]);
    expect(mapActionData(go, { n: 5, status: 'open', tickets: [{ id: 1 }], next: 'x' })).toEqual({
      data: { n: 2, status: 'pending' },
      mapped: { n: { real: 5, applied: 2 }, status: { real: 'open', applied: 'pending' } },
      payload: { tickets: [{ id: 1 }], next: 'x' },
    });
  });

  it('a rule whose target lies outside the domain is refused at load, naming the field', () => {
    const bad = MAPPED.replace('{at_least: 100, value: 3}', '{at_least: 100, value: 4}');
    expect(() => parseWorkflow(bad, 'bad.yaml')).toThrow(/actions\.GO\.data\.size\.map\.buckets\[3\]\.value/);
    const badEnum = MAPPED.replace('otherwise: other', 'otherwise: elsewhere');
    expect(() => parseWorkflow(badEnum, 'bad.yaml')).toThrow(/outside the declared domain/);
    const wrongType = MAPPED.replace('values: [low, high], map: {values: {critical: high}}', 'values: [low, high], map: saturate');
    expect(() => parseWorkflow(wrongType, 'bad.yaml')).toThrow(/saturate maps onto an int domain/);
  });

  it('customer-brief still checks exhaustively on its declared domain, and a real count of 5 completes it with the raw result journaled', async () => {
    const brief = loadWorkflow(join(process.cwd(), 'workflows/customer-brief'));
    const check = checkWorkflow(brief);
    expect(check).toMatchObject({ admitted: true, exhaustive: true });
    const rt = createRuntime({ store: createMemoryRunStore(), library: createWorkflowLibrary(builtinWorkflowDirs()), agentArea: 'a', instanceArea: 'w' });
    const s = await rt.start('customer-brief', { channel: '#cs', day: '2026-12-01' });
    const raw = { count: 5, tickets: [1, 2, 3, 4, 5].map((id) => ({ id, subject: `ticket ${id}` })), has_more: false };
    const r = await rt.report(s.run!.id, s.order!.id, { outcome: 'ok', data: raw });
    expect(r).toMatchObject({ accepted: true, order: { kind: 'ask_approval' } });
    expect(r.run.state).toMatchObject({ state: 'review', vars: { tickets: 2 } });
    const j = await rt.journal(s.run!.id);
    expect(j.find((e) => e.kind === 'run.reported')?.data).toMatchObject({
      data: raw,
      mapped: { count: { real: 5, applied: 2 } },
      payload: { tickets: raw.tickets, has_more: false },
    });
    expect(j.find((e) => e.kind === 'run.action' && e.data.action === 'TICKETS_FETCHED')?.data.data).toEqual({ count: 2 });
  });
});
