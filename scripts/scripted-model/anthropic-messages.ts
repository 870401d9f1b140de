/**
 * The Anthropic Messages API of the scripted model server, enough for the real `claude` CLI
 * (`ANTHROPIC_BASE_URL=<server>`) and the Anthropic SDKs:
 *
 * - `POST /v1/messages`, streaming (SSE: message_start, content_block_start, content_block_delta
 *   with text_delta / input_json_delta, content_block_stop, message_delta with stop_reason and
 *   usage, message_stop) and non-streaming (one `message` object). Wire format source:
 *   https://docs.anthropic.com/en/api/messages-streaming and /en/api/messages.
 * - `POST /v1/messages/count_tokens` → `{input_tokens}` (an estimate: characters / 4).
 *
 * A script step becomes one of Claude Code's own tools (tool names and input shapes as Claude Code
 * 2.x declares them): write → `Write{file_path, content}`, edit → `Edit{file_path, old_string,
 * new_string}`, run → `Bash{command, description}`, read → `Read{file_path}`, call → the named tool
 * with the input verbatim. Relative paths are made absolute against the working directory Claude
 * Code states in its system prompt ("Working directory: …"). Claude Code refuses to Edit a file it
 * has not Read in the session, so an `edit` whose file was not read or written earlier in the same
 * turn gets a `Read` of it inserted first. It also refuses to Write over an existing file it has not
 * read ("File has not been read yet"); the server cannot see the disk, so it answers that error
 * with a `Read` of the file and repeats the `Write` (a script may also `read` the file first).
 *
 * Side requests (no tools declared: title generation, topic detection, quota probes…) and
 * conversations no session matches get a short text answer and never a tool call; a request for
 * structured output (`output_config.format` json_schema, as Claude Code's title generation sends)
 * gets a small JSON value that satisfies the schema. They are recorded with `session: null`.
 */
import { randomBytes } from 'node:crypto';
import { isAbsolute, posix } from 'node:path';
import type { ServerResponse } from 'node:http';
import { sendJson, startSse, writeSse, type ApiContext, type ApiRoute } from './api-route.js';
import { planReply, type ConversationView, type ModelScript, type Reply, type ReplyPlan, type Step } from './script.js';

/** One content block of a request message (only the fields the server reads). */
interface RequestBlock {
  type: string;
  text?: string;
  content?: string | RequestBlock[];
  is_error?: boolean;
}

interface RequestMessage {
  role: 'user' | 'assistant';
  content: string | RequestBlock[];
}

/** The subset of a Messages API request body the server reads. */
export interface MessagesRequest {
  model?: string;
  system?: string | RequestBlock[];
  messages?: RequestMessage[];
  tools?: { name?: string }[];
  stream?: boolean;
  max_tokens?: number;
  /** Structured output (Claude Code's title generation asks for `{title}` this way). */
  output_config?: { format?: { type?: string; schema?: unknown } };
}

/** A response content block, as the Messages API returns it. */
export type ResponseBlock = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function blocksOf(content: string | RequestBlock[] | undefined): RequestBlock[] {
  if (content === undefined) return [];
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function textOf(content: string | RequestBlock[] | undefined): string {
  return blocksOf(content)
    .map((b) => (b.type === 'text' ? (b.text ?? '') : b.type === 'tool_result' ? textOf(b.content) : ''))
    .filter(Boolean)
    .join('\n');
}

/** A human message: a user message with no tool_result block (Claude Code sends tool results as user messages). */
function isHuman(m: RequestMessage): boolean {
  return m.role === 'user' && !blocksOf(m.content).some((b) => b.type === 'tool_result');
}

/** Read a Messages API request into the harness-neutral {@link ConversationView}. */
export function anthropicConversationView(body: MessagesRequest): ConversationView {
  const messages = body.messages ?? [];
  const system = typeof body.system === 'string' ? body.system : textOf(body.system);
  let humanTurns = 0;
  let lastHuman = -1;
  messages.forEach((m, i) => {
    if (isHuman(m)) {
      humanTurns += 1;
      lastHuman = i;
    }
  });
  let toolResultsSinceHuman = 0;
  for (const m of messages.slice(lastHuman + 1)) {
    if (m.role === 'user') toolResultsSinceHuman += blocksOf(m.content).filter((b) => b.type === 'tool_result').length;
  }
  const last = messages.at(-1);
  const lastResult =
    last && last.role === 'user'
      ? blocksOf(last.content)
          .filter((b) => b.type === 'tool_result')
          .at(-1)
      : undefined;
  const firstUser = messages.find((m) => m.role === 'user');
  return {
    system,
    firstUserText: firstUser ? textOf(firstUser.content) : '',
    humanTurns,
    toolResultsSinceHuman,
    lastToolResult: lastResult ? { text: textOf(lastResult.content), isError: lastResult.is_error === true } : null,
    tools: (body.tools ?? []).map((t) => t.name ?? '').filter(Boolean),
  };
}

/** The working directory Claude Code states in its prompt ("Working directory: /abs/path"), or null. */
export function statedWorkingDirectory(view: Pick<ConversationView, 'system' | 'firstUserText'>): string | null {
  for (const text of [view.system, view.firstUserText]) {
    const m = /(?:Primary working directory|Working directory|cwd):\s*(\/[^\s`'"]*)/i.exec(text);
    if (m?.[1]) return m[1];
  }
  return null;
}

function absolute(path: string, cwd: string | null): string {
  if (isAbsolute(path) || !cwd) return path;
  return posix.join(cwd, path);
}

function stepPath(step: Step): string | null {
  if ('read' in step) return step.read;
  if ('write' in step) return step.write.path;
  if ('edit' in step) return step.edit.path;
  return null;
}

/**
 * Claude Code's view of a turn's steps: an `edit` of a file not read or written earlier in the
 * turn is preceded by a `read` of it (Claude Code's Edit tool requires a prior Read).
 */
export function expandStepsForClaude(steps: Step[]): Step[] {
  const seen = new Set<string>();
  const out: Step[] = [];
  for (const step of steps) {
    if ('edit' in step && !seen.has(step.edit.path)) out.push({ read: step.edit.path });
    const p = stepPath(step);
    if (p !== null) seen.add(p);
    out.push(step);
  }
  return out;
}

function toolId(): string {
  return `toolu_01${randomBytes(11).toString('hex')}`;
}

/** Render one tool step as a Claude Code `tool_use` block. */
export function renderClaudeToolUse(step: Exclude<Step, { finish: string }>, cwd: string | null, id = toolId()): ResponseBlock {
  if ('call' in step) return { type: 'tool_use', id, name: step.call.tool, input: step.call.input };
  if ('write' in step) {
    return { type: 'tool_use', id, name: 'Write', input: { file_path: absolute(step.write.path, cwd), content: step.write.content } };
  }
  if ('edit' in step) {
    return {
      type: 'tool_use',
      id,
      name: 'Edit',
      input: { file_path: absolute(step.edit.path, cwd), old_string: step.edit.old, new_string: step.edit.new },
    };
  }
  if ('read' in step) return { type: 'tool_use', id, name: 'Read', input: { file_path: absolute(step.read, cwd) } };
  const command = step.run;
  return { type: 'tool_use', id, name: 'Bash', input: { command, description: `Run: ${command.slice(0, 60)}` } };
}

/** Claude Code's answer to a Write over an existing file it has not read in this session. */
const NOT_READ_YET = /^(<tool_use_error>)?File has not been read yet/;

/** The tool results after the last human message, in order. */
function toolResultsSinceHuman(body: MessagesRequest): { isError: boolean; text: string }[] {
  const messages = body.messages ?? [];
  let lastHuman = -1;
  messages.forEach((m, i) => {
    if (isHuman(m)) lastHuman = i;
  });
  const out: { isError: boolean; text: string }[] = [];
  for (const m of messages.slice(lastHuman + 1)) {
    if (m.role !== 'user') continue;
    for (const b of blocksOf(m.content)) if (b.type === 'tool_result') out.push({ isError: b.is_error === true, text: textOf(b.content) });
  }
  return out;
}

/**
 * {@link planReply} for Claude Code, recovering from "File has not been read yet" (a scripted
 * `write` over an existing file the session has not read): the server answers that error with a
 * `Read` of the file and then repeats the write. Still stateless: each recovery costs exactly two
 * extra tool results (the error and the Read), which are discounted from the progress count.
 */
export function planWithReadRecovery(script: ModelScript, view: ConversationView, results: { isError: boolean; text: string }[]): ReplyPlan {
  const recoveries = results.filter((r) => r.isError && NOT_READ_YET.test(r.text)).length;
  const base = planReply(script, { ...view, toolResultsSinceHuman: results.length - 2 * recoveries }, { expandSteps: expandStepsForClaude });
  if (recoveries === 0 || !base.session) return base;
  const turn = base.session.turns[base.turnIndex];
  if (!turn) return base;
  const toolSteps: Exclude<Step, { finish: string }>[] = [];
  for (const step of expandStepsForClaude(turn.steps)) {
    if ('finish' in step) break;
    toolSteps.push(step);
  }
  const n = results.length;
  const failedAt = (pos: number): number => pos - 2 * (recoveries - 1);
  const last = results[n - 1];
  const beforeLast = results[n - 2];
  if (last?.isError && NOT_READ_YET.test(last.text)) {
    const k = failedAt(n - 1);
    const step = toolSteps[k];
    const path = step ? stepPath(step) : null;
    if (path !== null) return { session: base.session, turnIndex: base.turnIndex, reply: { kind: 'tool', step: { read: path }, stepIndex: k } };
  } else if (beforeLast?.isError && NOT_READ_YET.test(beforeLast.text)) {
    const k = failedAt(n - 2);
    const step = toolSteps[k];
    if (step) return { session: base.session, turnIndex: base.turnIndex, reply: { kind: 'tool', step, stepIndex: k } };
  }
  return base;
}

/** Rough token estimate (characters / 4, at least 1). */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** A small value that satisfies a JSON schema (structured-output side requests). */
export function sampleForSchema(schema: unknown, key = ''): unknown {
  const s = (schema ?? {}) as { type?: string | string[]; properties?: Record<string, unknown>; items?: unknown; enum?: unknown[]; const?: unknown };
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'object' || s.properties) {
    return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, sampleForSchema(v, k)]));
  }
  if (type === 'array') return [];
  if (type === 'number' || type === 'integer') return 0;
  if (type === 'boolean') return false;
  if (type === 'null') return null;
  return key === 'title' ? 'Scripted session' : 'scripted';
}

function sideRequestText(view: ConversationView, body: MessagesRequest): string {
  const format = body.output_config?.format;
  if (format?.type === 'json_schema') return JSON.stringify(sampleForSchema(format.schema));
  const ask = `${view.system}\n${view.firstUserText}`.toLowerCase();
  if (/title/.test(ask) && /json/.test(ask)) return JSON.stringify({ title: 'Scripted session' });
  if (/title/.test(ask)) return 'Scripted session';
  return 'OK.';
}

/**
 * The content blocks and stop reason answering one request. A tool reply is given only when the
 * request declares tools (side requests never get one).
 */
export function answerMessages(
  body: MessagesRequest,
  ctx: Pick<ApiContext, 'script'>,
): {
  view: ConversationView;
  plan: ReturnType<typeof planReply>;
  content: ResponseBlock[];
  stopReason: 'tool_use' | 'end_turn';
} {
  const view = anthropicConversationView(body);
  const plan = planWithReadRecovery(ctx.script, view, toolResultsSinceHuman(body));
  const structured = body.output_config?.format?.type === 'json_schema';
  if (!plan.session || (view.tools.length === 0 && (structured || plan.reply.kind === 'tool'))) {
    // A side request (title, topic, quota…) or an unmatched conversation: text, never a tool call,
    // and recorded without a session so it does not count as the scripted agent's progress.
    const reply: Reply = { kind: 'text', text: sideRequestText(view, body) };
    return { view, plan: { session: null, turnIndex: plan.turnIndex, reply }, content: [{ type: 'text', text: reply.text }], stopReason: 'end_turn' };
  }
  const reply = plan.reply;
  if (reply.kind === 'tool') {
    return { view, plan, content: [renderClaudeToolUse(reply.step, statedWorkingDirectory(view))], stopReason: 'tool_use' };
  }
  return { view, plan, content: [{ type: 'text', text: reply.text }], stopReason: 'end_turn' };
}

function messageId(): string {
  return `msg_01${randomBytes(11).toString('hex')}`;
}

function streamMessage(res: ServerResponse, model: string, content: ResponseBlock[], stopReason: string, inputTokens: number, outputTokens: number): void {
  startSse(res);
  writeSse(res, 'message_start', {
    type: 'message_start',
    message: {
      id: messageId(),
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    },
  });
  writeSse(res, 'ping', { type: 'ping' });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      writeSse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      // A few deltas, as a real stream has: clients must concatenate them.
      for (const piece of chunk(block.text, 40)) {
        writeSse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
    } else {
      writeSse(res, 'content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const piece of chunk(JSON.stringify(block.input), 64)) {
        writeSse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
    }
    writeSse(res, 'content_block_stop', { type: 'content_block_stop', index });
  });
  writeSse(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  });
  writeSse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

function chunk(text: string, size: number): string[] {
  if (text.length === 0) return [''];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

async function handleMessages(ctx: ApiContext): Promise<void> {
  const body = ctx.body as MessagesRequest | undefined;
  if (!body || typeof body !== 'object' || !Array.isArray(body.messages)) {
    ctx.record({ view: null, session: null, turnIndex: null, reply: null });
    return sendJson(ctx.res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'messages: field required (a list)' } });
  }
  const { view, plan, content, stopReason } = answerMessages(body, ctx);
  ctx.record({ view, session: plan.session?.name ?? null, turnIndex: plan.session ? plan.turnIndex : null, reply: plan.reply });
  await ctx.pace(plan.session?.name ?? null);
  const model = body.model ?? 'claude-scripted';
  const inputTokens = estimateTokens(JSON.stringify(body.messages) + view.system);
  const outputTokens = estimateTokens(JSON.stringify(content));
  ctx.record({ usage: { inputTokens, outputTokens } });
  if (body.stream) return streamMessage(ctx.res, model, content, stopReason, inputTokens, outputTokens);
  return sendJson(ctx.res, 200, {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  });
}

function handleCountTokens(ctx: ApiContext): void {
  const body = (ctx.body ?? {}) as MessagesRequest;
  const text = JSON.stringify(body.messages ?? []) + JSON.stringify(body.system ?? '') + JSON.stringify(body.tools ?? []);
  ctx.record({ view: null, session: null, turnIndex: null, reply: null });
  sendJson(ctx.res, 200, { input_tokens: estimateTokens(text) });
}

export const anthropicRoutes: ApiRoute[] = [
  // `?beta=true` and a path prefix (a gateway base URL such as http://host/anthropic) are accepted.
  { api: 'anthropic-messages', method: 'POST', path: /\/v1\/messages\/count_tokens$/, handle: handleCountTokens },
  { api: 'anthropic-messages', method: 'POST', path: /\/v1\/messages$/, handle: handleMessages },
];
