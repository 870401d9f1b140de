/**
 * The MCP stdio transport Polly serves on: newline-delimited JSON-RPC 2.0 over a readable and a
 * writable stream (MCP's stdio transport, modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio),
 * with the error replies JSON-RPC requires (https://www.jsonrpc.org/specification, section 5.1)
 * that @modelcontextprotocol/sdk 1.32's `StdioServerTransport` does not send:
 *
 * - a line that is not JSON → `-32700 Parse error`, id null (the SDK reports it to `onerror` only);
 * - a JSON value that is not a request object — a number, a string, a batch array (MCP 2025-06-18
 *   removed batching), a missing or wrong `"jsonrpc": "2.0"`, a non-string `method` → `-32600
 *   Invalid Request`, with the request's id when it has a usable one, else null;
 * - a request whose `params` is not an object, a `tools/call` without a string `params.name`, or
 *   an `initialize`, `ping`, `tools/list` or `tools/call` whose params fail the SDK's schema of
 *   that request (an `initialize` without `clientInfo`) → `-32602 Invalid params` naming the
 *   field (the SDK answers these with -32603);
 * - a line longer than `maxLineBytes` → `-32600` naming the size and the limit, with the id when
 *   the line's first bytes show one (`{"jsonrpc":"2.0","id":7,…`). The SDK's ReadBuffer throws
 *   past 10 MiB and closes the session silently; here the line is discarded and the session goes on.
 *
 * Notifications (no `id`) that are invalid get no reply, as JSON-RPC says. Everything valid is
 * handed to `onmessage` unchanged, parsed with the SDK's own `JSONRPCMessageSchema`.
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';

/** Default limit of one request line: 1 MiB (bytes, without the newline). */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

export interface JsonRpcStdioTransportOptions {
  /** Longest request line accepted (bytes, without the newline; default {@link DEFAULT_MAX_LINE_BYTES}). */
  maxLineBytes?: number;
}

type Id = string | number | null;

/**
 * The SDK's schemas of the requests this server answers: a request that fails its schema is
 * answered -32602 naming the field (the SDK's Protocol answers a failed parse with -32603 and the
 * raw zod issues).
 */
const REQUEST_SCHEMAS: Record<string, { safeParse(v: unknown): { success: true } | { success: false; error: { issues: Array<{ message: string; path: PropertyKey[] }> } } }> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

function usableId(v: unknown): Id {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? v : null;
}

/** The id of an oversize request, read from its first bytes (`"id": 7` or `"id": "x"` before any nesting), else null. */
function idFromPrefix(prefix: string): Id {
  const m = /^\s*\{(?:[^{}[\]]*?,)?\s*"id"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*")/.exec(prefix);
  if (!m) return null;
  try {
    return usableId(JSON.parse(m[1]!));
  } catch {
    return null;
  }
}

/**
 * A Transport for `McpServer.connect` over `input` / `output`. `close()` stops reading and calls
 * `onclose`; the streams themselves are left open (they belong to the process).
 */
export function createJsonRpcStdioTransport(input: Readable, output: Writable, options: JsonRpcStdioTransportOptions = {}): Transport {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  let chunks: Buffer[] = [];
  let pending = 0;
  /** Discarding an oversize line: its first bytes (for the id) and its size so far. */
  let oversize: { prefix: string; bytes: number } | null = null;
  let closed = false;

  const write = (message: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (output.write(`${JSON.stringify(message)}\n`)) resolve();
      else output.once('drain', resolve);
    });

  const replyError = (id: Id, code: number, message: string, data?: unknown): void => {
    void write({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });
  };

  const handleLine = (line: string): void => {
    const text = line.replace(/\r$/, '');
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      replyError(null, PARSE_ERROR, `Parse error: the line is not valid JSON (${(error as Error).message}). Send one JSON-RPC 2.0 object per line.`);
      return;
    }
    if (Array.isArray(value)) {
      replyError(null, INVALID_REQUEST, 'Invalid Request: batches (JSON arrays) are not supported by MCP (2025-06-18); send one request object per line.');
      return;
    }
    if (value === null || typeof value !== 'object') {
      replyError(null, INVALID_REQUEST, `Invalid Request: expected a JSON-RPC 2.0 request object, found ${value === null ? 'null' : typeof value}.`);
      return;
    }
    const msg = value as Record<string, unknown>;
    const hasId = 'id' in msg;
    const id = usableId(msg.id);
    const isRequest = typeof msg.method === 'string' || !('result' in msg || 'error' in msg);
    const invalid = (what: string): void => {
      // An invalid notification (a method, no id) gets no reply; anything else does.
      if (!hasId && typeof msg.method === 'string') return;
      replyError(id, INVALID_REQUEST, `Invalid Request: ${what}.`);
    };
    if (msg.jsonrpc !== '2.0') return invalid(`"jsonrpc" must be exactly "2.0", found ${JSON.stringify(msg.jsonrpc) ?? 'nothing'}`);
    if (isRequest && typeof msg.method !== 'string') return invalid('"method" must be a string');
    if (hasId && id === null && msg.id !== null) return invalid(`"id" must be a string or a number, found ${JSON.stringify(msg.id)}`);
    if (typeof msg.method === 'string' && hasId) {
      if ('params' in msg && (msg.params === null || typeof msg.params !== 'object' || Array.isArray(msg.params))) {
        replyError(id, INVALID_PARAMS, `Invalid params: "params" of ${msg.method} must be an object, found ${JSON.stringify(msg.params)}.`);
        return;
      }
      if (msg.method === 'tools/call') {
        const params = msg.params as Record<string, unknown> | undefined;
        if (!params || typeof params.name !== 'string') {
          replyError(id, INVALID_PARAMS, 'Invalid params: tools/call needs params {name: string, arguments?: object}.');
          return;
        }
        if (params.arguments !== undefined && (params.arguments === null || typeof params.arguments !== 'object' || Array.isArray(params.arguments))) {
          replyError(id, INVALID_PARAMS, `Invalid params: tools/call "arguments" must be an object, found ${JSON.stringify(params.arguments)}.`);
          return;
        }
      }
      const schema = REQUEST_SCHEMAS[msg.method];
      const checked = schema?.safeParse(value);
      if (checked && !checked.success) {
        const problems = checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
        const shape = msg.method === 'initialize' ? ' Send params {protocolVersion, capabilities, clientInfo: {name, version}}.' : '';
        replyError(id, INVALID_PARAMS, `Invalid params of ${msg.method}: ${problems}.${shape}`);
        return;
      }
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) return invalid(`not a JSON-RPC 2.0 message (${parsed.error.issues[0]?.message ?? 'schema mismatch'})`);
    transport.onmessage?.(parsed.data as JSONRPCMessage);
  };

  const onData = (chunk: Buffer): void => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (oversize) {
        oversize.bytes += piece.length;
      } else if (pending + piece.length > maxLineBytes) {
        const head = Buffer.concat([...chunks, piece])
          .subarray(0, 512)
          .toString('utf8');
        oversize = { prefix: head, bytes: pending + piece.length };
        chunks = [];
        pending = 0;
      } else if (piece.length > 0) {
        chunks.push(Buffer.from(piece));
        pending += piece.length;
      }
      if (nl === -1) return;
      if (oversize) {
        const o = oversize;
        oversize = null;
        replyError(
          idFromPrefix(o.prefix),
          INVALID_REQUEST,
          `Invalid Request: the request is ${o.bytes} bytes, over this server's limit of ${maxLineBytes} bytes per request; it was discarded. Send less data (large tool results: pass a summary and keep the rest out of the report).`,
          { bytes: o.bytes, limit: maxLineBytes },
        );
      } else {
        const line = Buffer.concat(chunks).toString('utf8');
        chunks = [];
        pending = 0;
        try {
          handleLine(line);
        } catch (error) {
          transport.onerror?.(error as Error);
        }
      }
      start = nl + 1;
    }
  };
  const onError = (error: Error): void => transport.onerror?.(error);

  const transport: Transport = {
    async start() {
      input.on('data', onData);
      input.on('error', onError);
    },
    send: (message) => write(message),
    async close() {
      if (closed) return;
      closed = true;
      input.off('data', onData);
      input.off('error', onError);
      if (input.listenerCount('data') === 0) input.pause();
      chunks = [];
      transport.onclose?.();
    },
  };
  return transport;
}
