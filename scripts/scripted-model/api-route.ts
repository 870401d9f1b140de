/**
 * The contract between the scripted model server and each API it speaks (Anthropic Messages,
 * OpenAI Responses, OpenAI chat completions). Each API module exports a list of routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConversationView, ModelScript, ReplyPlan } from './script.js';

/** One recorded request, for assertions in tests (`server.requests`, or GET /_polly/requests). */
export interface RecordedRequest {
  id: number;
  at: string;
  api: string;
  method: string;
  path: string;
  body: unknown;
  /** The parsed conversation, when the route is a model call. */
  view: ConversationView | null;
  /** The session matched and the reply given, when the route is a model call. */
  session: string | null;
  turnIndex: number | null;
  reply: ReplyPlan['reply'] | null;
  /** The token usage the reply reported (input, output), when the route is a model call; tests sum it against Polly's ledger. */
  usage?: { inputTokens: number; outputTokens: number } | null;
}

export interface ApiContext {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  /** The parsed JSON body (undefined for GET). */
  body: unknown;
  script: ModelScript;
  /** Record what the route saw and answered (called again with `usage` once the reply is rendered). */
  record(entry: Pick<RecordedRequest, 'view' | 'session' | 'turnIndex' | 'reply'> | Required<Pick<RecordedRequest, 'usage'>>): void;
  /** Wait for the matched session's `wait_for` sessions to have started, then its `latency_ms` (none for no session), before the reply is written. */
  pace(session: string | null): Promise<void>;
}

export interface ApiRoute {
  /** API family, e.g. `anthropic-messages`. */
  api: string;
  method: 'GET' | 'POST';
  path: RegExp;
  handle(ctx: ApiContext): Promise<void> | void;
}

/** Write a JSON response. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Start a server-sent-events response. */
export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

/** Write one SSE event (`event:` line optional). */
export function writeSse(res: ServerResponse, event: string | null, data: unknown): void {
  res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}
