/**
 * The scripted model server's core (script parsing, session matching, stateless progress) and its
 * Anthropic Messages API, driven by the real Anthropic SDK as the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { parseModelScript, planReply, type ConversationView } from '../../scripts/scripted-model/script.js';
import { anthropicConversationView, expandStepsForClaude, statedWorkingDirectory } from '../../scripts/scripted-model/anthropic-messages.js';

const SCRIPT = `
sessions:
  - name: implement-t1
    match: {task: t1, role: implement}
    turns:
      - steps:
          - write: {path: src/new.js, content: "export const x = 1;\\n"}
          - edit: {path: src/sum.js, old: "a - b", new: "a + b"}
          - run: npm test
          - call: {tool: mcp__polly__workflow_list, input: {limit: 3}}
          - finish: "Fixed sum; tests pass."
      - steps:
          - finish: "Second turn: nothing more."
  - name: by-text
    match: {contains: ["review this diff"]}
    turns:
      - text: "No findings."
        steps: []
`;

const TOOLS = ['Write', 'Edit', 'Bash', 'Read', 'mcp__polly__workflow_list'].map((name) => ({
  name,
  description: name,
  input_schema: { type: 'object' as const, properties: {} },
}));
const SYSTEM = 'You are Claude Code.\n<env>\nPrimary working directory: /work/repo\n</env>';

let server: ScriptedModelServer;
let client: Anthropic;

beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
  client = new Anthropic({ baseURL: server.url, apiKey: 'sk-test-dummy', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

type Msg = Anthropic.MessageParam;
const prompt: Msg = {
  role: 'user',
  content: [
    { type: 'text', text: '<system-reminder>x</system-reminder>' },
    { type: 'text', text: '[polly task=t1 role=implement] fix sum' },
  ],
};

function toolRound(id: string, name: string, input: unknown, result: string, isError = false): Msg[] {
  return [
    { role: 'assistant', content: [{ type: 'tool_use', id, name, input }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: result, is_error: isError }] },
  ];
}

describe('model scripts', () => {
  it('rejects a script without sessions or turns, naming the source', () => {
    expect(() => parseModelScript('foo: 1', 'x.yaml')).toThrow(/x\.yaml: .*sessions/);
    expect(() => parseModelScript('sessions: [{name: a}]', 'x.yaml')).toThrow(/sessions\[0\] needs "turns:"/);
    expect(() => parseModelScript('sessions: [{turns: [{}]}]', 'x.yaml')).toThrow(/turns\[0\] needs "steps:"/);
    expect(() => parseModelScript('sessions: [{turns: [{steps: [{wirte: {path: a, content: b}}]}]}]', 'x.yaml')).toThrow(
      /x\.yaml: sessions\[0\]\.turns\[0\]\.steps\[0\]: a step has exactly one of write, edit/,
    );
    expect(() => parseModelScript('sessions: [{turns: [{steps: [{edit: {path: a, old: b}}]}]}]', 'x.yaml')).toThrow(/"edit" needs \{path, old, new\}/);
    expect(() => parseModelScript('sessions: [{turns: [{steps: [{run: [ls]}]}]}]', 'x.yaml')).toThrow(/"run" needs a command string/);
    const call = parseModelScript('sessions: [{turns: [{steps: [{call: {tool: mcp__x__y}}]}]}]');
    expect(call.sessions[0]!.turns[0]!.steps[0]).toEqual({ call: { tool: 'mcp__x__y', input: {} } });
  });

  it('matches on task/role tokens exactly, not on prefixes', () => {
    const script = parseModelScript(SCRIPT);
    const view = (first: string): ConversationView => ({ system: '', firstUserText: first, humanTurns: 1, toolResultsSinceHuman: 0, lastToolResult: null, tools: ['Write'] });
    expect(planReply(script, view('[polly task=t1 role=implement]')).session?.name).toBe('implement-t1');
    expect(planReply(script, view('[polly task=t10 role=implement]')).session).toBeNull();
    expect(planReply(script, view('[polly task=t1 role=review]')).session).toBeNull();
    expect(planReply(script, view('please review this diff')).session?.name).toBe('by-text');
    // A Polly worker's conversation no session matches is told so (the task's reason quotes it); any other gets a neutral text.
    expect(planReply(script, view('[polly task=t10 role=implement] Fix sum()')).reply).toEqual({
      kind: 'text',
      text: expect.stringMatching(
        /^\(scripted model: no session of the script matches this conversation, \[polly task=t10 role=implement\]; the script's sessions match: implement-t1 \{"task":"t1","role":"implement"\}/,
      ),
    });
    expect(planReply(script, view('Write a 5-word title for this conversation')).reply).toEqual({ kind: 'text', text: 'OK.' });
  });

  it('inserts a Read before an Edit of a file not read or written earlier in the turn', () => {
    expect(expandStepsForClaude([{ edit: { path: 'a', old: 'x', new: 'y' } }])).toEqual([{ read: 'a' }, { edit: { path: 'a', old: 'x', new: 'y' } }]);
    const written = [{ write: { path: 'a', content: 'x' } }, { edit: { path: 'a', old: 'x', new: 'y' } }];
    expect(expandStepsForClaude(written)).toEqual(written);
  });

  it('finds the working directory Claude Code states', () => {
    expect(statedWorkingDirectory({ system: SYSTEM, firstUserText: '' })).toBe('/work/repo');
    expect(statedWorkingDirectory({ system: '', firstUserText: 'Working directory: /a/b\n' })).toBe('/a/b');
    expect(statedWorkingDirectory({ system: 'nothing', firstUserText: '' })).toBeNull();
  });

  it('derives progress from the request: human turns and tool results since the last one', () => {
    const v = anthropicConversationView({
      system: [{ type: 'text', text: 'sys' }],
      messages: [prompt, ...toolRound('t1', 'Write', {}, 'ok'), ...toolRound('t2', 'Read', {}, 'boom', true)] as never,
      tools: [{ name: 'Write' }],
    });
    expect(v).toMatchObject({ system: 'sys', humanTurns: 1, toolResultsSinceHuman: 2, lastToolResult: { text: 'boom', isError: true }, tools: ['Write'] });
    expect(v.firstUserText).toContain('task=t1');
  });
});

describe('Anthropic Messages API (real SDK client)', () => {
  it('streams each step as a Claude Code tool call with absolute paths, then the final text', async () => {
    const messages: Msg[] = [prompt];
    const seen: { name: string; input: unknown }[] = [];
    for (let i = 0; i < 10; i += 1) {
      const stream = client.messages.stream({ model: 'claude-test', max_tokens: 1000, system: SYSTEM, messages, tools: TOOLS });
      const events: string[] = [];
      stream.on('streamEvent', (e) => events.push(e.type));
      const final = await stream.finalMessage();
      expect(events[0]).toBe('message_start');
      expect(events.at(-1)).toBe('message_stop');
      expect(events).toContain('message_delta');
      expect(final.usage.output_tokens).toBeGreaterThan(0);
      const block = final.content[0]!;
      if (block.type === 'text') {
        expect(final.stop_reason).toBe('end_turn');
        expect(block.text).toBe('Fixed sum; tests pass.');
        break;
      }
      expect(final.stop_reason).toBe('tool_use');
      expect(block.type).toBe('tool_use');
      if (block.type !== 'tool_use') return;
      expect(events).toContain('content_block_delta');
      seen.push({ name: block.name, input: block.input });
      messages.push(...toolRound(block.id, block.name, block.input, 'ok'));
    }
    expect(seen).toEqual([
      { name: 'Write', input: { file_path: '/work/repo/src/new.js', content: 'export const x = 1;\n' } },
      { name: 'Read', input: { file_path: '/work/repo/src/sum.js' } },
      { name: 'Edit', input: { file_path: '/work/repo/src/sum.js', old_string: 'a - b', new_string: 'a + b' } },
      { name: 'Bash', input: { command: 'npm test', description: 'Run: npm test' } },
      { name: 'mcp__polly__workflow_list', input: { limit: 3 } },
    ]);
    const recorded = server.requests.filter((r) => r.session === 'implement-t1');
    expect(recorded.length).toBe(6);
    expect(recorded.map((r) => r.view?.toolResultsSinceHuman)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('answers "File has not been read yet" with a Read of the file, then repeats the Write, and goes on', async () => {
    const ask = async (messages: Msg[]) => (await client.messages.create({ model: 'm', max_tokens: 100, system: SYSTEM, messages, tools: TOOLS })).content[0]!;
    const notRead = '<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>';
    const write = { file_path: '/work/repo/src/new.js', content: 'export const x = 1;\n' };
    let messages: Msg[] = [prompt, ...toolRound('a1', 'Write', write, notRead, true)];
    expect(await ask(messages)).toMatchObject({ type: 'tool_use', name: 'Read', input: { file_path: '/work/repo/src/new.js' } });
    messages = [...messages, ...toolRound('a2', 'Read', {}, '1\told')];
    expect(await ask(messages)).toMatchObject({ type: 'tool_use', name: 'Write', input: write });
    messages = [...messages, ...toolRound('a3', 'Write', write, 'ok')];
    // Progress resumes at the next scripted step (the Read inserted before the edit of src/sum.js).
    expect(await ask(messages)).toMatchObject({ type: 'tool_use', name: 'Read', input: { file_path: '/work/repo/src/sum.js' } });
    messages = [...messages, ...toolRound('a4', 'Read', {}, 'a - b')];
    expect(await ask(messages)).toMatchObject({ type: 'tool_use', name: 'Edit' });
  });

  it('answers the second human turn from the second scripted turn (non-streaming)', async () => {
    const messages: Msg[] = [prompt, { role: 'assistant', content: 'Fixed sum; tests pass.' }, { role: 'user', content: 'tests are red: fix again' }];
    const final = await client.messages.create({ model: 'claude-test', max_tokens: 100, system: SYSTEM, messages, tools: TOOLS });
    expect(final.content).toEqual([{ type: 'text', text: 'Second turn: nothing more.' }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(server.requests.at(-1)).toMatchObject({ session: 'implement-t1', turnIndex: 1, view: { humanTurns: 2 } });
  });

  it('never answers a side request (no tools declared) with a tool call', async () => {
    const title = await client.messages.create({
      model: 'claude-haiku',
      max_tokens: 50,
      system: 'Generate a concise title for this conversation. Respond with JSON {"title": string}.',
      messages: [prompt],
    });
    expect(title.content[0]).toEqual({ type: 'text', text: '{"title":"Scripted session"}' });
    // Claude Code 2.1.197's title request: structured output with a JSON schema.
    const structured = await client.messages.create({
      model: 'claude-haiku',
      max_tokens: 64,
      messages: [{ role: 'user', content: '<session>\n[polly task=t1 role=implement] fix sum\n</session>' }],
      output_config: {
        format: {
          type: 'json_schema',
          schema: { type: 'object', properties: { title: { type: 'string' }, n: { type: 'integer' }, tags: { type: 'array' } }, required: ['title'] },
        },
      },
    } as never);
    expect(JSON.parse((structured.content[0] as { text: string }).text)).toEqual({ title: 'Scripted session', n: 0, tags: [] });
    expect(server.requests.at(-1)?.session).toBeNull();
    const quota = await client.messages.create({ model: 'claude-haiku', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] });
    expect(quota.content).toEqual([{ type: 'text', text: 'OK.' }]);
    expect(server.requests.at(-1)?.session).toBeNull();
  });

  it('counts tokens, answers connectivity probes, rejects bad bodies and unknown paths', async () => {
    const count = await client.messages.countTokens({ model: 'claude-test', messages: [prompt], tools: TOOLS });
    expect(count.input_tokens).toBeGreaterThan(10);
    expect((await fetch(`${server.url}/`, { method: 'HEAD' })).status).toBe(200);
    const bad = await fetch(`${server.url}/v1/messages`, { method: 'POST', body: JSON.stringify({ model: 'x' }), headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/messages/);
    const missing = await fetch(`${server.url}/v1/nope`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('/v1/nope');
    const all = (await (await fetch(`${server.url}/_polly/requests`)).json()) as unknown[];
    expect(all.length).toBe(server.requests.length);
  });

  it('says so when a session runs out of turns', async () => {
    const messages: Msg[] = [prompt, { role: 'assistant', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'c' }, { role: 'user', content: 'd' }];
    const final = await client.messages.create({ model: 'claude-test', max_tokens: 100, messages, tools: TOOLS });
    expect(final.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('has no turn 3') });
  });
});
