/**
 * The polyflow seed's 14 tests, by their names, against the real `polly mcp` over stdio (the SDK's
 * Client + StdioClientTransport spawning `node dist/brain/cli.js mcp`). One server process serves
 * most tests, each on its own run key (its own day); the restart test uses two processes and
 * SIGKILL. Needs the build (`npm test` builds first).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkWorkflow } from '../../../workflows/check/checker.js';
import { loadWorkflow } from '../../../workflows/load-workflow.js';
import { runIdFor } from '../../../workflows/run/run-identity.js';
import { startMcp, type McpProcess } from '../../helpers/mcp-stdio.js';
import { storedRunJournal, storedRuns } from '../../helpers/stored-runs.js';

const UNSAFE = join(process.cwd(), 'test/fixtures/unsafe-brief');
let registry: string;
let mcp: McpProcess;

beforeAll(async () => {
  registry = mkdtempSync(join(tmpdir(), 'polly-mcp-seed-'));
  mcp = await startMcp(['--registry', registry, '--workflows', UNSAFE, '--agent', 'openworker/cowork', '--workspace', 'acme']);
});
afterAll(async () => {
  await mcp?.close();
});

const input = (day: string, channel = '#cs') => ({ channel, day });

async function journalKinds(runId: string): Promise<Array<{ kind: string; data: Record<string, any> }>> {
  const j = await mcp.call('workflow_journal', { run_id: runId });
  return j.structured.entries as Array<{ kind: string; data: Record<string, any> }>;
}

async function runs(): Promise<Record<string, any>> {
  return storedRuns(registry);
}

describe('polyflow seed tests over stdio', () => {
  it('the admission gate certifies the demo workflow exhaustively', async () => {
    const local = checkWorkflow(loadWorkflow(join(process.cwd(), 'workflows/customer-brief')));
    expect(local.admitted).toBe(true);
    expect(local.exhaustive).toBe(true);
    // The server printed the same verdict, with the same counts, at startup.
    await expect.poll(() => mcp.stderr()).toContain('[polly] admitted: customer-brief');
    expect(mcp.stderr()).toContain(
      `[polly] admitted: customer-brief — paths explored: ${local.pathsExplored} · states seen: ${local.statesSeen} · exhaustive within declared domains`,
    );
  });

  it('workflow_list reports the guarantees the run was admitted under', async () => {
    const r = await mcp.call('workflow_list');
    expect(r.isError).toBe(false);
    const brief = r.structured.workflows.find((w: any) => w.name === 'customer-brief');
    expect(brief.admitted).toBe(true);
    expect(brief.guarantees.map((g: any) => g.name)).toEqual([
      'no-post-without-prior-approval',
      'at-most-one-post',
      'no-empty-brief',
      'approval-is-answered',
      'every-path-terminates',
    ]);
    expect(brief.guarantees[0].says).toBe('post_brief only after APPROVED');
    expect(brief.tools).toEqual({ fetch_tickets: 'zendesk_search', ask_approval: 'ask_user', post_brief: 'slack_send' });
    expect(brief.keyTemplate).toBe('brief:{channel}:{day}');
    const unsafe = r.structured.workflows.find((w: any) => w.name === 'unsafe-brief');
    expect(unsafe).toMatchObject({ admitted: false, refusedBecause: ['no-post-without-prior-approval'], guarantees: [] });
    expect(r.structured).toMatchObject({ agentArea: 'openworker/cowork', instanceArea: 'acme' });
  });

  it('happy path: one order at a time, ending posted', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-01') });
    expect(s.structured.status).toBe('started');
    const runId = s.structured.run.id as string;
    const seen: string[] = [];
    let order = s.structured.order;
    const answers: Record<string, Record<string, unknown>> = { fetch_tickets: { count: 2 }, ask_approval: {}, post_brief: {} };
    while (order) {
      seen.push(`${order.kind}:${order.tool}`);
      // One order at a time: nothing is queued behind the open one.
      expect(s.text.length).toBeGreaterThan(0);
      const st = await mcp.call('workflow_state', { run_id: runId });
      expect(st.structured.run.outbox).toEqual([]);
      expect(st.structured.order.id).toBe(order.id);
      expect(st.structured.instruction).toContain(`order_id "${order.id}"`);
      const r = await mcp.call('workflow_report', { run_id: runId, order_id: order.id, outcome: 'ok', data: answers[order.kind] });
      expect(r.structured.accepted).toBe(true);
      order = r.structured.order;
      if (!order) {
        expect(r.structured.run).toMatchObject({ status: 'finished', outcome: 'posted' });
        expect(r.structured.instruction).toContain('finished in state "posted"');
      }
    }
    expect(seen).toEqual(['fetch_tickets:zendesk_search', 'ask_approval:ask_user', 'post_brief:slack_send']);
    const kinds = (await journalKinds(runId)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'run.order')).toHaveLength(3);
    expect(kinds.at(-1)).toBe('run.finished');
  });

  it('the run key is derived from input, not chosen by the caller', async () => {
    const day = '2026-11-02';
    // Extra arguments (a caller-chosen key or run id) are not part of the tool's schema: refused, naming them; nothing started.
    const extra = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input(day), key: 'my-own-key', run_id: 'run-mine' });
    expect(extra.isError).toBe(true);
    expect(extra.text).toMatch(/Unrecognized key\(s\) in object: 'key', 'run_id'/);
    expect(Object.values(await runs()).some((r: any) => r.input.day === day)).toBe(false);
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input(day) });
    expect(s.structured.status).toBe('started');
    expect(s.structured.run.key).toBe(`brief:#cs:${day}`);
    expect(s.structured.run.id).toBe(runIdFor('openworker/cowork', 'acme', 'customer-brief', `brief:#cs:${day}`));
    // A key smuggled into the input is not a declared field: refused, nothing started.
    const smuggled = await mcp.call('workflow_start', { workflow: 'customer-brief', input: { ...input('2026-11-03'), key: 'mine' } });
    expect(smuggled.structured).toMatchObject({ status: 'refused', code: 'bad_input', run: null });
    expect(smuggled.structured.instruction).toContain('unknown input field "key"');
    expect(Object.values(await runs()).some((r: any) => r.input.day === '2026-11-03')).toBe(false);
  });

  it('an invalid key field is refused with an instruction, not honoured', async () => {
    const r = await mcp.call('workflow_start', { workflow: 'customer-brief', input: { channel: 'general', day: '2026-11-04' } });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ status: 'refused', code: 'bad_input', run: null, order: null });
    expect(r.structured.instruction).toContain('"channel" = "general"');
    expect(r.structured.instruction).toContain('^#[a-z0-9][a-z0-9-]*$');
    expect(r.structured.instruction).toContain('Nothing was started');
    expect(Object.values(await runs()).some((x: any) => x.input.day === '2026-11-04')).toBe(false);
  });

  it('a finished run says so, and says not to start another', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-05') });
    const runId = s.structured.run.id;
    await mcp.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, outcome: 'ok', data: { count: 0 } });
    const again = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-05') });
    expect(again.structured).toMatchObject({ status: 'finished', order: null });
    expect(again.structured.run.id).toBe(runId);
    expect(again.structured.instruction).toContain('has finished in state "empty"');
    expect(again.structured.instruction).toContain('Do not start another run for this key');
  });

  it('start is idempotent: re-attaching returns the run in progress', async () => {
    const a = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-06') });
    const r = await mcp.call('workflow_report', { run_id: a.structured.run.id, order_id: a.structured.order.id, outcome: 'ok', data: { count: 1 } });
    const b = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-06') });
    expect(b.structured.status).toBe('attached');
    expect(b.structured.run.id).toBe(a.structured.run.id);
    expect(b.structured.order.id).toBe(r.structured.order.id);
    expect(b.structured.order.kind).toBe('ask_approval');
    expect(b.structured.run.seq).toBe(r.structured.run.seq);
    expect(Object.values(await runs()).filter((x: any) => x.input.day === '2026-11-06')).toHaveLength(1);
  });

  it('a denial is a result, not a fault — and no post is ever ordered', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-07') });
    const runId = s.structured.run.id;
    const ask = await mcp.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, outcome: 'ok', data: { count: 2 } });
    expect(ask.structured.order.kind).toBe('ask_approval');
    const denied = await mcp.call('workflow_report', { run_id: runId, order_id: ask.structured.order.id, outcome: 'failure', permanent: true, note: 'the human said no' });
    expect(denied.isError).toBe(false);
    expect(denied.structured).toMatchObject({ accepted: true, order: null, run: { status: 'finished', outcome: 'denied' } });
    const j = await journalKinds(runId);
    expect(j.filter((e) => e.kind === 'run.order').map((e) => e.data.kind)).toEqual(['fetch_tickets', 'ask_approval']);
    expect(j.find((e) => e.kind === 'run.reported' && e.data.kind === 'ask_approval')?.data).toMatchObject({
      outcome: 'failure',
      permanent: true,
      applied: 'DENIED',
      note: 'the human said no',
    });
  });

  it('zero tickets ends the run rather than posting an empty brief', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-08') });
    const r = await mcp.call('workflow_report', { run_id: s.structured.run.id, order_id: s.structured.order.id, outcome: 'ok', data: { count: 0 } });
    expect(r.structured).toMatchObject({ accepted: true, order: null, run: { status: 'finished', outcome: 'empty' } });
    const j = await journalKinds(s.structured.run.id);
    expect(j.filter((e) => e.kind === 'run.order').map((e) => e.data.kind)).toEqual(['fetch_tickets']);
  });

  it('a duplicate report is refused, not double-executed', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-09') });
    const runId = s.structured.run.id;
    const first = await mcp.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, outcome: 'ok', data: { count: 2 } });
    expect(first.structured.accepted).toBe(true);
    const dup = await mcp.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, outcome: 'ok', data: { count: 1 } });
    expect(dup.isError).toBe(false);
    expect(dup.structured).toMatchObject({ accepted: false, code: 'duplicate' });
    expect(dup.structured.run.seq).toBe(first.structured.run.seq);
    expect(dup.structured.run.state.vars.tickets).toBe(2);
    const j = await journalKinds(runId);
    expect(j.filter((e) => e.kind === 'run.reported' && e.data.order === s.structured.order.id)).toHaveLength(1);
    expect(j.filter((e) => e.kind === 'run.order' && e.data.kind === 'ask_approval')).toHaveLength(1);
    expect(j.at(-1)).toMatchObject({ kind: 'run.rejected', data: { code: 'duplicate' } });
  });

  it('an out-of-band action that does not apply is an observable reject', async () => {
    const s = await mcp.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-10') });
    const runId = s.structured.run.id;
    const r = await mcp.call('workflow_signal', { run_id: runId, action: 'POSTED' });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ accepted: false, code: 'not_applicable' });
    expect(r.structured.reason).toContain('does not apply in state "gathering"');
    expect(r.structured.run).toMatchObject({ seq: 1, state: { state: 'gathering' } });
    const after = await mcp.call('workflow_state', { run_id: runId });
    expect(after.structured.order.id).toBe(s.structured.order.id);
    expect((await journalKinds(runId)).filter((e) => e.kind !== 'run.claimed').at(-1)).toMatchObject({ kind: 'run.rejected', data: { action: 'POSTED', code: 'not_applicable' } });
    const unknown = await mcp.call('workflow_signal', { run_id: runId, action: 'MERGE' });
    expect(unknown.structured).toMatchObject({ accepted: false, code: 'unknown_action' });
  });

  it('a workflow that can post before approval is REFUSED and cannot be started', async () => {
    expect(mcp.stderr()).toContain('[polly] REFUSED: unsafe-brief\n[polly]   no-post-without-prior-approval\n');
    const r = await mcp.call('workflow_start', { workflow: 'unsafe-brief', input: input('2026-11-11') });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ status: 'refused', code: 'workflow_refused', run: null, order: null, reasons: ['no-post-without-prior-approval'] });
    expect(r.structured.instruction).toContain('cannot be started');
    expect(Object.values(await runs()).some((x: any) => x.workflow === 'unsafe-brief')).toBe(false);
  });

  it('a run outlives the process: restart re-offers the open work order', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-mcp-restart-'));
    // Short leases: the killed session's lease on the approval order lapses in a second (leases are durable).
    const args = ['--registry', reg];
    const p1 = await startMcp([...args, '--lease-seconds', '1']);
    const s = await p1.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-12') });
    const runId = s.structured.run.id;
    const toApproval = await p1.call('workflow_report', { run_id: runId, order_id: s.structured.order.id, outcome: 'ok', data: { count: 1 } });
    const approvalOrder = toApproval.structured.order;
    expect(approvalOrder.kind).toBe('ask_approval');
    const pid = p1.transport.pid!;
    process.kill(pid, 'SIGKILL');
    await expect
      .poll(() => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      })
      .toBe(false);
    await p1.close().catch(() => undefined);

    // Process 2: no shared memory, no transcript. The same open order comes back.
    const p2 = await startMcp(args);
    try {
      expect(p2.transport.pid).not.toBe(pid);
      let again = await p2.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-12') });
      expect(again.structured.status).toBe('attached');
      while (again.structured.order === null) {
        // Still leased to the dead session: hidden until the lease lapses, then the same order comes back.
        expect(again.structured.leasedUntil).toBe(approvalOrder.leaseExpiresAt);
        await new Promise((r) => setTimeout(r, 200));
        again = await p2.call('workflow_start', { workflow: 'customer-brief', input: input('2026-11-12') });
      }
      expect(again.structured.order).toMatchObject({ id: approvalOrder.id, kind: 'ask_approval', attempt: 1 });
      const post = await p2.call('workflow_report', { run_id: runId, order_id: approvalOrder.id, outcome: 'ok' });
      expect(post.structured.order.kind).toBe('post_brief');
      const done = await p2.call('workflow_report', { run_id: runId, order_id: post.structured.order.id, outcome: 'ok' });
      expect(done.structured.run).toMatchObject({ status: 'finished', outcome: 'posted' });
      // A late report of the approval (as if process 1 had finished its tool) is a duplicate.
      const late = await p2.call('workflow_report', { run_id: runId, order_id: approvalOrder.id, outcome: 'ok' });
      expect(late.structured.code).toBe('duplicate');
      const entries = (await storedRunJournal(reg)).filter((e) => e.data.run === runId);
      expect(entries.filter((e) => e.kind === 'run.order' && e.data.kind === 'post_brief')).toHaveLength(1);
      expect(entries.filter((e) => e.kind === 'run.reported' && e.data.kind === 'post_brief')).toHaveLength(1);
    } finally {
      await p2.close();
    }
  });

  it('initialize, tools/list, tools/call over stdio', async () => {
    expect(mcp.client.getServerVersion()).toMatchObject({ name: 'polly', version: '0.1.0' });
    expect(mcp.client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['workflow_list', 'workflow_start', 'workflow_report', 'workflow_state', 'workflow_signal', 'workflow_journal']);
    for (const t of tools) {
      expect(t.description?.length, t.name).toBeGreaterThan(60);
      expect(t.outputSchema?.type, t.name).toBe('object');
    }
    const start = tools.find((t) => t.name === 'workflow_start')!;
    expect(start.inputSchema.required).toEqual(['workflow']);
    expect(start.description).toContain('workflow_report');
    const report = tools.find((t) => t.name === 'workflow_report')!;
    expect((report.inputSchema.properties as any).outcome.enum).toEqual(['ok', 'failure', 'exhausted']);
    const call = await mcp.client.callTool({ name: 'workflow_list', arguments: {} });
    expect((call.structuredContent as any).workflows.length).toBe(3);
    expect((call.content as any)[0].text).toContain('Admitted: customer-brief, polly-task');
    // A fault (unknown run) is a tool error with a message, not a protocol failure.
    const missing = await mcp.call('workflow_state', { run_id: 'run-nope' });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain('no workflow run "run-nope"');
    // Bad arguments are a tool error naming the field.
    const bad = await mcp.call('workflow_report', { run_id: 'x', order_id: 'y', outcome: 'maybe' });
    expect(bad.isError).toBe(true);
    expect(bad.text).toContain('outcome');
  });
});
