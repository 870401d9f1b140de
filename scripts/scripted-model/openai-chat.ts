/**
 * OpenAI chat completions for the scripted model server: what `pi` (provider `api:
 * "openai-completions"` in its models.json) and other OpenAI-compatible clients call.
 *
 * Routes: `POST /v1/chat/completions` (streaming SSE of `chat.completion.chunk` objects ending
 * with `data: [DONE]`, or one `chat.completion` object when `stream` is false) and
 * `GET /v1/models`. The `/v1` prefix is optional (clients differ in what their base URL holds).
 *
 * Wire format source: the OpenAI API reference (Chat Completions, "The chat completion chunk
 * object") as consumed by pi-ai 0.73.1 `providers/openai-completions.js`: text in
 * `choices[0].delta.content`; tool calls in `choices[0].delta.tool_calls[i]` — the first chunk of
 * a call carries `index`, `id`, `type: "function"`, `function.name`, later chunks append to
 * `function.arguments`; `finish_reason` `tool_calls` | `stop`; with
 * `stream_options.include_usage` a last chunk with `choices: []` and `usage`.
 *
 * Script steps become the tool calls of whichever client asks, chosen from the tool names it
 * declares (`tools[].function.name`); pi 0.73.1's own tools (node_modules/@mariozechner/
 * pi-coding-agent/dist/core/tools/*.js) take `read {path}`, `write {path, content}`,
 * `edit {path, edits: [{oldText, newText}]}` and `bash {command}`. `call` steps are sent verbatim.
 */
import type { ApiContext, ApiRoute } from './api-route.js';
import { sendJson, startSse, writeSse } from './api-route.js';
import { planReply, type ConversationView, type Reply, type Step } from './script.js';

/** One message of a chat completions request (the fields the server reads). */
interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; function?: { name?: string; arguments?: string } }>;
  tool_call_id?: string;
}

interface ChatRequest {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ type?: string; function?: { name?: string } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/** A tool call as rendered for the chat API: the function name and its JSON arguments. */
export interface ChatToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Text of a message's content (a string, or the `text` parts of an array). */
function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part && typeof part.text === 'string' ? part.text : '')).join('');
}

/** pi bridges tool-result images with a synthetic user message; it is not a human turn. */
const IMAGE_BRIDGE = 'Attached image(s) from tool result:';

/**
 * The harness-neutral view of a chat completions request.
 *
 * - system: every `system`/`developer` message joined.
 * - human turns: `user` messages with text (tool results are `tool` messages in this API).
 * - `lastToolResult.isError` is always false: chat completions carries no error flag on a tool
 *   message (pi sends a blocked or failed call's text only), so callers that need to know must
 *   read the client's own events.
 */
export function chatConversationView(body: unknown): ConversationView {
  const request = (body && typeof body === 'object' ? body : {}) as ChatRequest;
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const system = messages
    .filter((m) => m && (m.role === 'system' || m.role === 'developer'))
    .map((m) => contentText(m.content))
    .join('\n');
  let firstUserText = '';
  let humanTurns = 0;
  let toolResultsSinceHuman = 0;
  let previousRole: string | null = null;
  for (const m of messages) {
    if (!m || typeof m !== 'object') continue;
    if (m.role === 'user') {
      const text = contentText(m.content);
      const bridge = previousRole === 'tool' && text.startsWith(IMAGE_BRIDGE);
      if (text.length > 0 && !bridge) {
        if (humanTurns === 0) firstUserText = text;
        humanTurns += 1;
        toolResultsSinceHuman = 0;
      }
    } else if (m.role === 'tool') {
      toolResultsSinceHuman += 1;
    }
    previousRole = m.role;
  }
  const last = messages[messages.length - 1];
  const lastToolResult = last && last.role === 'tool' ? { text: contentText(last.content), isError: false } : null;
  const tools = (Array.isArray(request.tools) ? request.tools : []).map((t) => t?.function?.name).filter((n): n is string => typeof n === 'string');
  return { system, firstUserText, humanTurns, toolResultsSinceHuman, lastToolResult, tools };
}

/** Candidate tool names per step kind, in preference order (pi's names first). */
const TOOL_NAMES = {
  read: ['read', 'Read', 'read_file'],
  write: ['write', 'Write', 'write_file'],
  edit: ['edit', 'Edit', 'edit_file'],
  run: ['bash', 'Bash', 'shell', 'exec_command'],
} as const;

function pickName(kind: keyof typeof TOOL_NAMES, declared: string[]): string {
  const names = TOOL_NAMES[kind];
  return names.find((n) => declared.includes(n)) ?? names[0];
}

/**
 * Render one script step as a chat tool call for a client that declared `declared` tools.
 * Argument shapes follow the name chosen: pi's (`edit` takes `edits: [{oldText, newText}]`),
 * Claude-style capitalised names (`file_path`, `old_string`/`new_string`), or snake_case
 * `*_file` names (`path`, `old_text`/`new_text`). An undeclared kind falls back to pi's name, so
 * the client answers "tool not found" as it would to a real model.
 */
export function renderChatToolCall(step: Exclude<Step, { finish: string }>, declared: string[], id: string): ChatToolCall {
  const call = (name: string, input: Record<string, unknown>): ChatToolCall => ({ id, name, arguments: JSON.stringify(input) });
  if ('call' in step) return call(step.call.tool, step.call.input ?? {});
  if ('read' in step) {
    const name = pickName('read', declared);
    return call(name, name === 'Read' ? { file_path: step.read } : { path: step.read });
  }
  if ('write' in step) {
    const name = pickName('write', declared);
    return call(name, name === 'Write' ? { file_path: step.write.path, content: step.write.content } : { path: step.write.path, content: step.write.content });
  }
  if ('edit' in step) {
    const name = pickName('edit', declared);
    const { path, old, new: replacement } = step.edit;
    if (name === 'Edit') return call(name, { file_path: path, old_string: old, new_string: replacement });
    if (name === 'edit_file') return call(name, { path, old_text: old, new_text: replacement });
    return call(name, { path, edits: [{ oldText: old, newText: replacement }] });
  }
  const name = pickName('run', declared);
  return call(name, name === 'exec_command' ? { cmd: step.run } : { command: step.run });
}

/** A rough, deterministic token count (4 characters a token), for usage figures. */
function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

interface Rendered {
  text: string | null;
  toolCall: ChatToolCall | null;
  finishReason: 'stop' | 'tool_calls';
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

function render(reply: Reply, view: ConversationView, body: unknown, turnIndex: number): Rendered {
  const promptTokens = tokens(JSON.stringify((body as ChatRequest)?.messages ?? []));
  if (reply.kind === 'text') {
    const completion = tokens(reply.text);
    return { text: reply.text, toolCall: null, finishReason: 'stop', usage: usage(promptTokens, completion) };
  }
  // Unique within a conversation: a turn's step runs once.
  const toolCall = renderChatToolCall(reply.step, view.tools, `call_t${turnIndex}_s${reply.stepIndex}`);
  return { text: null, toolCall, finishReason: 'tool_calls', usage: usage(promptTokens, tokens(toolCall.arguments)) };
}

function usage(prompt: number, completion: number): Rendered['usage'] {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

let completionCounter = 0;

function completionId(): string {
  completionCounter += 1;
  return `chatcmpl-scripted-${Date.now().toString(36)}-${completionCounter}`;
}

/** Split `s` into `parts` roughly equal non-empty pieces (at least one piece). */
function split(s: string, parts: number): string[] {
  if (s.length === 0) return [''];
  const size = Math.max(1, Math.ceil(s.length / parts));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function writeStream(ctx: ApiContext, model: string, rendered: Rendered, includeUsage: boolean): void {
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: null,
    choices,
    ...extra,
  });
  const choice = (delta: Record<string, unknown>, finishReason: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finishReason });
  startSse(ctx.res);
  writeSse(ctx.res, null, chunk([choice({ role: 'assistant', content: '' })]));
  if (rendered.text !== null) {
    for (const piece of split(rendered.text, 3)) writeSse(ctx.res, null, chunk([choice({ content: piece })]));
  }
  if (rendered.toolCall) {
    const tc = rendered.toolCall;
    writeSse(ctx.res, null, chunk([choice({ tool_calls: [{ index: 0, id: tc.id, type: 'function', function: { name: tc.name, arguments: '' } }] })]));
    for (const piece of split(tc.arguments, 2)) {
      writeSse(ctx.res, null, chunk([choice({ tool_calls: [{ index: 0, function: { arguments: piece } }] })]));
    }
  }
  writeSse(ctx.res, null, chunk([choice({}, rendered.finishReason)]));
  if (includeUsage) writeSse(ctx.res, null, chunk([], { usage: rendered.usage }));
  writeSse(ctx.res, null, '[DONE]');
  ctx.res.end();
}

function writeCompletion(ctx: ApiContext, model: string, rendered: Rendered): void {
  const message: Record<string, unknown> = { role: 'assistant', content: rendered.text, refusal: null };
  if (rendered.toolCall) {
    const tc = rendered.toolCall;
    message.tool_calls = [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }];
  }
  sendJson(ctx.res, 200, {
    id: completionId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: null,
    choices: [{ index: 0, message, logprobs: null, finish_reason: rendered.finishReason }],
    usage: rendered.usage,
  });
}

async function handleCompletions(ctx: ApiContext): Promise<void> {
  const request = (ctx.body && typeof ctx.body === 'object' ? ctx.body : null) as ChatRequest | null;
  if (!request || !Array.isArray(request.messages)) {
    return sendJson(ctx.res, 400, {
      error: { type: 'invalid_request_error', param: 'messages', message: 'a chat completions request needs a "messages" array' },
    });
  }
  const view = chatConversationView(request);
  const plan = planReply(ctx.script, view);
  ctx.record({ view, session: plan.session?.name ?? null, turnIndex: plan.turnIndex, reply: plan.reply });
  await ctx.pace(plan.session?.name ?? null);
  const model = typeof request.model === 'string' && request.model ? request.model : 'scripted';
  const rendered = render(plan.reply, view, request, plan.turnIndex);
  ctx.record({ usage: { inputTokens: rendered.usage.prompt_tokens, outputTokens: rendered.usage.completion_tokens } });
  if (request.stream) writeStream(ctx, model, rendered, request.stream_options?.include_usage === true);
  else writeCompletion(ctx, model, rendered);
}

/** The models list: one scripted model (clients that probe `/v1/models` accept any id). */
function handleModels(ctx: ApiContext): void {
  sendJson(ctx.res, 200, {
    object: 'list',
    data: [{ id: 'scripted', object: 'model', created: 0, owned_by: 'polly-scripted-model' }],
  });
}

export const chatRoutes: ApiRoute[] = [
  { api: 'openai-chat', method: 'POST', path: /^(\/v1)?\/chat\/completions\/?$/, handle: handleCompletions },
  { api: 'openai-chat', method: 'GET', path: /^(\/v1)?\/models\/?$/, handle: handleModels },
];
