/**
 * Two `polly mcp` processes racing on one store (the same `--registry`): both attach to the same
 * runs and report every order several times at once; every report is applied exactly once, and
 * the run store's journal stays gapless. Needs the build.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMcp, type McpProcess } from '../../helpers/mcp-stdio.js';
import { storedRunJournal, storedRuns } from '../../helpers/stored-runs.js';

let registry: string;
let one: McpProcess;
let two: McpProcess;

beforeAll(async () => {
  registry = mkdtempSync(join(tmpdir(), 'polly-mcp-race-'));
  [one, two] = await Promise.all([startMcp(['--registry', registry]), startMcp(['--registry', registry])]);
}, 60_000);
afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
});

describe('two polly mcp processes on one store', () => {
  it('apply every raced report exactly once', async () => {
    const days = ['2026-12-01', '2026-12-02', '2026-12-03', '2026-12-04'];
    const answers: Record<string, Record<string, unknown>> = { fetch_tickets: { count: 2 }, ask_approval: {}, post_brief: {} };
    const reported: string[] = [];
    await Promise.all(
      days.map(async (day) => {
        const input = { channel: '#race', day };
        const [a, b] = await Promise.all([one.call('workflow_start', { workflow: 'customer-brief', input }), two.call('workflow_start', { workflow: 'customer-brief', input })]);
        expect([a.structured.status, b.structured.status].sort()).toEqual(['attached', 'started']);
        const runId = a.structured.run.id as string;
        expect(b.structured.run.id).toBe(runId);
        // The first order is leased to whichever session asked first; the other is shown none.
        const offered = [a.structured.order, b.structured.order].filter(Boolean);
        expect(offered).toHaveLength(1);
        let order = offered[0] as { id: string; kind: string } | null;
        while (order) {
          const { id, kind } = order;
          const results = await Promise.all(
            [one, two, one, two, one, two].map((p) => p.call('workflow_report', { run_id: runId, order_id: id, outcome: 'ok', data: answers[kind] })),
          );
          const accepted = results.filter((r) => r.structured.accepted === true);
          expect(accepted, `${day} ${kind}`).toHaveLength(1);
          // The five others are refused: a duplicate once the first report is applied, or lease_held
          // when it reached the store first from the session that does not hold the order's lease.
          const codes = results.filter((r) => r.structured.accepted === false).map((r) => r.structured.code);
          expect(codes).toHaveLength(5);
          for (const code of codes) expect(['duplicate', 'lease_held']).toContain(code);
          reported.push(id);
          order = accepted[0]!.structured.order;
        }
        const state = await two.call('workflow_state', { run_id: runId });
        expect(state.structured.run).toMatchObject({ status: 'finished', outcome: 'posted', seq: 4 });
      }),
    );
    expect(reported).toHaveLength(days.length * 3);
    const journal = await storedRunJournal(registry);
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_e, i) => i + 1));
    for (const id of reported)
      expect(
        journal.filter((e) => e.kind === 'run.reported' && e.data.order === id),
        id,
      ).toHaveLength(1);
    expect(journal.filter((e) => e.kind === 'run.order')).toHaveLength(days.length * 3);
    expect(journal.filter((e) => e.kind === 'run.started')).toHaveLength(days.length);
    expect(Object.values(await storedRuns(registry)).map((r) => r.outcome)).toEqual(Array(days.length).fill('posted'));
  }, 120_000);
});
