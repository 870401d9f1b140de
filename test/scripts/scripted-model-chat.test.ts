import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { chatConversationView, renderChatToolCall } from '../../scripts/scripted-model/openai-chat.js';

const SCRIPT = parseModelScript(`
sessions:
  - name: impl-t1
    match: {task: t1, role: implement}
    turns:
      - steps:
          - write: {path: NOTES.md, content: "hi\\n"}
          - edit: {path: src/sum.js, old: "a - b", new: "a + b"}
          - run: npm test
          - read: src/sum.js
          - call: {tool: mcp__polly__workflow_list, input: {all: true}}
          - finish: "Fixed sum; tests pass."
      - steps:
          - finish: "Second turn."
`);

const PI_TOOLS = ['read', 'bash', 'edit', 'write'].map((name) => ({ type: 'function', function: { name, parameters: {} } }));
const FIRST = { role: 'user', content: 'Fix it. [polly task=t1 role=implement]' };

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: SCRIPT });
});
afterAll(async () => {
  await server.close();
});

/** POST a chat completions request; returns the parsed SSE `data:` payloads (JSON, or the raw `[DONE]`). */
async function stream(messages: unknown[], extra: Record<string, unknown> = {}): Promise<unknown[]> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer dummy' },
    body: JSON.stringify({ model: 'scripted', messages, tools: PI_TOOLS, stream: true, stream_options: { include_usage: true }, ...extra }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice('data: '.length))
    .map((data) => (data === '[DONE]' ? data : JSON.parse(data)));
}

interface Chunk {
  object: string;
  choices: Array<{
    delta: { content?: string; tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }> };
    finish_reason: string | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** Reassemble a streamed reply the way an OpenAI client does. */
function assemble(events: unknown[]) {
  const chunks = events.filter((e): e is Chunk => e !== '[DONE]');
  let text = '';
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  let finish: string | null = null;
  let usage: Chunk['usage'] | undefined;
  for (const c of chunks) {
    expect(c.object).toBe('chat.completion.chunk');
    if (c.usage) usage = c.usage;
    const choice = c.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finish = choice.finish_reason;
    if (choice.delta.content) text += choice.delta.content;
    for (const tc of choice.delta.tool_calls ?? []) {
      const call = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
      if (tc.id) call.id = tc.id;
      if (tc.function.name) call.name = tc.function.name;
      call.arguments += tc.function.arguments ?? '';
    }
  }
  return { text, calls, finish, usage, done: events[events.length - 1] === '[DONE]', chunks };
}

describe('scripted model server: OpenAI chat completions', () => {
  it('streams the first step as a pi `write` tool call, arguments split across chunks, then tool_calls, usage and [DONE]', async () => {
    const before = server.requests.length;
    const events = await stream([{ role: 'system', content: 'You are pi.' }, FIRST]);
    const r = assemble(events);
    expect(r.done).toBe(true);
    expect(r.finish).toBe('tool_calls');
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]!.name).toBe('write');
    expect(JSON.parse(r.calls[0]!.arguments)).toEqual({ path: 'NOTES.md', content: 'hi\n' });
    expect(r.calls[0]!.id).toMatch(/^call_/);
    // The arguments really stream: more than one chunk carries a piece of them.
    const argChunks = r.chunks.filter((c) => c.choices[0]?.delta.tool_calls?.some((t) => t.function.arguments));
    expect(argChunks.length).toBeGreaterThan(1);
    // The usage chunk is last before [DONE], with no choices.
    const last = r.chunks[r.chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(last.usage!.prompt_tokens).toBeGreaterThan(0);
    // Recorded for assertions.
    const rec = server.requests[before]!;
    expect(rec.api).toBe('openai-chat');
    expect(rec.session).toBe('impl-t1');
    expect(rec.view).toMatchObject({ system: 'You are pi.', humanTurns: 1, toolResultsSinceHuman: 0, tools: ['read', 'bash', 'edit', 'write'] });
    expect(rec.reply).toMatchObject({ kind: 'tool', stepIndex: 0 });
  });

  it('omits the usage chunk without stream_options.include_usage', async () => {
    const r = assemble(await stream([FIRST], { stream_options: undefined }));
    expect(r.usage).toBeUndefined();
    expect(r.finish).toBe('tool_calls');
  });

  it('walks the steps from the tool results in the request: edit (pi edits[]), bash, read, a verbatim call, then the final text', async () => {
    const history: unknown[] = [FIRST];
    const seen: Array<{ name: string; args: unknown }> = [];
    for (let i = 0; i < 5; i++) {
      const r = assemble(await stream(history));
      expect(r.finish).toBe('tool_calls');
      const call = r.calls[0]!;
      seen.push({ name: call.name, args: JSON.parse(call.arguments) });
      history.push({ role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] });
      history.push({ role: 'tool', tool_call_id: call.id, content: `result ${i}` });
    }
    expect(seen.map((s) => s.name)).toEqual(['write', 'edit', 'bash', 'read', 'mcp__polly__workflow_list']);
    expect(seen[1]!.args).toEqual({ path: 'src/sum.js', edits: [{ oldText: 'a - b', newText: 'a + b' }] });
    expect(seen[2]!.args).toEqual({ command: 'npm test' });
    expect(seen[3]!.args).toEqual({ path: 'src/sum.js' });
    expect(seen[4]!.args).toEqual({ all: true });
    const final = assemble(await stream(history));
    expect(final.finish).toBe('stop');
    expect(final.calls).toEqual([]);
    expect(final.text).toBe('Fixed sum; tests pass.');
    const rec = server.requests[server.requests.length - 1]!;
    expect(rec.view).toMatchObject({ humanTurns: 1, toolResultsSinceHuman: 5, lastToolResult: { text: 'result 4', isError: false } });
    // A follow-up human message is the second turn.
    history.push({ role: 'assistant', content: 'Fixed sum; tests pass.' });
    history.push({ role: 'user', content: 'The check is red, fix it.' });
    const second = assemble(await stream(history));
    expect(second.text).toBe('Second turn.');
    expect(server.requests[server.requests.length - 1]!.view!.humanTurns).toBe(2);
  });

  it('answers without streaming with one chat.completion object', async () => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'scripted', messages: [FIRST], tools: PI_TOOLS }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      object: string;
      model: string;
      choices: Array<{
        message: { role: string; content: string | null; tool_calls: Array<{ type: string; function: { name: string; arguments: string } }> };
        finish_reason: string;
      }>;
      usage: { total_tokens: number };
    };
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('scripted');
    expect(body.choices[0]!.finish_reason).toBe('tool_calls');
    expect(body.choices[0]!.message.content).toBeNull();
    expect(body.choices[0]!.message.tool_calls[0]!.function.name).toBe('write');
    expect(JSON.parse(body.choices[0]!.message.tool_calls[0]!.function.arguments)).toEqual({ path: 'NOTES.md', content: 'hi\n' });
    expect(body.usage.total_tokens).toBeGreaterThan(0);
  });

  it('gives an unmatched conversation (e.g. title generation) a short text', async () => {
    const r = assemble(await stream([{ role: 'user', content: 'Generate a title for this chat.' }]));
    expect(r.finish).toBe('stop');
    expect(r.text).toBe('OK.');
    expect(server.requests[server.requests.length - 1]!.session).toBeNull();
  });

  it('lists a model on GET /v1/models and rejects a body without messages, naming the field', async () => {
    const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { object: string; data: Array<{ id: string }> };
    expect(models.object).toBe('list');
    expect(models.data.map((m) => m.id)).toContain('scripted');
    const bad = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"x"}' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string; message: string } }).error.message).toContain('"messages"');
  });
});

describe('chat conversation view and tool rendering (pure)', () => {
  it('counts developer/system prompts, content parts, tool messages, and skips pi image-bridge messages as human turns', () => {
    const view = chatConversationView({
      messages: [
        { role: 'developer', content: 'sys A' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'task ' },
            { type: 'text', text: '[polly task=t9]' },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'read', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'img' },
        { role: 'user', content: [{ type: 'text', text: 'Attached image(s) from tool result:' }, { type: 'image_url' }] },
      ],
      tools: [{ type: 'function', function: { name: 'read' } }],
    });
    expect(view).toEqual({
      system: 'sys A',
      firstUserText: 'task [polly task=t9]',
      humanTurns: 1,
      toolResultsSinceHuman: 1,
      lastToolResult: null,
      tools: ['read'],
    });
  });

  it('renders steps with the argument shapes of the tool names the client declared', () => {
    const edit = { edit: { path: 'a.ts', old: 'x', new: 'y' } };
    expect(JSON.parse(renderChatToolCall(edit, ['Read', 'Edit'], 'c').arguments)).toEqual({ file_path: 'a.ts', old_string: 'x', new_string: 'y' });
    expect(renderChatToolCall(edit, ['edit_file'], 'c').name).toBe('edit_file');
    // Not declared (a read-only pi): still pi's name, so the client answers "tool not found".
    expect(renderChatToolCall({ write: { path: 'p', content: 'c' } }, ['read', 'grep'], 'c').name).toBe('write');
    expect(renderChatToolCall({ run: 'ls' }, ['exec_command'], 'c')).toEqual({ id: 'c', name: 'exec_command', arguments: '{"cmd":"ls"}' });
  });
});
