/**
 * The scripted model server: an HTTP server on loopback that speaks enough of the Anthropic
 * Messages API, the OpenAI Responses API and OpenAI chat completions for the real `claude`,
 * `codex` and `pi` CLIs to run against it, answering from a {@link ModelScript}.
 *
 * Used by the test suite and by `npm run demo`; no API key needed. Every request is recorded.
 * Run standalone: `node dist/scripts/scripted-model/server.js --script FILE [--port N]` prints one
 * JSON line `{"url": "http://127.0.0.1:PORT"}` on stdout when listening.
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { anthropicRoutes } from './anthropic-messages.js';
import { chatRoutes } from './openai-chat.js';
import { responsesRoutes } from './openai-responses.js';
import { sendJson, type ApiRoute, type RecordedRequest } from './api-route.js';
import { loadModelScript, WAIT_FOR_MAX_MS, type ModelScript } from './script.js';

export interface ScriptedModelServer {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  /** Every request so far, in arrival order. */
  requests: RecordedRequest[];
  /** Replace the script (takes effect for the next request). */
  setScript(script: ModelScript): void;
  close(): Promise<void>;
}

export interface ScriptedModelServerOptions {
  script: ModelScript;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /**
   * Answers `POST /_polly/<name>` requests (JSON body) for whoever runs the server, e.g. Polly's
   * detached server (brain/process/scripted-model-daemon.ts) attaching a command and loading another
   * script. Returns the HTTP status and JSON body; no handler: 404.
   */
  control?: (name: string, body: unknown) => Promise<{ status: number; body: unknown }> | { status: number; body: unknown };
}

const ROUTES: ApiRoute[] = [...anthropicRoutes, ...responsesRoutes, ...chatRoutes];

async function readBody(req: import('node:http').IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Start the server; resolves once it listens on loopback. */
export async function startScriptedModelServer(options: ScriptedModelServerOptions): Promise<ScriptedModelServer> {
  let script = options.script;
  const requests: RecordedRequest[] = [];
  /** Sessions that have sent a model request, and the answers waiting for some (`wait_for`): each is called on every new one, with true to let it go whatever. */
  const started = new Set<string>();
  const waiting = new Set<(release: boolean) => void>();
  const waitFor = (names: readonly string[]): Promise<void> =>
    new Promise<void>((resolve) => {
      const ready = (): boolean => names.every((n) => started.has(n));
      if (ready()) return resolve();
      const timer = setTimeout(() => {
        process.stderr.write(`[scripted-model] answered after ${WAIT_FOR_MAX_MS} ms without a request of ${names.filter((n) => !started.has(n)).join(', ')} (wait_for)\n`);
        check(true);
      }, WAIT_FOR_MAX_MS);
      const check = (release: boolean): void => {
        if (!release && !ready()) return;
        clearTimeout(timer);
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const method = req.method ?? 'GET';
      if (method === 'GET' && path === '/_polly/requests') return sendJson(res, 200, requests);
      if (method === 'POST' && path.startsWith('/_polly/') && options.control) {
        let payload: unknown;
        try {
          const raw = await readBody(req);
          payload = raw ? JSON.parse(raw) : undefined;
        } catch {
          return sendJson(res, 400, { error: { type: 'invalid_request_error', message: 'body is not JSON' } });
        }
        const answer = await options.control(path.slice('/_polly/'.length), payload);
        return sendJson(res, answer.status, answer.body);
      }
      // Connectivity probes (claude sends `HEAD /` before its first call).
      if ((method === 'HEAD' || method === 'GET') && path === '/') return sendJson(res, 200, { ok: true, server: 'polly-scripted-model' });
      const raw = method === 'GET' ? '' : await readBody(req);
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        return sendJson(res, 400, { error: { type: 'invalid_request_error', message: 'body is not JSON' } });
      }
      const route = ROUTES.find((r) => r.method === method && r.path.test(path));
      const entry: RecordedRequest = {
        id: requests.length + 1,
        at: new Date().toISOString(),
        api: route?.api ?? 'unknown',
        method,
        path,
        body,
        view: null,
        session: null,
        turnIndex: null,
        reply: null,
      };
      requests.push(entry);
      if (!route) {
        return sendJson(res, 404, {
          error: { type: 'not_found_error', message: `the scripted model server does not serve ${method} ${path}` },
        });
      }
      await route.handle({
        req,
        res,
        path,
        body,
        script,
        record: (r) => Object.assign(entry, r),
        pace: async (name) => {
          const session = script.sessions.find((x) => x.name === name);
          if (name !== null && !started.has(name)) {
            started.add(name);
            for (const check of [...waiting]) check(false);
          }
          if (session?.wait_for?.length) await waitFor(session.wait_for);
          const ms = session?.latency_ms ?? 0;
          if (ms > 0) await new Promise((r) => setTimeout(r, ms));
        },
      });
    })().catch((error: unknown) => {
      process.stderr.write(`[scripted-model] ${String((error as Error)?.stack ?? error)}\n`);
      if (!res.headersSent) sendJson(res, 500, { error: { type: 'api_error', message: String(error) } });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('scripted model server: no TCP address');
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    port: address.port,
    requests,
    setScript(next) {
      script = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const check of [...waiting]) check(true);
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

const isMain = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { values } = parseArgs({ options: { script: { type: 'string' }, port: { type: 'string', default: '0' } }, strict: true });
  if (!values.script) {
    process.stderr.write('usage: server.js --script FILE [--port N]\n');
    process.exit(2);
  }
  let script: ModelScript;
  try {
    script = loadModelScript(values.script);
  } catch (error) {
    process.stderr.write(`scripted model server: cannot load the script: ${(error as Error).message}\n`);
    process.exit(2);
  }
  const srv = await startScriptedModelServer({ script, port: Number(values.port) });
  process.stdout.write(`${JSON.stringify({ url: srv.url })}\n`);
  const stop = () => void srv.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
