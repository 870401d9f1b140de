/**
 * The scripted model server's OpenAI Responses API (scripts/scripted-model/openai-responses.ts):
 * the conversation view codex's requests reduce to, how steps become codex tools, and the SSE
 * stream over real HTTP. The real `codex` against this server is exercised in codex-adapter.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addFilePatch, declaredTools, looksLikeToolError, renderCodexStep, responsesView, updateFilePatch, workspaceCwd } from '../../scripts/scripted-model/openai-responses.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';

// Tool declarations as codex 0.171.0 sends them (abridged from a captured request).
const EXEC_COMMAND = { type: 'function', name: 'exec_command', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } };
const APPLY_PATCH_FREEFORM = { type: 'custom', name: 'apply_patch', description: 'FREEFORM', format: { type: 'grammar', syntax: 'lark', definition: 'start: …' } };
const NAMESPACE = { type: 'namespace', name: 'mcp__polly__', tools: [{ type: 'function', name: 'workflow_list', parameters: {} }] };

function codexBody(extra: unknown[] = [], cwd = '/work/repo'): Record<string, unknown> {
  return {
    model: 'gpt-5.5',
    stream: true,
    tools: [EXEC_COMMAND, APPLY_PATCH_FREEFORM, { type: 'web_search' }, NAMESPACE],
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `<environment_context>\n  <cwd>${cwd}</cwd>\n</environment_context>` }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '# AGENTS.md instructions for /work/repo\n\n<INSTRUCTIONS>be nice</INSTRUCTIONS>' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '[polly task=t1 role=implement] fix it' }] },
      ...extra,
    ],
  };
}

describe('responsesView', () => {
  it('counts only human user messages, not codex context messages', () => {
    const v = responsesView(codexBody());
    expect(v.humanTurns).toBe(1);
    expect(v.firstUserText).toBe('[polly task=t1 role=implement] fix it');
    expect(v.system).toContain('You are Codex.');
    expect(v.toolResultsSinceHuman).toBe(0);
    expect(v.tools).toEqual(['exec_command', 'apply_patch', 'web_search', 'workflow_list']);
  });

  it('counts function and custom tool outputs since the last human message, and reads errors from exit codes', () => {
    const v = responsesView(
      codexBody([
        { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', call_id: 'c1', output: 'Exit code: 0\nOutput:\nSuccess.' },
        { type: 'reasoning', summary: [] },
        { type: 'function_call', call_id: 'c2', name: 'exec_command', arguments: '{"cmd":"false"}' },
        { type: 'function_call_output', call_id: 'c2', output: 'Chunk ID: 1\nProcess exited with code 1\nOutput:\n' },
      ]),
    );
    expect(v.toolResultsSinceHuman).toBe(2);
    expect(v.lastToolResult).toEqual({ text: 'Chunk ID: 1\nProcess exited with code 1\nOutput:\n', isError: true });
  });

  it('starts a new turn at each further human message (resume)', () => {
    const v = responsesView(
      codexBody([
        { type: 'function_call_output', call_id: 'c2', output: 'Process exited with code 0' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'tests are red: fix' }] },
      ]),
    );
    expect(v.humanTurns).toBe(2);
    expect(v.toolResultsSinceHuman).toBe(0);
    expect(v.firstUserText).toContain('task=t1');
  });

  it('reads the workspace from <environment_context>', () => {
    expect(workspaceCwd(codexBody([], '/a/b'))).toBe('/a/b');
    expect(workspaceCwd({ input: [] })).toBeNull();
  });

  it('tells failures from successes in codex tool output text', () => {
    expect(looksLikeToolError('Process exited with code 0\nOutput:\nerror: in the output only')).toBe(false);
    expect(looksLikeToolError('Exit code: 2\nOutput:\n')).toBe(true);
    expect(looksLikeToolError('Command blocked by PreToolUse hook: force-push denied. Command: git push -f')).toBe(true);
    expect(looksLikeToolError('Success. Updated the following files:\nA x')).toBe(false);
  });
});

describe('renderCodexStep', () => {
  const tools = declaredTools(codexBody());

  it('runs and reads through exec_command', () => {
    const run = renderCodexStep({ run: 'npm test' }, tools, null);
    expect(run).toMatchObject({ type: 'function_call', name: 'exec_command' });
    expect(JSON.parse((run as { arguments: string }).arguments)).toEqual({ cmd: 'npm test' });
    const read = renderCodexStep({ read: "it's.txt" }, tools, null);
    expect(JSON.parse((read as { arguments: string }).arguments)).toEqual({ cmd: `cat -- 'it'\\''s.txt'` });
  });

  it('falls back to shell_command or shell when exec_command is not declared', () => {
    const sc = renderCodexStep({ run: 'ls' }, [{ name: 'shell_command', kind: 'function', namespace: null }], null);
    expect(JSON.parse((sc as { arguments: string }).arguments)).toEqual({ command: 'ls' });
    const sh = renderCodexStep({ run: 'ls' }, [{ name: 'shell', kind: 'function', namespace: null }], null);
    expect(JSON.parse((sh as { arguments: string }).arguments)).toEqual({ command: ['bash', '-lc', 'ls'] });
  });

  it('writes with a freeform apply_patch Add File', () => {
    const item = renderCodexStep({ write: { path: 'src/a.js', content: 'one\ntwo\n' } }, tools, null);
    expect(item).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch\n*** Add File: src/a.js\n+one\n+two\n*** End Patch\n' });
  });

  it('uses a function apply_patch with {input} when that is what is declared', () => {
    const item = renderCodexStep({ write: { path: 'a', content: 'x' } }, [{ name: 'apply_patch', kind: 'function', namespace: null }], null);
    expect(item.type).toBe('function_call');
    expect(JSON.parse((item as { arguments: string }).arguments)).toEqual({ input: addFilePatch('a', 'x') });
  });

  it('edits whole lines read from the workspace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-resp-'));
    writeFileSync(join(dir, 'sum.js'), 'export function sum(a, b) {\n  return a - b;\n}\n');
    const item = renderCodexStep({ edit: { path: 'sum.js', old: 'a - b', new: 'a + b' } }, tools, dir);
    expect(item).toMatchObject({
      type: 'custom_tool_call',
      input: '*** Begin Patch\n*** Update File: sum.js\n@@\n-  return a - b;\n+  return a + b;\n*** End Patch\n',
    });
  });

  it('takes old/new as whole lines when the file cannot be read', () => {
    expect(updateFilePatch('x', null, 'a\nb', 'c')).toBe('*** Begin Patch\n*** Update File: x\n@@\n-a\n-b\n+c\n*** End Patch\n');
  });

  it('writes and edits through the shell when no apply_patch is declared (models without bundled metadata)', () => {
    const onlyShell = [{ name: 'exec_command', kind: 'function', namespace: null }];
    const w = renderCodexStep({ write: { path: 'd/n.txt', content: "it's\n" } }, onlyShell, null);
    expect(JSON.parse((w as { arguments: string }).arguments).cmd).toBe(`mkdir -p -- d && printf '%s' 'it'\\''s\n' > d/n.txt`);
    const dir = mkdtempSync(join(tmpdir(), 'polly-resp-'));
    writeFileSync(join(dir, 'f.txt'), 'a - b\n');
    const e = renderCodexStep({ edit: { path: 'f.txt', old: '-', new: '+' } }, onlyShell, dir);
    expect(JSON.parse((e as { arguments: string }).arguments).cmd).toBe(`printf '%s' 'a + b\n' > f.txt`);
  });

  it('passes call steps verbatim, finding tools inside namespaces', () => {
    const direct = renderCodexStep({ call: { tool: 'exec_command', input: { cmd: 'pwd', workdir: '/' } } }, tools, null);
    expect(JSON.parse((direct as { arguments: string }).arguments)).toEqual({ cmd: 'pwd', workdir: '/' });
    const nested = renderCodexStep({ call: { tool: 'mcp__polly__workflow_list', input: {} } }, tools, null);
    expect(nested).toMatchObject({ type: 'function_call', name: 'workflow_list', namespace: 'mcp__polly__' });
    const custom = renderCodexStep({ call: { tool: 'apply_patch', input: { input: '*** Begin Patch\n*** End Patch\n' } } }, tools, null);
    expect(custom).toMatchObject({ type: 'custom_tool_call', input: '*** Begin Patch\n*** End Patch\n' });
  });

  it('says so in text when no tool can carry the step', () => {
    const item = renderCodexStep({ run: 'ls' }, [], null);
    expect(item.type).toBe('message');
    expect(JSON.stringify(item)).toContain('cannot render a run step');
  });
});

describe('POST /v1/responses over HTTP', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    const script = parseModelScript('sessions:\n  - name: s\n    match: {task: t1}\n    turns:\n      - steps:\n          - run: echo hi\n          - finish: "all green"\n');
    server = await startScriptedModelServer({ script });
  });
  afterAll(async () => server.close());

  async function sse(body: unknown): Promise<{ event: string; data: Record<string, unknown> }[]> {
    const res = await fetch(`${server.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    return text
      .split('\n\n')
      .filter((b) => b.trim())
      .map((block) => {
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
        const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>;
        return { event, data };
      });
  }

  it('streams a function call, then the final text, each ending in response.completed with usage', async () => {
    const first = await sse(codexBody());
    expect(first.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    for (const e of first) expect(e.data.type).toBe(e.event);
    const done = first[5]!.data.item as { name: string; arguments: string; call_id: string };
    expect(done.name).toBe('exec_command');
    expect(JSON.parse(done.arguments)).toEqual({ cmd: 'echo hi' });
    const usage = (first[6]!.data.response as { usage: Record<string, number> }).usage;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.input_tokens! + usage.output_tokens!);

    const second = await sse(
      codexBody([
        { type: 'function_call', call_id: done.call_id, name: 'exec_command', arguments: done.arguments },
        { type: 'function_call_output', call_id: done.call_id, output: 'Process exited with code 0\nOutput:\nhi\n' },
      ]),
    );
    expect(second.map((e) => e.event)).toContain('response.output_text.delta');
    const msg = second.find((e) => e.event === 'response.output_item.done')!.data.item as { content: { text: string }[] };
    expect(msg.content[0]!.text).toBe('all green');
    const recorded = server.requests.filter((r) => r.api === 'openai-responses');
    expect(recorded.map((r) => r.reply?.kind)).toEqual(['tool', 'text']);
    expect(recorded[1]!.view?.toolResultsSinceHuman).toBe(1);
    expect(recorded[1]!.session).toBe('s');
  });

  it('answers a compaction request with the history unchanged', async () => {
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] }];
    const res = await fetch(`${server.url}/v1/responses/compact`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input, instructions: 'summarise' }),
    });
    expect(await res.json()).toEqual({ output: input });
  });

  it('answers stream:false with one response object, and unmatched conversations with a neutral text', async () => {
    const res = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'write a title for this chat' }),
    });
    const json = (await res.json()) as { status: string; output: { type: string; content: { text: string }[] }[] };
    expect(json.status).toBe('completed');
    expect(json.output[0]!.content[0]!.text).toBe('OK.');
  });
});
