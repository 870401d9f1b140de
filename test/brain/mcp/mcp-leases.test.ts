/**
 * Leases per MCP session, over real stdio (the SDK's Client spawning `node dist/brain/cli.js mcp`):
 * two sessions on one store never hold the same order at once; an expired lease re-offers the same
 * order id to the other session; a report on a stale lease is an observable reject (journaled);
 * and all of it holds after the holder is SIGKILLed and a new process starts on the store.
 * Also: customer-brief completes with a real tool result (a count of 5 plus the raw ticket list),
 * driven with polyflow's argument names (`instance`, `ok`, `result`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storedRunJournal } from '../../helpers/stored-runs.js';
import { startMcp, type McpProcess } from '../../helpers/mcp-stdio.js';

const started: McpProcess[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) await p.close().catch(() => undefined);
});

async function server(registry: string, extra: string[] = []): Promise<McpProcess> {
  const p = await startMcp(['--registry', registry, ...extra]);
  started.push(p);
  return p;
}

const brief = (day: string) => ({ workflow: 'customer-brief', input: { channel: '#cs', day } });

async function journal(registry: string, runId: string) {
  return (await storedRunJournal(registry)).filter((e) => e.data.run === runId);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('MCP leases', () => {
  it('two sessions on one store never hold the same order at once; only the holder reports it', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-lease-two-'));
    const [a, b] = await Promise.all([server(reg), server(reg)]);
    for (let round = 1; round <= 6; round++) {
      const day = `2026-12-${String(round).padStart(2, '0')}`;
      // Both attach to the same run concurrently: exactly one of them is handed the order.
      const [ra, rb] = await Promise.all([a.call('workflow_start', brief(day)), b.call('workflow_start', brief(day))]);
      expect(ra.structured.run.id).toBe(rb.structured.run.id);
      const holders = [ra, rb].filter((r) => r.structured.order !== null);
      expect(holders, `round ${round}`).toHaveLength(1);
      const [holder, other] = ra.structured.order ? [a, b] : [b, a];
      const held = (ra.structured.order ? ra : rb).structured;
      const waiting = (ra.structured.order ? rb : ra).structured;
      expect(held.lease).toMatchObject({ order: held.order.id });
      expect(waiting).toMatchObject({ order: null, lease: null, leasedUntil: held.lease.expiresAt });
      expect(waiting.instruction).toContain('leased to another session');
      // The other session can neither see nor report it.
      expect((await other.call('workflow_state', { run_id: held.run.id })).structured.order).toBeNull();
      const stolen = await other.call('workflow_report', { run_id: held.run.id, order_id: held.order.id, outcome: 'ok', data: { count: 1 } });
      expect(stolen.structured).toMatchObject({ accepted: false, code: 'lease_held' });
      // The holder reports with its lease id; the next order is leased to it too.
      const next = await holder.call('workflow_report', { run_id: held.run.id, order_id: held.order.id, lease_id: held.lease.id, outcome: 'ok', data: { count: 1 } });
      expect(next.structured).toMatchObject({ accepted: true, order: { kind: 'ask_approval' }, lease: { order: next.structured.order.id } });
      expect((await other.call('workflow_state', { run_id: held.run.id })).structured).toMatchObject({ order: null, leasedUntil: next.structured.lease.expiresAt });
    }
  });

  it("an expired lease re-offers the same order id to the other session, and the expired holder's report is rejected and journaled", async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-lease-expiry-'));
    const a = await server(reg, ['--lease-seconds', '1']);
    const b = await server(reg, ['--lease-seconds', '30']); // B's own grants last long enough to report under load
    const s = await a.call('workflow_start', brief('2026-12-10'));
    const runId = s.structured.run.id;
    const first = s.structured.lease;
    expect(first.id).toMatch(/^lease-[0-9a-f]{20}$/);
    // Wait out A's lease, then B asks: the same order, a new lease.
    await new Promise((r) => setTimeout(r, Date.parse(first.expiresAt) - Date.now() + 50));
    const seen = await b.call('workflow_state', { run_id: runId });
    expect(seen.structured.order.id).toBe(s.structured.order.id);
    expect(seen.structured.lease.id).not.toBe(first.id);
    // A reports on its old lease: refused, nothing applied, journaled.
    const late = await a.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, lease_id: first.id, outcome: 'ok', data: { count: 2 } });
    expect(late.isError).toBe(false);
    expect(late.structured).toMatchObject({ accepted: false, code: 'stale_lease', run: { seq: 1 } });
    expect(late.text).toContain('Refused (stale_lease)');
    const j = await journal(reg, runId);
    expect(j.find((e) => e.kind === 'run.rejected')?.data).toMatchObject({ code: 'stale_lease', order: s.structured.order.id, lease: first.id });
    expect(j.filter((e) => e.kind === 'run.claimed').map((e) => e.data.lease)).toEqual([first.id, seen.structured.lease.id]);
    // B reports on its lease before it lapses: applied once.
    const ok = await b.call('workflow_report', { run_id: runId, order_id: seen.structured.order.id, lease_id: seen.structured.lease.id, outcome: 'ok', data: { count: 2 } });
    expect(ok.structured.accepted, ok.text).toBe(true);
    expect((await journal(reg, runId)).filter((e) => e.kind === 'run.reported')).toHaveLength(1);
  });

  it('after a SIGKILL the lease still holds (in a restarted process too), then the same order id goes to the next session', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-lease-kill-'));
    const a = await server(reg, ['--lease-seconds', '6']);
    const s = await a.call('workflow_start', brief('2026-12-11'));
    const order = s.structured.order;
    const pid = a.transport.pid!;
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => alive(pid)).toBe(false);
    // A new process on the same store (a restarted host): the dead session's lease is durable.
    const b = await server(reg, ['--lease-seconds', '30']);
    const during = await b.call('workflow_start', brief('2026-12-11'));
    if (Date.now() < Date.parse(s.structured.lease.expiresAt) - 200) {
      expect(during.structured).toMatchObject({ status: 'attached', order: null, leasedUntil: s.structured.lease.expiresAt });
      const early = await b.call('workflow_report', { run_id: s.structured.run.id, order_id: order.id, outcome: 'ok', data: { count: 1 } });
      expect(early.structured.code).toBe('lease_held');
    }
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(s.structured.lease.expiresAt) - Date.now() + 50)));
    const after = await b.call('workflow_state', { run_id: s.structured.run.id });
    expect(after.structured.order).toMatchObject({ id: order.id, kind: 'fetch_tickets', attempt: 1 });
    // The dead session's lease id is stale now.
    const ghost = await b.call('workflow_report', { run_id: s.structured.run.id, order_id: order.id, lease_id: s.structured.lease.id, outcome: 'ok', data: { count: 1 } });
    expect(ghost.structured.code).toBe('stale_lease');
    const done = await b.call('workflow_report', { run_id: s.structured.run.id, order_id: order.id, lease_id: after.structured.lease.id, outcome: 'ok', data: { count: 1 } });
    expect(done.structured).toMatchObject({ accepted: true, order: { kind: 'ask_approval' } });
  });
});

describe('polyflow-style calls and real tool results', () => {
  it('customer-brief completes with a real count of 5 and the raw result, driven with instance / ok / result', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-polyflow-'));
    const p = await server(reg);
    // polyflow: workflow_start {workflow, input} → the instance and its first work order.
    const s = await p.call('workflow_start', brief('2026-12-12'));
    const instance = s.structured.run.id;
    expect(s.structured.order.tool).toBe('zendesk_search');
    // The raw zendesk_search result, reported as polyflow does: ok + result, no order id.
    const raw = { count: 5, tickets: [101, 102, 103, 104, 105].map((id) => ({ id, subject: `Refund request ${id}`, status: 'open' })), next_page: null };
    const fetched = await p.call('workflow_report', { instance, ok: true, result: raw });
    expect(fetched.structured, fetched.text).toMatchObject({
      accepted: true,
      order: { kind: 'ask_approval', tool: 'ask_user' },
      run: { state: { state: 'review', vars: { tickets: 2 } } },
    });
    const st = await p.call('workflow_state', { instance });
    expect(st.structured.order.id).toBe(fetched.structured.order.id);
    const approved = await p.call('workflow_report', { instance, ok: true, result: { approved_by: 'dana' } });
    expect(approved.structured, approved.text).toMatchObject({ accepted: false, code: 'bad_data' });
    // APPROVED takes no data and keeps no payload: report it bare.
    const approved2 = await p.call('workflow_report', { instance, ok: true });
    expect(approved2.structured).toMatchObject({ accepted: true, order: { tool: 'slack_send' } });
    const posted = await p.call('workflow_report', { instance, ok: true });
    expect(posted.structured).toMatchObject({ accepted: true, order: null, run: { status: 'finished', outcome: 'posted' } });
    const j = (await p.call('workflow_journal', { instance })).structured.entries as Array<{ kind: string; data: Record<string, any> }>;
    const reported = j.find((e) => e.kind === 'run.reported' && e.data.kind === 'fetch_tickets')!;
    expect(reported.data).toMatchObject({ data: raw, mapped: { count: { real: 5, applied: 2 } }, payload: { tickets: raw.tickets, next_page: null } });
    expect(j.find((e) => e.kind === 'run.action' && e.data.action === 'TICKETS_FETCHED')!.data.data).toEqual({ count: 2 });
    // ok: false is a failure; with permanent it takes the failure branch (a denial).
    const d = await p.call('workflow_start', brief('2026-12-13'));
    await p.call('workflow_report', { instance: d.structured.run.id, ok: true, result: { count: 1 } });
    const denied = await p.call('workflow_report', { instance: d.structured.run.id, ok: false, permanent: true, note: 'no' });
    expect(denied.structured).toMatchObject({ accepted: true, run: { status: 'finished', outcome: 'denied' } });
    // Both names of a pair that disagree are refused, naming them.
    const both = await p.call('workflow_state', { instance, run_id: 'run-other' });
    expect(both.isError).toBe(true);
    expect(both.text).toContain('not both');
    const neither = await p.call('workflow_report', { instance, order_id: 'x' });
    expect(neither.isError).toBe(true);
    expect(neither.text).toContain('missing outcome');
  });
});
