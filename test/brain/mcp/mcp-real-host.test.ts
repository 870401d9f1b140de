/**
 * A real MCP host uses Polly: the real `claude` CLI (devDependency, through the Claude Code
 * adapter: `-p --output-format stream-json --permission-mode bypassPermissions --strict-mcp-config
 * --mcp-config FILE`) runs against the scripted model server, whose script makes the model call
 * `mcp__polly__workflow_list` and then `mcp__polly__workflow_start`. The MCP config points at the
 * built `node dist/brain/cli.js mcp --registry <tmp>`. Found on the way: claude 2.1.197 in -p mode
 * does not wait for MCP servers before its first request (it offers `WaitForMcpServers` while one
 * connects), and it shows the model a tool's `structuredContent` rather than its text block. Asserts on what came back to the model (the
 * tool results in the server's recorded requests) and on the registry (the run exists).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storedRuns } from '../../helpers/stored-runs.js';
import { runIdFor } from '../../../workflows/run/run-identity.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { createClaudeCodeAdapter } from '../../../workers/agents/claude-code-adapter.js';
import { CLI } from '../../helpers/mcp-stdio.js';

const SCRIPT = `
sessions:
  - name: host
    match: {task: host1, role: implement}
    turns:
      - steps:
          # claude -p does not wait for MCP servers: while one connects it offers WaitForMcpServers.
          # (When polly is already connected the tool is not offered and the call is a harmless error.)
          - call: {tool: WaitForMcpServers, input: {servers: [polly]}}
          - call: {tool: mcp__polly__workflow_list, input: {}}
          - call: {tool: mcp__polly__workflow_start, input: {workflow: customer-brief, input: {channel: "#cs", day: "2026-11-30"}}}
          - finish: "Started the customer brief; the first work order is zendesk_search."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server.close();
});

/** Every tool_result block the model was sent in the session's requests, by tool_use id. */
function toolResults(session: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const q of server.requests.filter((r) => r.session === session)) {
    const messages = (q.body as { messages?: Array<{ content: unknown }> }).messages ?? [];
    for (const m of messages) {
      if (!Array.isArray(m.content)) continue;
      for (const block of m.content as Array<{ type: string; tool_use_id?: string; content?: unknown }>) {
        if (block.type !== 'tool_result' || !block.tool_use_id) continue;
        const c = block.content;
        const text = typeof c === 'string' ? c : Array.isArray(c) ? c.map((x: { text?: string }) => x.text ?? '').join('') : JSON.stringify(c);
        out.set(block.tool_use_id, text);
      }
    }
  }
  return out;
}

describe('a real MCP host (claude) drives polly mcp', () => {
  it('claude calls workflow_list and workflow_start because the scripted model asks it to; the run is in the registry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-real-host-'));
    const registry = join(dir, 'registry');
    const mcpConfig = join(dir, 'mcp.json');
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { polly: { command: process.execPath, args: [CLI, 'mcp', '--registry', registry] } } }));
    const adapter = createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true, mcpConfig });
    const r = await adapter.start({
      cwd: dir,
      prompt: '[polly task=host1 role=implement] List the workflows you can run, then start the customer brief for #cs today.',
      resumeSessionId: null,
      model: 'claude-sonnet-4-5',
      readOnly: false,
      gate: { args: [], env: {} },
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key' },
      stateDir: mkdtempSync(join(tmpdir(), 'polly-real-host-state-')),
      timeoutMs: 45_000,
    }).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    expect(r.finalText).toContain('Started the customer brief');

    // claude named the tools mcp__<server>__<tool> and offered them to the model.
    const offered = server.requests.filter((q) => q.session === 'host').map((q) => q.view?.tools ?? []);
    expect(
      offered.some((tools) => ['mcp__polly__workflow_list', 'mcp__polly__workflow_start', 'mcp__polly__workflow_report'].every((t) => tools.includes(t))),
      JSON.stringify(offered),
    ).toBe(true);
    const calls = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(calls.map((c) => c.tool)).toEqual(['WaitForMcpServers', 'mcp__polly__workflow_list', 'mcp__polly__workflow_start']);
    calls.shift();

    // The tool results reached the model: the list with customer-brief admitted, then the first work order.
    const results = toolResults('host');
    const listResult = results.get(calls[0]!.id!) ?? '';
    const startResult = results.get(calls[1]!.id!) ?? '';
    expect(listResult).toContain('"instruction":"Admitted: customer-brief, polly-task');
    expect(listResult).toContain('no-post-without-prior-approval');
    const started = JSON.parse(startResult) as { status: string; instruction: string; order: { id: string } };
    expect(started.status).toBe('started');
    expect(started.instruction).toContain('run your tool "zendesk_search"');

    // The run store beside the registry holds the run, with its first order open.
    const reg = { runs: await storedRuns(registry) };
    const runId = runIdFor('default', 'default', 'customer-brief', 'brief:#cs:2026-11-30');
    expect(reg.runs[runId]).toMatchObject({
      workflow: 'customer-brief',
      status: 'running',
      key: 'brief:#cs:2026-11-30',
      openOrder: { kind: 'fetch_tickets', tool: 'zendesk_search' },
    });
    expect(started.order.id).toBe(reg.runs[runId]!.openOrder!.id);
  }, 90_000);
});
