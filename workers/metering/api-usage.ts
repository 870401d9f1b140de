/**
 * Token usage as the model APIs themselves report it, read from the response bodies the metering
 * proxy (./metering-proxy.ts) forwards: one {@link UsageReader} per response, fed the body's
 * chunks as they pass (nothing is held back from the client), asked for the figures at the end.
 *
 * Wire formats (every figure a token count):
 * - Anthropic Messages, https://docs.anthropic.com/en/api/messages: a JSON `message` with
 *   `usage: {input_tokens, output_tokens, cache_creation_input_tokens?, cache_read_input_tokens?}`;
 *   `input_tokens` excludes the cache reads and writes. Streaming,
 *   https://docs.anthropic.com/en/docs/build-with-claude/streaming: SSE events, `message_start`
 *   carries `message.usage` (input final, output so far) and each `message_delta` a `usage` whose
 *   fields are cumulative (the latest value wins, never a sum).
 * - OpenAI Responses, https://platform.openai.com/docs/api-reference/responses/object and
 *   https://developers.openai.com/api/reference/resources/responses/streaming-events: a `response`
 *   object with `usage: {input_tokens, input_tokens_details: {cached_tokens}, output_tokens}`; when
 *   streaming, the terminal `response.completed` (or `response.incomplete` / `response.failed`)
 *   event carries that object. `input_tokens` includes the cached ones.
 * - OpenAI Chat Completions, https://platform.openai.com/docs/api-reference/chat/object: `usage:
 *   {prompt_tokens, completion_tokens, prompt_tokens_details?: {cached_tokens}}`; when streaming
 *   with `stream_options.include_usage`, https://platform.openai.com/docs/api-reference/chat/streaming,
 *   the last chunk carries it (`choices: []`). `prompt_tokens` includes the cached ones.
 * - SSE framing: https://html.spec.whatwg.org/multipage/server-sent-events.html (lines, `data:`
 *   fields joined by newlines, an empty line ends an event).
 */

/** One request's usage, in the ledger's terms (brain/registry/cost-ledger.ts `UsageFigures`). */
export interface ApiUsage {
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  outputTokens: number;
  /** The cached part of the input, where the API reports it; else null. */
  cacheReadTokens: number | null;
  /** Input written to the cache (Anthropic), else null. */
  cacheWriteTokens: number | null;
  /** The model the response names (else the request's), or null. */
  model: string | null;
  /** Values the API sent that are not token counts (negative, fractional, not a number): named, and counted as 0. */
  impossible: string[];
}

/** Which API a request speaks, from its path: `/v1/messages` (Anthropic), `/responses`, `/chat/completions`; null: not a model call. */
export type ModelApi = 'anthropic-messages' | 'openai-responses' | 'openai-chat';

/** The API of a request path (query ignored), or null for anything else (model lists, token counts). */
export function apiOfPath(path: string): ModelApi | null {
  const p = path.split('?')[0]!.replace(/\/+$/, '');
  if (/\/messages$/.test(p)) return 'anthropic-messages';
  if (/\/responses$/.test(p)) return 'openai-responses';
  if (/\/chat\/completions$/.test(p)) return 'openai-chat';
  return null;
}

/** Reads one response body as it passes. */
export interface UsageReader {
  /** Feed the next chunk of the body (as received). */
  push(chunk: Buffer): void;
  /** The usage the body reported, or null when it reported none (an error, a cut-off stream). */
  end(): ApiUsage | null;
}

/** The largest non-streaming body kept for parsing (bytes); a larger one is passed on but not read. */
const JSON_CAP = 16 * 1024 * 1024;

type Fields = Record<string, unknown>;
const isObj = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Running figures of one response: the latest value of each field, as the APIs send them. */
class Tally {
  input: number | null = null;
  output: number | null = null;
  cacheRead: number | null = null;
  cacheWrite: number | null = null;
  model: string | null = null;
  impossible: string[] = [];
  seen = false;

  count(name: string, v: unknown): number | null {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v) || !Number.isInteger(v) || v < 0) {
      this.impossible.push(`${name}=${JSON.stringify(v)}`);
      return 0;
    }
    return v;
  }

  /** Anthropic `usage` (message_start's message.usage, message_delta's usage, a message's usage). */
  anthropic(u: Fields): void {
    this.seen = true;
    const i = this.count('input_tokens', u.input_tokens);
    const o = this.count('output_tokens', u.output_tokens);
    const r = this.count('cache_read_input_tokens', u.cache_read_input_tokens);
    const w = this.count('cache_creation_input_tokens', u.cache_creation_input_tokens);
    if (i !== null) this.input = i;
    if (o !== null) this.output = o;
    if (r !== null) this.cacheRead = r;
    if (w !== null) this.cacheWrite = w;
  }

  /** OpenAI Responses `usage`. */
  responses(u: Fields): void {
    this.seen = true;
    this.input = this.count('input_tokens', u.input_tokens) ?? 0;
    this.output = this.count('output_tokens', u.output_tokens) ?? 0;
    const d = isObj(u.input_tokens_details) ? u.input_tokens_details : {};
    this.cacheRead = this.count('input_tokens_details.cached_tokens', d.cached_tokens);
  }

  /** OpenAI Chat Completions `usage`. */
  chat(u: Fields): void {
    this.seen = true;
    this.input = this.count('prompt_tokens', u.prompt_tokens) ?? 0;
    this.output = this.count('completion_tokens', u.completion_tokens) ?? 0;
    const d = isObj(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
    this.cacheRead = this.count('prompt_tokens_details.cached_tokens', d.cached_tokens);
  }

  setModel(v: unknown): void {
    if (typeof v === 'string' && v) this.model = v;
  }

  result(api: ModelApi, requestModel: string | null): ApiUsage | null {
    if (!this.seen) return null;
    const input = api === 'anthropic-messages' ? (this.input ?? 0) + (this.cacheRead ?? 0) + (this.cacheWrite ?? 0) : (this.input ?? 0);
    return {
      inputTokens: input,
      outputTokens: this.output ?? 0,
      cacheReadTokens: this.cacheRead,
      cacheWriteTokens: api === 'anthropic-messages' ? this.cacheWrite : null,
      model: this.model ?? requestModel,
      impossible: this.impossible,
    };
  }
}

/** Apply one parsed JSON value (a whole body, or one SSE event's data) of `api` to `t`. */
function apply(api: ModelApi, t: Tally, v: unknown): void {
  if (!isObj(v)) return;
  if (api === 'anthropic-messages') {
    if (v.type === 'message_start' && isObj(v.message)) {
      t.setModel(v.message.model);
      if (isObj(v.message.usage)) t.anthropic(v.message.usage);
    } else if (v.type === 'message_delta' && isObj(v.usage)) t.anthropic(v.usage);
    else if (v.type === 'message' && isObj(v.usage)) {
      t.setModel(v.model);
      t.anthropic(v.usage);
    }
  } else if (api === 'openai-responses') {
    const r = typeof v.type === 'string' && v.type.startsWith('response.') ? v.response : v.object === 'response' ? v : null;
    if (isObj(r)) {
      t.setModel(r.model);
      if (isObj(r.usage)) t.responses(r.usage);
    }
  } else {
    t.setModel(v.model);
    if (isObj(v.usage)) t.chat(v.usage);
  }
}

/**
 * A reader for one response of `api`.
 * @param sse  the response is `text/event-stream` (else one JSON body).
 * @param requestModel  the request's `model`, used when the response names none.
 */
export function usageReader(api: ModelApi, sse: boolean, requestModel: string | null): UsageReader {
  const t = new Tally();
  if (!sse) {
    const parts: Buffer[] = [];
    let size = 0;
    return {
      push(chunk) {
        size += chunk.length;
        if (size <= JSON_CAP) parts.push(chunk);
      },
      end() {
        if (size <= JSON_CAP) {
          try {
            apply(api, t, JSON.parse(Buffer.concat(parts).toString('utf8')));
          } catch {
            /* not JSON: no usage */
          }
        }
        return t.result(api, requestModel);
      },
    };
  }
  let pending = '';
  let data: string[] = [];
  const decoder = new TextDecoder();
  const dispatch = (): void => {
    if (data.length === 0) return;
    const text = data.join('\n');
    data = [];
    if (text === '[DONE]') return;
    try {
      apply(api, t, JSON.parse(text));
    } catch {
      /* an event that is not JSON carries no usage */
    }
  };
  const line = (l: string): void => {
    if (l === '') dispatch();
    else if (l.startsWith('data:')) data.push(l.slice(l.startsWith('data: ') ? 6 : 5));
  };
  const feed = (text: string): void => {
    pending += text;
    let nl = pending.search(/\r\n|\r|\n/);
    while (nl >= 0) {
      const sep = pending.startsWith('\r\n', nl) ? 2 : 1;
      line(pending.slice(0, nl));
      pending = pending.slice(nl + sep);
      nl = pending.search(/\r\n|\r|\n/);
    }
  };
  return {
    push(chunk) {
      feed(decoder.decode(chunk, { stream: true }));
    },
    end() {
      feed(decoder.decode());
      if (pending) line(pending);
      pending = '';
      dispatch();
      return t.result(api, requestModel);
    },
  };
}

/** USD per million tokens for one model (config `prices.<model>`). */
export interface ModelPrice {
  input: number;
  output: number;
  /** Cached input read; default `input`. */
  cache_read?: number | null;
  /** Input written to the cache; default `input`. */
  cache_write?: number | null;
}

/**
 * The USD cost of `u` at `price` (per million tokens): uncached input × input, cache reads ×
 * cache_read, cache writes × cache_write, output × output. Null when there is no price.
 */
export function priceUsage(u: Pick<ApiUsage, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>, price: ModelPrice | null | undefined): number | null {
  if (!price) return null;
  const read = u.cacheReadTokens ?? 0;
  const write = u.cacheWriteTokens ?? 0;
  const plain = Math.max(0, u.inputTokens - read - write);
  return (plain * price.input + read * (price.cache_read ?? price.input) + write * (price.cache_write ?? price.input) + u.outputTokens * price.output) / 1_000_000;
}

/** The price of `model` in `prices` (exact id), or null. */
export function priceOf(prices: Readonly<Record<string, ModelPrice>> | null | undefined, model: string | null): ModelPrice | null {
  if (!prices || !model) return null;
  return Object.hasOwn(prices, model) ? prices[model]! : null;
}
