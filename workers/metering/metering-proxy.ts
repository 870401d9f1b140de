/**
 * The metering proxy: a small HTTP server Polly runs OUTSIDE the sandbox, one per worker run (the
 * worker runner starts it, workers/supervisor/worker-runner.ts), which is the sandbox's only route
 * to the model endpoints. The agent CLI's base URL points at it over plain HTTP on loopback
 * (`http://127.0.0.1:<port>/u<i>/…`, bridged into the sandbox like any loopback endpoint,
 * workers/sandbox/net-bridge.ts); it forwards each request to upstream `i` (the configured
 * endpoint: the scripted model server in tests, the vendor's HTTPS API in use), reads the usage
 * from the API's own response (./api-usage.ts) and counts it. Responses are passed through chunk
 * by chunk as they arrive: a server-sent-event stream is never buffered.
 *
 * Hard budget: with `budget` set, a model request that arrives once the tokens (input incl. cache
 * + output) or the USD spent through this proxy have reached it is refused and never forwarded,
 * with the vendor's own error shape, so the agent CLI reports it as an API error:
 * - Anthropic Messages: HTTP 402 `{"type":"error","error":{"type":"billing_error","message":…}}`
 *   (https://docs.anthropic.com/en/api/errors);
 * - OpenAI (Responses, Chat Completions): HTTP 429 `{"error":{"message":…,"type":"insufficient_quota",
 *   "param":null,"code":"insufficient_quota"}}` (https://platform.openai.com/docs/guides/error-codes).
 * A request is charged when its response ends, so a task overshoots by at most the request that
 * crossed the limit (plus any that were already in flight with it: the agent CLIs make their model
 * calls one at a time, a side request such as claude's title aside). A goal's budget is one bound
 * shared by every proxy of the goal through the goal's ledger file (./goal-ledger.ts, `goal`).
 *
 * Cost: `prices[model]` (USD per million tokens, config `prices`) of the model the response names;
 * null (unknown) without a price, and then a USD budget cannot be met: the plan gate refuses one
 * (brain/plan/plan-gate.ts).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { apiOfPath, priceOf, priceUsage, usageReader, type ApiUsage, type ModelApi, type ModelPrice } from './api-usage.js';
import { goalLimitReached, type GoalLedger, type GoalMeterSpec } from './goal-ledger.js';

/** A limit for the requests of one run: what remains of the task's (and its goal's) budget. Absent fields: no limit. */
export interface MeterBudget {
  tokens?: number | null;
  usd?: number | null;
}

/** One model request as the proxy saw it (an `ApiUsage` plus where, when, what it cost). */
export interface MeteredRequest extends Omit<ApiUsage, 'model'> {
  /** ISO time the response ended. */
  at: string;
  api: ModelApi;
  /** The upstream base URL the request went to. */
  upstream: string;
  /** The request path after the base URL's, e.g. `/v1/messages`. */
  path: string;
  /** The upstream's HTTP status. */
  status: number;
  model: string | null;
  /** USD at config `prices`; null when the model has no price. */
  costUsd: number | null;
  /** False when the response carried no usage (an error, a stream cut off): tokens 0. */
  reported: boolean;
  durationMs: number;
}

/** A model request refused for the budget. */
export interface RefusedRequest {
  at: string;
  api: ModelApi;
  path: string;
  /** Whose budget: this run's own (`task`, what remained of the task's), or the goal's shared one. Absent (older events): task. */
  scope?: 'task' | 'goal';
  /** Which limit: `tokens` or `usd`. */
  kind: 'tokens' | 'usd';
  limit: number;
  spent: number;
}

/** What the proxy has counted so far. */
export interface MeterSpent {
  requests: number;
  tokens: number;
  /** The sum of the known costs. */
  usd: number;
  /** Requests whose cost is unknown (no price). */
  unpricedRequests: number;
  refused: number;
}

export interface MeteringProxyOptions {
  /** Upstream base URLs (`http://127.0.0.1:4010`, `https://api.anthropic.com`, `https://api.openai.com/v1`). */
  upstreams: readonly string[];
  budget?: MeterBudget | null;
  /** Config `prices`: model id → USD per million tokens. */
  prices?: Readonly<Record<string, ModelPrice>> | null;
  /** Called once per model request when its response has ended (or was cut off), in order of ending. */
  onRequest?: (r: MeteredRequest, spent: MeterSpent) => void;
  /** Called for every request refused for the budget. */
  onRefused?: (r: RefusedRequest) => void;
  /**
   * The goal's shared budget (./goal-ledger.ts): each request is charged to the goal's ledger as
   * its response ends, and a request is refused once the ledger's total (every proxy of the goal,
   * the Brain's included) has reached `limit`. `by`/`task` name this run in the ledger.
   */
  goal?: { ledger: GoalLedger; limit: GoalMeterSpec['limit']; goalId: string; by: string; task: string | null } | null;
  /** Host to listen on (default 127.0.0.1). */
  host?: string;
}

export interface MeteringProxy {
  port: number;
  /** The base URL that stands for `upstreams[i]` (same path as the upstream's own: `/v1` stays `/v1`). */
  urlFor(i: number): string;
  spent(): MeterSpent;
  /** Every metered request so far, in order. */
  requests(): MeteredRequest[];
  /** Stop listening and drop open connections. */
  close(): Promise<void>;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the proxy sets itself. */
const DROP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'accept-encoding']);

function forwardHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !DROP.has(k.toLowerCase())) out[k] = v;
  return out;
}

/** The vendor-shaped refusal body and status for `api`. */
export function refusalResponse(api: ModelApi, message: string): { status: number; body: unknown } {
  if (api === 'anthropic-messages') return { status: 402, body: { type: 'error', error: { type: 'billing_error', message } } };
  return { status: 429, body: { error: { message, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } };
}

/** The `model` of a JSON request body, or null. */
function requestModel(body: Buffer): string | null {
  try {
    const v = JSON.parse(body.toString('utf8')) as { model?: unknown };
    return typeof v.model === 'string' ? v.model : null;
  } catch {
    return null;
  }
}

/**
 * Start the proxy on an ephemeral loopback port.
 * @throws when no upstream is given or one is not an http(s) URL.
 */
export async function startMeteringProxy(options: MeteringProxyOptions): Promise<MeteringProxy> {
  const upstreams = options.upstreams.map((u) => {
    const url = new URL(u);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`metering proxy: upstream ${u} is not an http(s) URL`);
    return url;
  });
  const budget = options.budget ?? null;
  const spent: MeterSpent = { requests: 0, tokens: 0, usd: 0, unpricedRequests: 0, refused: 0 };
  const log: MeteredRequest[] = [];
  const sockets = new Set<Socket>();

  const goal = options.goal ?? null;
  const reached = (): { scope: 'task' | 'goal'; kind: 'tokens' | 'usd'; limit: number; spent: number } | null => {
    if (budget && typeof budget.tokens === 'number' && spent.tokens >= budget.tokens) return { scope: 'task', kind: 'tokens', limit: budget.tokens, spent: spent.tokens };
    if (budget && typeof budget.usd === 'number' && spent.usd >= budget.usd) return { scope: 'task', kind: 'usd', limit: budget.usd, spent: spent.usd };
    // The goal's total as every proxy of the goal has charged it so far (read from its ledger now).
    const g = goal ? goalLimitReached(goal.limit, goal.ledger.total()) : null;
    return g ? { scope: 'goal', ...g } : null;
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const m = (req.url ?? '').match(/^\/u(\d+)(\/.*)?$/);
    const upstream = m ? upstreams[Number(m[1])] : undefined;
    if (!m || !upstream) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('polly metering proxy: no such upstream\n');
      return;
    }
    const path = m[2] ?? '/';
    const api = req.method === 'POST' ? apiOfPath(path) : null;
    const stop = api ? reached() : null;
    if (api && stop) {
      spent.refused++;
      const what = stop.kind === 'tokens' ? `${stop.spent} tokens of a ${stop.limit}-token budget` : `$${stop.spent.toFixed(4)} of a $${stop.limit} budget`;
      const whose = stop.scope === 'goal' ? `goal ${goal?.goalId} has` : 'this task has';
      const r = refusalResponse(
        api,
        `Polly budget reached: ${whose} spent ${what}; the request was not sent to the model. Raise the ${stop.scope === 'goal' ? "goal's" : "task's"} budget to continue.`,
      );
      const body = JSON.stringify(r.body);
      res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      // Drain the request body so the client sees the answer, not a reset.
      req.resume();
      options.onRefused?.({ at: new Date().toISOString(), api, path, ...stop });
      return;
    }
    const started = Date.now();
    // The client's base URL keeps the upstream's path (`/u0/v1/…` for `…/v1`): the request goes to the upstream's origin with it.
    const target = new URL(upstream.origin + path);
    const bodyParts: Buffer[] = [];
    let bodySize = 0;
    const send = upstream.protocol === 'https:' ? httpsRequest : httpRequest;
    const up = send(target, { method: req.method, headers: { ...forwardHeaders(req.headers), host: target.host, 'accept-encoding': 'identity' } }, (upRes) => {
      const headers = forwardHeaders(upRes.headers);
      res.writeHead(upRes.statusCode ?? 502, headers);
      res.flushHeaders();
      if (!api) {
        upRes.pipe(res);
        return;
      }
      const sse = /text\/event-stream/i.test(String(upRes.headers['content-type'] ?? ''));
      const asked = requestModel(Buffer.concat(bodyParts));
      const reader = usageReader(api, sse, asked);
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        const u = reader.end();
        const figures = u ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: null, cacheWriteTokens: null, model: null, impossible: [] };
        // The price of the model the response names, else of the one the request asked for (an alias).
        const costUsd = u ? priceUsage(figures, priceOf(options.prices, figures.model) ?? priceOf(options.prices, asked)) : 0;
        const r: MeteredRequest = {
          at: new Date().toISOString(),
          api,
          upstream: upstream.href,
          path,
          status: upRes.statusCode ?? 0,
          ...figures,
          costUsd,
          reported: u !== null,
          durationMs: Date.now() - started,
        };
        // The goal's shared ledger first (one append, before the client sees the end of the response).
        if (goal) {
          try {
            goal.ledger.charge({ at: r.at, by: goal.by, task: goal.task, tokens: r.inputTokens + r.outputTokens, usd: r.costUsd });
          } catch (error) {
            process.stderr.write(`[polly] metering proxy: could not charge goal ${goal.goalId}'s ledger ${goal.ledger.path}: ${(error as Error).message}\n`);
          }
        }
        spent.requests++;
        spent.tokens += r.inputTokens + r.outputTokens;
        if (r.costUsd === null) spent.unpricedRequests++;
        else spent.usd += r.costUsd;
        log.push(r);
        options.onRequest?.(r, { ...spent });
      };
      upRes.on('data', (chunk: Buffer) => {
        reader.push(chunk);
        res.write(chunk);
      });
      upRes.on('end', () => {
        finish();
        res.end();
      });
      upRes.on('error', () => {
        finish();
        res.destroy();
      });
      res.on('close', () => {
        if (!upRes.complete) upRes.destroy();
        finish();
      });
    });
    up.on('error', (error) => {
      if (!res.headersSent) {
        const body = JSON.stringify({ error: { message: `polly metering proxy: upstream ${upstream.host} unreachable: ${error.message}`, type: 'api_error' } });
        res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      } else res.destroy();
    });
    req.on('data', (chunk: Buffer) => {
      bodySize += chunk.length;
      if (bodySize <= 4 * 1024 * 1024) bodyParts.push(chunk);
    });
    req.pipe(up);
  };

  const server = createServer(handle);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? '127.0.0.1';
  return {
    port,
    urlFor(i) {
      const u = upstreams[i];
      if (!u) throw new Error(`metering proxy: no upstream ${i}`);
      return `http://${host}:${port}/u${i}${u.pathname.replace(/\/$/, '')}`;
    },
    spent: () => ({ ...spent }),
    requests: () => [...log],
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
