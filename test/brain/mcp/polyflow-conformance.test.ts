/**
 * Conformance of `polly mcp` with the behaviours polyflow's own tests name (cognitive-fab/polyflow:
 * test/e2e.test.mjs, test/gate.test.mjs, test/mcp.test.mjs), case by case, written for Polly: the
 * real server over stdio, driven by the SDK's Client (StdioClientTransport), with polyflow's demo
 * workflow and its broken twin restated in Polly's format (test/fixtures/polyflow/) and served as
 * the library of the agent area openworker/cowork (`<store>/agents/openworker/cowork/workflows/`).
 * Where Polly answers differently from polyflow, the case asserts Polly's answer and docs/mcp.md
 * says why. One server serves the cases, each on its own day (the run key); the restart case adds
 * a short-lease process on the same store and SIGKILLs it. Also here: the tool annotations, the
 * protocol errors of the MCP specification (under the SDK client's 2025-11-25 and a raw 2025-06-18
 * session), and that two agent areas list different libraries. Needs the build.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { runIdFor } from '../../../workflows/run/run-identity.js';
import { CLI, startMcp, type McpProcess } from '../../helpers/mcp-stdio.js';
import { storedRuns } from '../../helpers/stored-runs.js';

const AREA = ['--agent', 'openworker/cowork', '--workspace', 'acme'];
const BRIEF = 'polyflow-brief';
let registry: string;
let mcp: McpProcess;

beforeAll(async () => {
  registry = mkdtempSync(join(tmpdir(), 'polly-polyflow-'));
  const library = join(registry, 'agents', 'openworker', 'cowork', 'workflows');
  mkdirSync(library, { recursive: true });
  for (const wf of ['customer-brief', 'unsafe-brief']) cpSync(join(process.cwd(), 'test/fixtures/polyflow', wf), join(library, wf), { recursive: true });
  mcp = await startMcp(['--registry', registry, ...AREA]);
});
afterAll(async () => {
  await mcp?.close();
});

const start = (date: string, extra: Record<string, unknown> = {}) => mcp.call('workflow_start', { workflow: BRIEF, input: { date }, ...extra });
const report = (runId: string, orderId: string, outcome: 'ok' | 'failure', more: Record<string, unknown> = {}) =>
  mcp.call('workflow_report', { run_id: runId, order_id: orderId, outcome, ...more });
const journal = async (runId: string): Promise<Array<{ kind: string; data: Record<string, any> }>> => (await mcp.call('workflow_journal', { run_id: runId })).structured.entries;
const runsOn = async (date: string) => Object.values(await storedRuns(registry)).filter((r: any) => r.input.date === date);

describe("polyflow's behaviours against polly mcp", () => {
  it('the admission gate certifies the demo workflow exhaustively', async () => {
    const line = mcp.stderr().match(/\[polly\] admitted: polyflow-brief — paths explored: (\d+) · states seen: (\d+) · exhaustive within declared domains/);
    expect(line, mcp.stderr()).not.toBeNull();
    const entry = (await mcp.call('workflow_list')).structured.workflows.find((w: any) => w.name === BRIEF);
    expect(entry.pathsExplored).toBe(Number(line![1]));
    expect(entry.pathsExplored).toBeGreaterThan(0);
    expect(entry.guarantees.map((g: any) => g.name)).toContain('no-post-without-prior-approval');
  });

  it('workflow_list reports the guarantees the run was admitted under', async () => {
    const r = await mcp.call('workflow_list');
    expect(r.isError).toBe(false);
    const wf = r.structured.workflows.find((w: any) => w.name === BRIEF);
    expect(wf.admitted).toBe(true);
    expect(wf.guarantees.map((g: any) => g.name)).toEqual([
      'at-most-one-post-per-path',
      'no-post-without-prior-approval',
      'post-implies-approval-was-requested',
      'draft-implies-prior-fetch',
      'at-most-one-fetch',
      'no-empty-brief',
      'every-path-terminates',
    ]);
    expect(wf.tools).toEqual({ fetch_tickets: 'github_search_issues', draft_brief: 'ask', request_approval: 'ask_user', post_brief: 'slack_send' });
    expect(wf.keyTemplate).toBe('{date}');
  });

  it('happy path: one order at a time, ending posted', async () => {
    let v = await start('2026-08-25');
    const runId = v.structured.run.id;
    const states: string[] = [];
    const tools: string[] = [];
    const data: Record<string, Record<string, unknown>> = { github_search_issues: { count: 3, issues: ['#1', '#2', '#3'] } };
    let order = v.structured.order;
    while (order) {
      states.push(v.structured.run.state.state);
      tools.push(order.tool);
      // One order at a time: nothing is queued behind the open one.
      const st = await mcp.call('workflow_state', { run_id: runId });
      expect(st.structured.order.id).toBe(order.id);
      expect(st.structured.run.outbox).toEqual([]);
      v = await report(runId, order.id, 'ok', data[order.tool] ? { data: data[order.tool] } : {});
      expect(v.structured.accepted).toBe(true);
      // The drafting order carries the state it drafts from: 3 tickets are "several" (2) on the checked domain.
      if (order.tool === 'github_search_issues') expect(v.structured.order.args.vars).toMatchObject({ tickets: 2 });
      order = v.structured.order;
    }
    expect(tools).toEqual(['github_search_issues', 'ask', 'ask_user', 'slack_send']);
    expect(states).toEqual(['gathering', 'drafting', 'review', 'posting']);
    expect(v.structured.run).toMatchObject({ status: 'finished', outcome: 'posted', state: { state: 'posted' } });
    expect(v.structured.instruction).toContain('finished in state "posted"');
  });

  it('the run key is derived from input, not chosen by the caller', async () => {
    const a = await start('2026-02-01');
    expect(a.structured.run.key).toBe('2026-02-01');
    expect(a.structured.run.id).toBe(runIdFor('openworker/cowork', 'acme', BRIEF, '2026-02-01'));
    // polyflow ignores a supplied key with a note; Polly's schema has no key argument, so it is refused, naming it, and nothing starts.
    const renamed = await start('2026-02-01', { key: '2026-02-01-r2' });
    expect(renamed.isError).toBe(true);
    expect(renamed.text).toContain("Unrecognized key(s) in object: 'key'");
    const again = await start('2026-02-01');
    expect(again.structured).toMatchObject({ status: 'attached', run: { id: a.structured.run.id } });
    expect(await runsOn('2026-02-01')).toHaveLength(1);
  });

  it('an invalid key field is refused with an instruction, not honoured', async () => {
    const bad = await start('2026-02-01-r2');
    expect(bad.isError).toBe(false);
    expect(bad.structured).toMatchObject({ status: 'refused', code: 'bad_input', run: null, order: null });
    expect(bad.structured.instruction).toContain('"date" = "2026-02-01-r2"');
    expect(bad.structured.instruction).toContain('^[0-9]{4}-[0-9]{2}-[0-9]{2}$');
    expect(bad.structured.instruction).toContain('Nothing was started');
    expect(await runsOn('2026-02-01-r2')).toHaveLength(0);
  });

  it('a finished run says so, and says not to start another', async () => {
    const v = await start('2026-02-02');
    const done = await report(v.structured.run.id, v.structured.order.id, 'ok', { data: { count: 0 } });
    expect(done.structured.run.status).toBe('finished');
    const again = await start('2026-02-02');
    expect(again.structured).toMatchObject({ status: 'finished', order: null, run: { id: v.structured.run.id } });
    expect(again.structured.instruction).toContain('Do not start another run for this key');
  });

  it('start is idempotent: re-attaching returns the run in progress', async () => {
    const a = await start('2026-01-02');
    expect(a.structured.run.state.state).toBe('gathering');
    const b = await start('2026-01-02');
    expect(b.structured.status).toBe('attached');
    expect(b.structured.run.id).toBe(a.structured.run.id);
    expect(b.structured.run.state.state).toBe('gathering');
    expect(b.structured.order.id).toBe(a.structured.order.id);
    expect(await runsOn('2026-01-02')).toHaveLength(1);
  });

  it('a denial is a result, not a fault — and no post is ever ordered', async () => {
    let v = await start('2026-01-03');
    const runId = v.structured.run.id;
    v = await report(runId, v.structured.order.id, 'ok', { data: { count: 3 } });
    v = await report(runId, v.structured.order.id, 'ok');
    expect(v.structured.order.tool).toBe('ask_user');
    // polyflow's ok: false is accepted as its alias of outcome "failure".
    const denied = await mcp.call('workflow_report', { instance: runId, order_id: v.structured.order.id, ok: false, permanent: true, note: 'not-ready' });
    expect(denied.isError).toBe(false);
    expect(denied.structured).toMatchObject({
      accepted: true,
      order: null,
      run: { status: 'finished', outcome: 'denied', state: { state: 'denied', vars: { reason: 'not-ready' } } },
    });
    const j = await journal(runId);
    expect(j.filter((e) => e.kind === 'run.order').map((e) => e.data.kind)).toEqual(['fetch_tickets', 'draft_brief', 'request_approval']);
  });

  it('zero tickets ends the run rather than posting an empty brief', async () => {
    const v = await start('2026-01-04');
    const r = await report(v.structured.run.id, v.structured.order.id, 'ok', { data: { count: 0 } });
    expect(r.structured).toMatchObject({ accepted: true, order: null, run: { status: 'finished', state: { state: 'denied', vars: { reason: 'no-empty-brief' } } } });
    expect((await journal(v.structured.run.id)).filter((e) => e.kind === 'run.order').map((e) => e.data.kind)).toEqual(['fetch_tickets']);
  });

  it('a duplicate report is refused, not double-executed', async () => {
    const v = await start('2026-01-05');
    const runId = v.structured.run.id;
    const first = await report(runId, v.structured.order.id, 'ok', { data: { count: 1 } });
    expect(first.structured.run.state).toMatchObject({ state: 'drafting', vars: { tickets: 1 } });
    const again = await report(runId, v.structured.order.id, 'ok', { data: { count: 3 } });
    expect(again.isError).toBe(false);
    expect(again.structured).toMatchObject({ accepted: false, code: 'duplicate' });
    const state = await mcp.call('workflow_state', { run_id: runId });
    expect(state.structured.run.state.vars.tickets).toBe(1);
    expect(state.structured.run.seq).toBe(first.structured.run.seq);
  });

  it('an out-of-band action that does not apply is an observable reject', async () => {
    const v = await start('2026-01-06');
    const runId = v.structured.run.id;
    const signalled = await mcp.call('workflow_signal', { run_id: runId, action: 'POST_DONE' });
    expect(signalled.isError).toBe(false);
    expect(signalled.structured).toMatchObject({ accepted: false, code: 'not_applicable', run: { state: { state: 'gathering' } } });
    const rejected = (await journal(runId)).find((e) => e.kind === 'run.rejected');
    expect(rejected?.data).toMatchObject({ action: 'POST_DONE', code: 'not_applicable' });
  });

  it('a workflow that can post before approval is REFUSED and cannot be started', async () => {
    expect(mcp.stderr()).toContain('[polly] REFUSED: polyflow-unsafe-brief\n');
    const listed = (await mcp.call('workflow_list')).structured.workflows.find((w: any) => w.name === 'polyflow-unsafe-brief');
    expect(listed.admitted).toBe(false);
    expect(listed.refusedBecause).toContain('no-post-without-prior-approval');
    const r = await mcp.call('workflow_start', { workflow: 'polyflow-unsafe-brief', input: { date: '2026-01-07' } });
    expect(r.isError).toBe(false);
    expect(r.structured).toMatchObject({ status: 'refused', code: 'workflow_refused', run: null });
    expect(r.structured.instruction).toContain('cannot be started');
    expect(Object.values(await storedRuns(registry)).some((x: any) => x.workflow === 'polyflow-unsafe-brief')).toBe(false);
  });

  it('a run outlives the process: restart re-offers the open work order', async () => {
    // Session 1, another process on the same store, with a 1 s lease: to the approval, then SIGKILL.
    const first = await startMcp(['--registry', registry, ...AREA, '--lease-seconds', '1']);
    let v = await first.call('workflow_start', { workflow: BRIEF, input: { date: '2026-01-08' } });
    const runId = v.structured.run.id;
    v = await first.call('workflow_report', { run_id: runId, order_id: v.structured.order.id, outcome: 'ok', data: { count: 3 } });
    v = await first.call('workflow_report', { run_id: runId, order_id: v.structured.order.id, outcome: 'ok' });
    const approval = v.structured.order;
    expect(approval.tool).toBe('ask_user');
    process.kill(first.transport.pid!, 'SIGKILL');
    await first.close().catch(() => undefined);
    // Session 2 (the long-lived server): the run is where it was; once the dead session's lease lapses, the same order comes back.
    let seen = await mcp.call('workflow_state', { run_id: runId });
    expect(seen.structured.run.state.state).toBe('review');
    for (const deadline = Date.now() + 10_000; seen.structured.order === null && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 200));
      seen = await mcp.call('workflow_state', { run_id: runId });
    }
    expect(seen.structured.order).toMatchObject({ id: approval.id, tool: 'ask_user' });
    const posting = await report(runId, approval.id, 'ok', { lease_id: seen.structured.lease.id });
    expect(posting.structured.run.state.state).toBe('posting');
    const posted = await report(runId, posting.structured.order.id, 'ok');
    expect(posted.structured.run).toMatchObject({ status: 'finished', outcome: 'posted' });
    const j = await journal(runId);
    expect(j.filter((e) => e.kind === 'run.order' && e.data.kind === 'post_brief')).toHaveLength(1);
    expect(j.filter((e) => e.kind === 'run.reported' && e.data.kind === 'post_brief')).toHaveLength(1);
  });

  it('initialize, tools/list, tools/call over stdio', async () => {
    expect(mcp.client.getServerVersion()?.name).toBe('polly');
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['workflow_journal', 'workflow_list', 'workflow_report', 'workflow_signal', 'workflow_start', 'workflow_state']);
    // Every hint declared, true to the tool (docs/mcp.md has the reasons).
    const hints = Object.fromEntries(
      tools.map((t) => [t.name, [t.annotations?.readOnlyHint, t.annotations?.destructiveHint, t.annotations?.idempotentHint, t.annotations?.openWorldHint]]),
    );
    expect(hints).toEqual({
      workflow_list: [true, false, true, false],
      workflow_start: [false, false, true, false],
      workflow_report: [false, false, false, false],
      workflow_state: [false, false, true, false],
      workflow_signal: [false, true, false, false],
      workflow_journal: [true, false, true, false],
    });
    // Portable schemas: no $ref (some hosts do not resolve one), no bare {} that accepts anything (the Inspector's --strict warns on it).
    expect(JSON.stringify(tools)).not.toContain('$ref');
    expect(JSON.stringify(tools)).not.toContain('"additionalProperties":{}');
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.outputSchema?.type, t.name).toBe('object');
      expect(t.description!.length, t.name).toBeGreaterThan(20);
    }
    const called = await mcp.client.callTool({ name: 'workflow_list', arguments: {} });
    expect(called.isError).toBeFalsy();
    expect((called.structuredContent as any).workflows.find((w: any) => w.name === BRIEF).admitted).toBe(true);
    // Protocol errors under the client's protocol (2025-11-25): an unknown tool is -32602; bad arguments are a tool error (SEP-1303).
    const unknown = await mcp.client.callTool({ name: 'workflow_nope', arguments: {} }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((unknown as McpError).message).toContain('Unknown tool: "workflow_nope"');
    const malformed = await mcp.call('workflow_report', { run_id: 'x', order_id: 'y', outcome: 'maybe' });
    expect(malformed.isError).toBe(true);
    expect(malformed.text).toContain('outcome');
    // A fault is a readable tool error; a domain refusal is an ordinary result.
    const missing = await mcp.call('workflow_state', { instance: 'nope' });
    expect(missing.isError).toBe(true);
    expect(missing.text).toContain('no workflow run "nope"');
  });

  it('a 2025-06-18 session gets -32602 for an initialize without clientInfo, an unknown tool and bad arguments; a domain refusal stays a result', () => {
    const lines = [
      // Without clientInfo, which the specification requires: -32602 naming it (the SDK alone answers -32603), and the session goes on.
      { id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {} } },
      { id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { method: 'notifications/initialized' },
      { id: 2, method: 'tools/call', params: { name: 'workflow_nope', arguments: {} } },
      { id: 3, method: 'tools/call', params: { name: 'workflow_start', arguments: { workflow: BRIEF, input: { date: '2026-01-09' }, key: 'mine' } } },
      { id: 4, method: 'tools/call', params: { name: 'workflow_state', arguments: {} } },
      { id: 5, method: 'tools/call', params: { name: 'workflow_start', arguments: { workflow: 'polyflow-unsafe-brief', input: { date: '2026-01-09' } } } },
    ];
    const r = spawnSync(process.execPath, [CLI, 'mcp', '--registry', registry, ...AREA], {
      input: `${lines.map((l) => JSON.stringify({ jsonrpc: '2.0', ...l })).join('\n')}\n`,
      encoding: 'utf8',
      timeout: 60_000,
    });
    const replies = new Map(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .map((m) => [m.id, m]),
    );
    expect(replies.get(0).error).toMatchObject({ code: -32602 });
    expect(replies.get(0).error.message).toContain('params.clientInfo');
    expect(replies.get(1).result.protocolVersion).toBe('2025-06-18');
    expect(replies.get(2).error).toMatchObject({ code: -32602 });
    expect(replies.get(2).error.message).toContain('Unknown tool: "workflow_nope"');
    expect(replies.get(3).error).toMatchObject({ code: -32602 });
    expect(replies.get(3).error.message).toContain("Unrecognized key(s) in object: 'key'");
    expect(replies.get(4).error).toMatchObject({ code: -32602 });
    expect(replies.get(4).error.message).toContain('missing run_id');
    expect(replies.get(5).result.isError).toBeUndefined();
    expect(replies.get(5).result.structuredContent).toMatchObject({ status: 'refused', code: 'workflow_refused' });
  });

  it('two --agent areas list different libraries', async () => {
    const other = await startMcp(['--registry', registry, '--agent', 'kiro/crew', '--workspace', 'acme']);
    try {
      const names = async (p: McpProcess) => (await p.call('workflow_list')).structured.workflows.map((w: any) => w.name);
      expect(await names(mcp)).toEqual(['customer-brief', 'polly-task', BRIEF, 'polyflow-unsafe-brief']);
      expect(await names(other)).toEqual(['customer-brief', 'polly-task']);
      const there = await other.call('workflow_start', { workflow: BRIEF, input: { date: '2026-01-10' } });
      expect(there.structured).toMatchObject({ status: 'refused', run: null });
    } finally {
      await other.close();
    }
  });
});
