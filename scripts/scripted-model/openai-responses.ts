/**
 * The OpenAI Responses API, as much of it as the real `codex` CLI (0.171.0) needs to run against
 * the scripted model server: `POST /v1/responses` (streaming SSE, or one JSON object when the
 * request says `stream: false`).
 *
 * Wire format (source: codex-rs `codex-api/src/sse/responses.rs` and requests captured from
 * codex 0.171.0 in this repository's tests): codex sends `{model, instructions?, input: [items],
 * tools: [...], stream: true, ...}` where `input` holds `message` items (roles `developer`,
 * `user`, `assistant`), `function_call` / `function_call_output`, `custom_tool_call` /
 * `custom_tool_call_output` and `reasoning` items. Codex acts on `response.output_item.done`
 * (one complete item each) and on `response.completed` (`response.id`, `response.usage`); it
 * ignores the deltas it does not need, and treats a stream that ends without
 * `response.completed` as an error.
 *
 * Script steps become Codex's own tools, chosen from the tool names the request declares:
 * - `run: CMD`  → `exec_command {cmd}` (unified exec), else `shell_command {command}`, else
 *   `shell {command: ["bash", "-lc", CMD]}`;
 * - `read: PATH` → the same shell tool running `cat -- 'PATH'`;
 * - `write` / `edit` → `apply_patch` (a freeform `custom` tool in 0.171 for models with bundled
 *   metadata such as `gpt-5.5`, or a `function` tool taking `{input}`) with `*** Add File` /
 *   `*** Update File` hunks; when no `apply_patch` is declared (models without bundled metadata
 *   get only `exec_command`), a shell `printf` that writes the whole file;
 * - `call: {tool, input}` → that tool verbatim (a `custom` tool gets `input.input` as its text).
 *
 * An `edit` replaces a substring, but apply_patch works on whole lines, so the server reads the
 * file from the workspace (the `<cwd>` in codex's `<environment_context>` message) to turn the
 * substring into whole-line hunks. The server and the agent share a machine in tests and in the
 * demo; if the file cannot be read the step's `old`/`new` are taken as whole lines.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, isAbsolute, join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { sendJson, startSse, writeSse, type ApiRoute } from './api-route.js';
import { planReply, type ConversationView, type Reply, type Step } from './script.js';

/** A tool the client declared: its name, kind, and the namespace holding it (if any). */
export interface DeclaredTool {
  name: string;
  /** `function` (JSON arguments), `custom` (freeform text input), or another hosted tool type. */
  kind: string;
  namespace: string | null;
}

/** An output item the server returns (a Responses API `message`, `function_call` or `custom_tool_call`). */
export type OutputItem =
  | { type: 'message'; id: string; role: 'assistant'; status: 'completed'; content: { type: 'output_text'; text: string; annotations: [] }[] }
  | { type: 'function_call'; id: string; call_id: string; name: string; namespace?: string; arguments: string; status: 'completed' }
  | { type: 'custom_tool_call'; id: string; call_id: string; name: string; input: string; status: 'completed' };

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * User messages codex adds on its own (environment, AGENTS.md, skills, aborted-turn notes…):
 * they are context, not human turns.
 */
const CODEX_CONTEXT_MESSAGE =
  /^\s*(<(environment_context|user_instructions|user_shell_command|turn_aborted|subagent_notification|skill|skills_instructions|permissions instructions|apps_instructions|collaboration_mode|INSTRUCTIONS|hook_)[\s>_]|# AGENTS\.md instructions)/;

const TOOL_OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output', 'mcp_tool_call_output', 'tool_search_output']);

/** The text of a message's `content` (a string, or a list of `input_text`/`output_text` parts). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

/** The text of a tool output item (`output` is a string or a list of content parts). */
function toolOutputText(item: Json): string {
  const out = item.output;
  if (typeof out === 'string') return out;
  if (isObject(out) && typeof out.content === 'string') return out.content;
  return contentText(out);
}

/**
 * Whether a tool output reads as a failure. Codex sends plain text, not a flag: a command that
 * exited non-zero says `Process exited with code N` / `Exit code: N`; apply_patch failures,
 * sandbox and hook denials say so in words.
 */
export function looksLikeToolError(text: string): boolean {
  const exit = /(?:Process exited with code|Exit code:?|exit_code"?:)\s*(-?\d+)/i.exec(text);
  if (exit) return Number(exit[1]) !== 0;
  return /\b(blocked|denied|rejected|not permitted|permission denied|failed to apply|verification failed|error:)/i.test(text);
}

/** Tools declared in a Responses request, flattening `namespace` groups. */
export function declaredTools(body: unknown): DeclaredTool[] {
  const tools = isObject(body) && Array.isArray(body.tools) ? body.tools : [];
  const out: DeclaredTool[] = [];
  for (const t of tools) {
    if (!isObject(t)) continue;
    if (t.type === 'namespace' && Array.isArray(t.tools)) {
      const ns = typeof t.name === 'string' ? t.name : '';
      for (const inner of t.tools) {
        if (isObject(inner) && typeof inner.name === 'string') out.push({ name: inner.name, kind: String(inner.type ?? 'function'), namespace: ns });
      }
      continue;
    }
    const name = typeof t.name === 'string' ? t.name : typeof t.type === 'string' ? t.type : null;
    if (name) out.push({ name, kind: String(t.type ?? 'function'), namespace: null });
  }
  return out;
}

/** The workspace codex reports in its latest `<environment_context><cwd>…</cwd>` message, or null. */
export function workspaceCwd(body: unknown): string | null {
  const input = isObject(body) && Array.isArray(body.input) ? body.input : [];
  let cwd: string | null = null;
  for (const item of input) {
    if (!isObject(item) || item.type !== 'message' || item.role !== 'user') continue;
    const m = /<cwd>([^<]+)<\/cwd>/.exec(contentText(item.content));
    if (m?.[1]) cwd = m[1].trim();
  }
  return cwd;
}

/**
 * Reduce a Responses request body to the harness-neutral {@link ConversationView}.
 * System = `instructions` plus developer/system messages; human turns = user messages that are
 * not codex's own context messages; tool results = `*_output` items after the last human turn.
 */
export function responsesView(body: unknown): ConversationView {
  const b = isObject(body) ? body : {};
  const input = Array.isArray(b.input) ? b.input : typeof b.input === 'string' ? [{ type: 'message', role: 'user', content: b.input }] : [];
  const system: string[] = typeof b.instructions === 'string' && b.instructions ? [b.instructions] : [];
  let firstUserText = '';
  let humanTurns = 0;
  let toolResultsSinceHuman = 0;
  let lastToolResult: ConversationView['lastToolResult'] = null;
  for (const raw of input) {
    if (!isObject(raw)) continue;
    const type = raw.type ?? 'message';
    if (type === 'message') {
      const text = contentText(raw.content);
      if (raw.role === 'developer' || raw.role === 'system') system.push(text);
      else if (raw.role === 'user' && text.trim() !== '' && !CODEX_CONTEXT_MESSAGE.test(text)) {
        if (humanTurns === 0) firstUserText = text;
        humanTurns += 1;
        toolResultsSinceHuman = 0;
      }
      lastToolResult = null;
    } else if (typeof type === 'string' && TOOL_OUTPUT_TYPES.has(type)) {
      toolResultsSinceHuman += 1;
      const text = toolOutputText(raw);
      lastToolResult = { text, isError: looksLikeToolError(text) };
    } else if (type !== 'reasoning') {
      lastToolResult = null;
    }
  }
  return { system: system.join('\n\n'), firstUserText, humanTurns, toolResultsSinceHuman, lastToolResult, tools: declaredTools(body).map((t) => t.name) };
}

/** Quote a string for a POSIX shell (single quotes). */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;

function lines(text: string): string[] {
  const ls = text.split('\n');
  if (ls.length > 1 && ls[ls.length - 1] === '') ls.pop();
  return ls;
}

/** An apply_patch `*** Add File` patch (the content gets a trailing newline). */
export function addFilePatch(path: string, content: string): string {
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines(content).map((l) => `+${l}`), '*** End Patch', ''].join('\n');
}

/**
 * An apply_patch `*** Update File` patch replacing the first `old` with `new` in `current` (the
 * file's text): the hunk covers the whole lines that hold `old`. With `current` null (file not
 * readable) `old` and `new` are taken as whole lines.
 */
export function updateFilePatch(path: string, current: string | null, oldText: string, newText: string): string {
  let minus = lines(oldText);
  let plus = lines(newText);
  if (current !== null) {
    const at = current.indexOf(oldText);
    if (at >= 0) {
      const start = current.lastIndexOf('\n', at - 1) + 1;
      const endNl = current.indexOf('\n', at + oldText.length);
      const end = endNl < 0 ? current.length : endNl;
      const region = current.slice(start, end);
      minus = region.split('\n');
      plus = (current.slice(start, at) + newText + current.slice(at + oldText.length, end)).split('\n');
    }
  }
  return ['*** Begin Patch', `*** Update File: ${path}`, '@@', ...minus.map((l) => `-${l}`), ...plus.map((l) => `+${l}`), '*** End Patch', ''].join('\n');
}

function readWorkspaceFile(cwd: string | null, path: string): string | null {
  const full = isAbsolute(path) ? path : cwd ? join(cwd, path) : null;
  if (!full) return null;
  try {
    return readFileSync(full, 'utf8');
  } catch {
    return null;
  }
}

function functionCall(name: string, args: unknown, namespace: string | null = null): OutputItem {
  return {
    type: 'function_call',
    id: newId('fc'),
    call_id: newId('call'),
    name,
    ...(namespace ? { namespace } : {}),
    arguments: JSON.stringify(args),
    status: 'completed',
  };
}

function textItem(text: string): OutputItem {
  return { type: 'message', id: newId('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** A shell command as a call of whichever shell tool codex declared, or null if it declared none. */
export function shellCall(command: string, tools: DeclaredTool[]): OutputItem | null {
  const has = (n: string) => tools.some((t) => t.name === n && t.namespace === null);
  if (has('exec_command')) return functionCall('exec_command', { cmd: command });
  if (has('shell_command')) return functionCall('shell_command', { command });
  if (has('shell')) return functionCall('shell', { command: ['bash', '-lc', command] });
  return null;
}

function patchCall(patch: string, tools: DeclaredTool[]): OutputItem | null {
  const tool = tools.find((t) => t.name === 'apply_patch' && t.namespace === null);
  if (!tool) return null;
  if (tool.kind === 'custom') return { type: 'custom_tool_call', id: newId('ctc'), call_id: newId('call'), name: 'apply_patch', input: patch, status: 'completed' };
  return functionCall('apply_patch', { input: patch });
}

function writeViaShell(path: string, content: string): string {
  const dir = dirname(path);
  const mkdir = dir === '.' || dir === '' ? '' : `mkdir -p -- ${shellQuote(dir)} && `;
  return `${mkdir}printf '%s' ${shellQuote(content)} > ${shellQuote(path)}`;
}

/**
 * Render one script step as a Codex tool call (see the module comment for the mapping). Returns a
 * text item explaining the problem when the request declares no tool that can carry the step.
 */
export function renderCodexStep(step: Exclude<Step, { finish: string }>, tools: DeclaredTool[], cwd: string | null): OutputItem {
  const missing = (what: string) =>
    textItem(`(scripted model: cannot render ${what}: the request declares none of the needed tools; declared: ${tools.map((t) => t.name).join(', ') || 'none'})`);
  if ('run' in step) return shellCall(step.run, tools) ?? missing('a run step');
  if ('read' in step) return shellCall(`cat -- ${shellQuote(step.read)}`, tools) ?? missing('a read step');
  if ('write' in step) {
    const { path, content } = step.write;
    if (content !== '') {
      const call = patchCall(addFilePatch(path, content), tools);
      if (call) return call;
    }
    return shellCall(writeViaShell(path, content), tools) ?? missing('a write step');
  }
  if ('edit' in step) {
    const { path, old, new: replacement } = step.edit;
    const current = readWorkspaceFile(cwd, path);
    const call = patchCall(updateFilePatch(path, current, old, replacement), tools);
    if (call) return call;
    if (current?.includes(old)) {
      return shellCall(writeViaShell(path, current.replace(old, replacement)), tools) ?? missing('an edit step');
    }
    return shellCall(`grep -qF -- ${shellQuote(old)} ${shellQuote(path)}`, tools) ?? missing('an edit step');
  }
  const { tool, input } = step.call;
  const direct = tools.find((t) => t.name === tool && t.namespace === null);
  if (direct?.kind === 'custom') {
    const text = typeof input.input === 'string' ? input.input : JSON.stringify(input);
    return { type: 'custom_tool_call', id: newId('ctc'), call_id: newId('call'), name: tool, input: text, status: 'completed' };
  }
  if (direct) return functionCall(tool, input);
  const nested = tools.find((t) => t.namespace !== null && (t.name === tool || `${t.namespace}${t.name}` === tool || `${t.namespace}__${t.name}` === tool));
  if (nested) return functionCall(nested.name, input, nested.namespace);
  // Not declared: call it anyway, verbatim; codex answers with its own "unsupported call" output.
  return functionCall(tool, input);
}

/** A Responses `usage` object (token counts estimated at ~4 characters per token). */
function usageFor(body: unknown, items: OutputItem[]) {
  const inputTokens = Math.max(1, Math.ceil(JSON.stringify(isObject(body) ? (body.input ?? '') : '').length / 4));
  const outputTokens = Math.max(1, Math.ceil(JSON.stringify(items).length / 4));
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

function responseObject(id: string, model: unknown, status: 'in_progress' | 'completed', output: OutputItem[], usage: ReturnType<typeof usageFor> | null) {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: typeof model === 'string' ? model : 'scripted',
    output,
    ...(usage ? { usage } : {}),
  };
}

/** Stream one response as the SSE sequence a Responses API client expects. */
function streamResponse(res: ServerResponse, id: string, model: unknown, items: OutputItem[], usage: ReturnType<typeof usageFor>): void {
  startSse(res);
  let seq = 0;
  const send = (type: string, data: Json) => writeSse(res, type, { type, sequence_number: seq++, ...data });
  send('response.created', { response: responseObject(id, model, 'in_progress', [], null) });
  send('response.in_progress', { response: responseObject(id, model, 'in_progress', [], null) });
  items.forEach((item, outputIndex) => {
    if (item.type === 'message') {
      const text = item.content[0]?.text ?? '';
      send('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      send('response.content_part.added', { output_index: outputIndex, item_id: item.id, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      send('response.output_text.delta', { output_index: outputIndex, item_id: item.id, content_index: 0, delta: text });
      send('response.output_text.done', { output_index: outputIndex, item_id: item.id, content_index: 0, text });
      send('response.content_part.done', { output_index: outputIndex, item_id: item.id, content_index: 0, part: item.content[0] });
    } else if (item.type === 'function_call') {
      send('response.output_item.added', { output_index: outputIndex, item: { ...item, arguments: '', status: 'in_progress' } });
      send('response.function_call_arguments.delta', { output_index: outputIndex, item_id: item.id, delta: item.arguments });
      send('response.function_call_arguments.done', { output_index: outputIndex, item_id: item.id, arguments: item.arguments });
    } else {
      send('response.output_item.added', { output_index: outputIndex, item: { ...item, input: '', status: 'in_progress' } });
      send('response.custom_tool_call_input.delta', { output_index: outputIndex, item_id: item.id, delta: item.input });
      send('response.custom_tool_call_input.done', { output_index: outputIndex, item_id: item.id, input: item.input });
    }
    send('response.output_item.done', { output_index: outputIndex, item });
  });
  send('response.completed', { response: responseObject(id, model, 'completed', items, usage) });
  res.end();
}

/** The output items for a planned reply. */
export function renderReply(reply: Reply, body: unknown): OutputItem[] {
  if (reply.kind === 'text') return [textItem(reply.text)];
  return [renderCodexStep(reply.step, declaredTools(body), workspaceCwd(body))];
}

export const responsesRoutes: ApiRoute[] = [
  {
    api: 'openai-responses',
    method: 'POST',
    path: /^(\/v1)?\/responses\/?$/,
    async handle({ res, body, script, record, pace }) {
      if (!isObject(body)) {
        return sendJson(res, 400, { error: { type: 'invalid_request_error', message: 'POST /v1/responses needs a JSON object body' } });
      }
      const view = responsesView(body);
      const plan = planReply(script, view);
      record({ view, session: plan.session?.name ?? null, turnIndex: plan.turnIndex, reply: plan.reply });
      await pace(plan.session?.name ?? null);
      const items = renderReply(plan.reply, body);
      const usage = usageFor(body, items);
      record({ usage: { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens } });
      const id = newId('resp');
      if (body.stream === false || body.stream === undefined) return sendJson(res, 200, responseObject(id, body.model, 'completed', items, usage));
      streamResponse(res, id, body.model, items, usage);
    },
  },
  {
    // Remote compaction (codex asks the provider to summarise a long history; codex-api's
    // compaction endpoint takes {model, input, instructions} and returns {output: [items]}):
    // answer with the history unchanged, so scripted conversations never lose turns. Scripted
    // conversations are far too short for codex to compact, so codex has not been seen calling it.
    api: 'openai-responses',
    method: 'POST',
    path: /^(\/v1)?\/responses\/compact\/?$/,
    handle({ res, body, record }) {
      record({ view: null, session: null, turnIndex: null, reply: null });
      const input = isObject(body) && Array.isArray(body.input) ? body.input : [];
      sendJson(res, 200, { output: input });
    },
  },
];
