/**
 * The real `claude` CLI (devDependency @anthropic-ai/claude-code) driven by the scripted model
 * server, in real temp git repositories.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestRepo } from '../../helpers/git-repo.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent, AgentRunOptions } from '../../../workers/agents/agent-adapter.js';
import { createClaudeCodeAdapter, parseClaudeStreamLine, rootRefusalMessage } from '../../../workers/agents/claude-code-adapter.js';
import { resolveAgentBinary } from '../../../workers/agents/agent-binary.js';

const SCRIPT = `
sessions:
  - name: smoke
    match: {task: smoke1, role: implement}
    turns:
      - steps:
          - write: {path: notes/hello.txt, content: "hello\\n"}
          - edit: {path: src/sum.js, old: "a - b", new: "a + b"}
          - run: "node -e \\"console.log(require('./src/sum.js')(2, 3))\\""
          - finish: "Fixed sum; 2+3 prints 5."
      - steps:
          - run: "echo second-turn > second.txt"
          - write: {path: config.json, content: "{\\"fixed\\": true}\\n"}
          - finish: "Second turn done."
  - name: mcp
    match: {task: mcp1, role: implement}
    turns:
      - steps:
          - call: {tool: mcp__fixture__echo, input: {text: "ping from the script"}}
          - finish: "MCP answered."
  - name: readonly
    match: {task: ro1, role: review}
    turns:
      - steps:
          - read: src/sum.js
          - write: {path: hacked.txt, content: "should not exist\\n"}
          - finish: "Review: no findings."
`;

const isRoot = process.getuid?.() === 0;
let server: ScriptedModelServer;

beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server.close();
});

function baseOptions(cwd: string, prompt: string, extra: Partial<AgentRunOptions> = {}): AgentRunOptions {
  return {
    cwd,
    prompt,
    resumeSessionId: null,
    model: 'claude-sonnet-4-5',
    readOnly: false,
    gate: { args: [], env: {} },
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key' },
    stateDir: mkdtempSync(join(tmpdir(), 'polly-claude-state-')),
    timeoutMs: 30_000,
    ...extra,
  };
}

const adapter = createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true });

describe('Claude Code adapter (real claude)', () => {
  it('resolves claude from this package when it is not on PATH', () => {
    expect(resolveAgentBinary('claude-code', { command: 'claude' }, { PATH: '/nonexistent' })).toMatch(/node_modules\/\.bin\/claude$/);
  });

  it('smoke: writes, edits (Read inserted), runs, reports; then resumes the same session', async () => {
    const repo = createTestRepo({ 'src/sum.js': 'module.exports = (a, b) => a - b;\n', 'config.json': '{"fixed": false}\n' });
    const seen: AgentEvent[] = [];
    const first = baseOptions(repo.dir, '[polly task=smoke1 role=implement] Fix src/sum.js.', { onEvent: (e) => seen.push(e) });
    const r = await adapter.start(first).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    expect(r.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.finalText).toBe('Fixed sum; 2+3 prints 5.');
    expect(readFileSync(join(repo.dir, 'notes/hello.txt'), 'utf8')).toBe('hello\n');
    expect(readFileSync(join(repo.dir, 'src/sum.js'), 'utf8')).toBe('module.exports = (a, b) => a + b;\n');
    expect(seen).toEqual(r.events);
    const calls = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(calls.map((c) => c.tool)).toEqual(['Write', 'Read', 'Edit', 'Bash']);
    expect(calls[0]!.input).toEqual({ file_path: join(repo.dir, 'notes/hello.txt'), content: 'hello\n' });
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results).toHaveLength(4);
    expect(results.filter((x) => x.isError)).toEqual([]);
    expect(results.map((x) => x.id)).toEqual(calls.map((c) => c.id));
    expect(results[3]!.output.trim()).toBe('5');
    const usage = r.events.find((e) => e.type === 'usage');
    expect(usage).toMatchObject({ type: 'usage', inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
    expect((usage as { inputTokens: number }).inputTokens).toBeGreaterThan(0);
    expect(r.events[0]).toEqual({ type: 'session', sessionId: r.sessionId });
    expect(r.command).toEqual(expect.arrayContaining(['-p', '--output-format', 'stream-json', '--permission-mode', 'bypassPermissions']));
    expect(r.command.join(' ')).not.toContain('sk-scripted-dummy-key');

    // Resume: a follow-up (e.g. red-check feedback) reaches the same session.
    const before = server.requests.length;
    const r2 = await adapter.start({ ...first, prompt: 'Checks are red: try again.', resumeSessionId: r.sessionId, onEvent: undefined }).result;
    expect(r2.status, r2.message + r2.stderr).toBe('ok');
    expect(r2.sessionId).toBe(r.sessionId);
    expect(r2.finalText).toBe('Second turn done.');
    expect(readFileSync(join(repo.dir, 'second.txt'), 'utf8')).toBe('second-turn\n');
    // Overwriting a file this session never read: Claude Code refuses, the server reads it, retries.
    expect(r2.events.filter((e) => e.type === 'tool_call').map((e) => (e as { tool: string }).tool)).toEqual(['Bash', 'Write', 'Read', 'Write']);
    expect(r2.events.filter((e) => e.type === 'tool_result').map((e) => (e as { isError: boolean }).isError)).toEqual([false, true, false, false]);
    expect(readFileSync(join(repo.dir, 'config.json'), 'utf8')).toBe('{"fixed": true}\n');
    const later = server.requests.slice(before).filter((q) => q.session === 'smoke');
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((q) => q.view?.humanTurns === 2 && q.turnIndex === 1)).toBe(true);
  }, 60_000);

  it('read-only roles get no write tools: a scripted Write is refused and leaves nothing', async () => {
    const repo = createTestRepo({ 'src/sum.js': 'module.exports = (a, b) => a - b;\n' });
    const r = await adapter.start(baseOptions(repo.dir, '[polly task=ro1 role=review] Review the diff.', { readOnly: true })).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    expect(r.finalText).toBe('Review: no findings.');
    const results = r.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(results.map((x) => x.isError)).toEqual([false, true]);
    expect(results[0]!.output).toContain('a - b');
    expect(results[1]!.output).toMatch(/Write/);
    expect(existsSync(join(repo.dir, 'hacked.txt'))).toBe(false);
    const req = server.requests.filter((q) => q.session === 'readonly').at(-1);
    expect(req?.view?.tools).not.toContain('Write');
    expect(req?.view?.tools).toContain('Read');
  });

  it('talks to MCP servers given with mcpConfig; `call` steps name the tool verbatim', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-claude-mcp-'));
    const serverFile = join(dir, 'echo-mcp.mjs');
    const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm/server');
    writeFileSync(
      serverFile,
      [
        `import { McpServer } from ${JSON.stringify(join(sdk, 'mcp.js'))};`,
        `import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'stdio.js'))};`,
        `import { z } from ${JSON.stringify(join(process.cwd(), 'node_modules/zod/index.js'))};`,
        `const server = new McpServer({ name: 'fixture', version: '1.0.0' });`,
        `server.registerTool('echo', { description: 'Echo text', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: 'echo: ' + text }] }));`,
        `await server.connect(new StdioServerTransport());`,
      ].join('\n'),
    );
    const mcpConfig = join(dir, 'mcp.json');
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [serverFile] } } }));
    const withMcp = createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true, mcpConfig });
    const r = await withMcp.start(baseOptions(dir, '[polly task=mcp1 role=implement] Use the tool.')).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    expect(r.finalText).toBe('MCP answered.');
    expect(r.events.find((e) => e.type === 'tool_call')).toMatchObject({ tool: 'mcp__fixture__echo', input: { text: 'ping from the script' } });
    expect(r.events.find((e) => e.type === 'tool_result')).toMatchObject({ isError: false, output: 'echo: ping from the script' });
    const first = server.requests.find((q) => q.session === 'mcp');
    expect(first?.view?.tools).toContain('mcp__fixture__echo');
  });

  it('orchestration case 1: a missing CLI is agent_missing, a CLI that exits at once is agent_exited with stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-claude-c1-'));
    const t0 = Date.now();
    const missing = await createClaudeCodeAdapter({ command: join(dir, 'no-claude-here'), model: null, allow_root_sandbox: true }).start(baseOptions(dir, 'hi')).result;
    expect(missing.status).toBe('agent_missing');
    expect(missing.message).toContain('no-claude-here');

    // The real claude, given a flag it does not know, exits 1 at once.
    const badFlag = await adapter.start(baseOptions(dir, 'hi', { gate: { args: ['--no-such-flag-polly'], env: {} } })).result;
    expect(badFlag.status).toBe('agent_exited');
    expect(badFlag.stderr).toContain('--no-such-flag-polly');
    expect(badFlag.message).toContain('--no-such-flag-polly');

    // A wrapper whose target is gone exits 127: agent_missing.
    const wrapper = join(dir, 'claude-wrapper');
    writeFileSync(wrapper, '#!/bin/sh\nexec /nonexistent/claude "$@"\n');
    chmodSync(wrapper, 0o755);
    const gone = await createClaudeCodeAdapter({ command: 'claude', binary: wrapper, model: null, allow_root_sandbox: true }).start(baseOptions(dir, 'hi')).result;
    expect(gone.status).toBe('agent_missing');
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it('no credentials at all: agent_refused saying to set ANTHROPIC_API_KEY', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-claude-nokey-'));
    const opts = baseOptions(dir, 'hi', { env: {} });
    const saved = { key: process.env.ANTHROPIC_API_KEY, token: process.env.ANTHROPIC_AUTH_TOKEN, url: process.env.ANTHROPIC_BASE_URL };
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_AUTH_TOKEN;
    delete process.env.ANTHROPIC_BASE_URL;
    try {
      const r = await adapter.start(opts).result;
      expect(r.status).toBe('agent_refused');
      expect(r.message).toContain('ANTHROPIC_API_KEY');
      expect(r.message).toMatch(/Not logged in/);
    } finally {
      for (const [k, v] of [
        ['ANTHROPIC_API_KEY', saved.key],
        ['ANTHROPIC_AUTH_TOKEN', saved.token],
        ['ANTHROPIC_BASE_URL', saved.url],
      ] as const)
        if (v !== undefined) process.env[k] = v;
    }
  });

  it.runIf(isRoot)('as root without allow_root_sandbox: agent_refused before spawning, saying how to enable it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-claude-root-'));
    const r = await createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: false }).start(baseOptions(dir, 'hi')).result;
    expect(r.status).toBe('agent_refused');
    expect(r.message).toBe(rootRefusalMessage());
    expect(r.message).toContain('allow_root_sandbox: true');
    expect(r.exitCode).toBeNull();
  });

  it("claude's own root refusal on stderr is agent_refused too; a caller's IS_SANDBOX never overrides Polly's decision", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-claude-root2-'));
    // Stand-ins for claude: one always refuses as claude does; one reports whether IS_SANDBOX=1 reached it.
    const refuses = join(dir, 'claude-refuses');
    writeFileSync(refuses, '#!/bin/sh\necho "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons" >&2\nexit 1\n');
    const probe = join(dir, 'claude-probe');
    writeFileSync(
      probe,
      '#!/bin/sh\nif [ "$IS_SANDBOX" = 1 ]; then echo "IS_SANDBOX leaked into the worker" >&2; exit 3; fi\necho "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons" >&2\nexit 1\n',
    );
    chmodSync(refuses, 0o755);
    chmodSync(probe, 0o755);
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-x-dummy', IS_SANDBOX: '1' };
    const own = await createClaudeCodeAdapter({ command: 'claude', binary: refuses, model: null, allow_root_sandbox: true }).start(baseOptions(dir, 'hi', { env })).result;
    expect(own.status).toBe('agent_refused');
    expect(own.message).toContain('root/sudo');
    const notAllowed = await createClaudeCodeAdapter({ command: 'claude', binary: probe, model: null, allow_root_sandbox: false }).start(baseOptions(dir, 'hi', { env })).result;
    expect(notAllowed.status).toBe('agent_refused');
    expect(notAllowed.stderr).not.toContain('IS_SANDBOX leaked');
  });
});

describe('parseClaudeStreamLine', () => {
  it('normalises init, assistant, user, result; unknown types pass through', () => {
    expect(parseClaudeStreamLine({ type: 'system', subtype: 'init', session_id: 's1' })).toEqual([{ type: 'session', sessionId: 's1' }]);
    expect(
      parseClaudeStreamLine({
        type: 'assistant',
        message: {
          content: [
            { type: 'thinking', thinking: '…' },
            { type: 'text', text: 'hi' },
            { type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
      }),
    ).toEqual([
      { type: 'text', text: 'hi' },
      { type: 'tool_call', id: 'tu1', tool: 'Bash', input: { command: 'ls' } },
    ]);
    expect(
      parseClaudeStreamLine({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'tu1', is_error: true, content: [{ type: 'text', text: 'denied' }] }] } }),
    ).toEqual([{ type: 'tool_result', id: 'tu1', isError: true, output: 'denied' }]);
    expect(
      parseClaudeStreamLine({
        type: 'result',
        subtype: 'error_max_turns',
        is_error: true,
        total_cost_usd: 0.5,
        usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 2 },
        errors: ['max turns'],
      }),
    ).toEqual([
      { type: 'usage', scope: 'turn', inputTokens: 15, outputTokens: 2, cacheReadTokens: 5, cacheWriteTokens: null, costUsd: 0.5 },
      { type: 'result', ok: false, text: 'max turns' },
    ]);
    // An assistant message's usage arrives while the turn runs: per model call, without cost.
    expect(
      parseClaudeStreamLine({
        type: 'assistant',
        message: { id: 'msg_1', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 7, cache_read_input_tokens: 3, cache_creation_input_tokens: 1, output_tokens: 4 } },
      }),
    ).toEqual([
      { type: 'usage', scope: 'call', callId: 'msg_1', inputTokens: 11, outputTokens: 4, cacheReadTokens: 3, cacheWriteTokens: 1, costUsd: null },
      { type: 'text', text: 'hi' },
    ]);
    expect(parseClaudeStreamLine({ type: 'system', subtype: 'api_retry', attempt: 3, max_retries: 10, error_status: 529, error: 'overloaded' })).toEqual([
      { type: 'error', message: 'model API error status 529 (overloaded); claude retries: attempt 3 of 10' },
    ]);
    expect(parseClaudeStreamLine({ type: 'system', subtype: 'hook_started' })).toEqual([{ type: 'unknown', raw: { type: 'system', subtype: 'hook_started' } }]);
    expect(parseClaudeStreamLine({ type: 'stream_event_v9' })).toEqual([{ type: 'unknown', raw: { type: 'stream_event_v9' } }]);
  });
});
