/**
 * The dashboard's HTTP server (hono on node:http): the pages of `ui-pages.ts` over a
 * {@link UiSource}, live updates as Server-Sent Events, and the security rules of
 * `ui-security.ts` applied to every request, in this order:
 *   1. the Host header must name this server (DNS rebinding) — else 421;
 *   2. a POST must carry this server's Origin (CSRF) — else 403;
 *   3. `?token=<token>` (the URL `polly ui` prints) is exchanged for the session cookie and the
 *      browser is redirected to the same path without it — a wrong token is 401;
 *   4. every other request needs the session cookie — else 401 (GET) / 403 (POST).
 * State changes only by POST (approve/reject a plan); nothing is changed before all four pass.
 * SSE format: https://html.spec.whatwg.org/multipage/server-sent-events.html
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { PollyError } from '../core/errors.js';
import type { Registry, WorkerRecord } from '../registry/registry-schema.js';
import { goalPage, journalPage, messagePage, overviewPage, planPage, pullRequestPage, taskPage, UI_SCRIPT, UI_STYLE } from './ui-pages.js';
import { allowedHosts, checkBindHost, createSecret, hostAllowed, originAllowed, secretsEqual, UI_COOKIE } from './ui-security.js';
import type { UiSource } from './ui-source.js';

export interface UiServerOptions {
  /** The address to listen on (default `127.0.0.1`); non-loopback needs `allowRemote`. */
  host?: string;
  /** The TCP port (default 0: any free port). */
  port?: number;
  allowRemote?: boolean;
  /** How often live streams look for changes, ms (default 300). */
  pollMs?: number;
  /** The token to accept (default: a fresh random one); for tests that need to know it in advance. */
  token?: string;
}

export interface UiServer {
  /** `http://<address>:<port>`, the address actually bound (`localhost` shows as 127.0.0.1 or [::1]). */
  url: string;
  /** The URL to open once: `<url>/?token=<token>`. The token is the user's capability: print it only to stdout. */
  loginUrl: string;
  port: number;
  /** Stop listening, end open streams and close the source (`UiSource.close`). */
  close(): Promise<void>;
}

/**
 * Start the dashboard.
 * @param deps.source  where the pages read from and the plan gate writes to; closed by `close()`.
 * @param deps.user    who decides at the gate, recorded as `decidedBy` (e.g. `human:alice`).
 * @throws PollyError `bad_input` for a non-loopback host without `allowRemote`, or a port in use.
 */
export async function createUiServer(deps: { source: UiSource; user: string }, options: UiServerOptions = {}): Promise<UiServer> {
  const host = options.host ?? '127.0.0.1';
  checkBindHost(host, options.allowRemote ?? false);
  const token = options.token ?? createSecret();
  const session = createSecret();
  const pollMs = options.pollMs ?? 300;
  let allowed = new Set<string>();
  const { source } = deps;

  const app = new Hono();
  const html = (c: Context, body: string, status: 200 | 400 | 401 | 403 | 404 | 409 | 421 | 500 = 200) => c.html(body, status);

  app.use('*', async (c, next) => {
    c.header(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` on the page's own
    // form posts (Fetch standard, "serializing a request origin"), which the CSRF check must refuse.
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Cache-Control', 'no-store');
    if (!hostAllowed(c.req.header('host'), allowed)) {
      return html(c, messagePage('Wrong host', `This Polly dashboard answers only to ${[...allowed].join(', ')}; the request named ${c.req.header('host') ?? 'no host'}.`), 421);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && !originAllowed(c.req.header('origin'), allowed)) {
      return html(c, messagePage('Refused', `A change must come from this dashboard's own page; the request's Origin was ${c.req.header('origin') ?? 'missing'}.`), 403);
    }
    return next();
  });
  app.get('/ui.css', (c) => c.body(UI_STYLE, 200, { 'Content-Type': 'text/css; charset=utf-8' }));
  app.get('/ui.js', (c) => c.body(UI_SCRIPT, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  app.use('*', async (c, next) => {
    const given = c.req.query('token');
    if (given !== undefined && c.req.method === 'GET') {
      if (!secretsEqual(given, token)) return html(c, messagePage('Not signed in', 'That token is not this session\'s. Open the URL "polly ui" printed.'), 401);
      setCookie(c, UI_COOKIE, session, { httpOnly: true, sameSite: 'Strict', path: '/' });
      return c.redirect(c.req.path, 303);
    }
    if (!secretsEqual(getCookie(c, UI_COOKIE), session)) {
      return c.req.method === 'GET'
        ? html(c, messagePage('Not signed in', 'Open the URL "polly ui" printed (it carries this session\'s token).'), 401)
        : html(c, messagePage('Refused', 'No session: open the URL "polly ui" printed first.'), 403);
    }
    return next();
  });

  const registry = (): Promise<Registry> => source.readRegistry();
  app.get('/', async (c) => html(c, overviewPage(await registry())));
  app.get('/journal', async (c) => html(c, journalPage(await source.readJournal(300))));
  app.get('/goals/:id', async (c) => {
    const reg = await registry();
    const goal = reg.goals[c.req.param('id')];
    return goal ? html(c, goalPage(goal, reg)) : html(c, messagePage('Not found', `No goal "${c.req.param('id')}".`), 404);
  });
  app.get('/plans/:id', async (c) => {
    const reg = await registry();
    const plan = reg.plans[c.req.param('id')];
    return plan ? html(c, planPage(plan, reg, c.req.query('notice'))) : html(c, messagePage('Not found', `No plan "${c.req.param('id')}".`), 404);
  });
  app.post('/plans/:id/:decision{approve|reject}', async (c) => {
    const id = c.req.param('id');
    const decision = c.req.param('decision') as 'approve' | 'reject';
    try {
      const plan = await source.decidePlan(id, decision, deps.user);
      return c.redirect(`/plans/${encodeURIComponent(plan.id)}`, 303);
    } catch (error) {
      if (error instanceof PollyError && (error.code === 'conflict' || error.code === 'not_found')) {
        return html(c, messagePage('Not decided', error.message), error.code === 'conflict' ? 409 : 404);
      }
      throw error;
    }
  });
  app.get('/tasks/:id', async (c) => {
    const reg = await registry();
    const t = reg.tasks[c.req.param('id')];
    if (!t) return html(c, messagePage('Not found', `No task "${c.req.param('id')}".`), 404);
    const workers = Object.values(reg.workers).filter((w) => w.taskId === t.id);
    return html(c, taskPage(t, workers, t.worktree ? await source.gateDecisions({ taskId: t.id, dir: t.worktree }, 200) : [], await source.taskRuns(t.id, 200)));
  });
  app.get('/prs/:n{[0-9]+}', async (c) => {
    const reg = await registry();
    const pr = reg.pullRequests[c.req.param('n')];
    if (!pr) return html(c, messagePage('Not found', `No local PR #${c.req.param('n')}.`), 404);
    let diff: string;
    try {
      diff = await source.pullRequestDiff(pr.number);
    } catch (error) {
      diff = `(no diff: ${error instanceof Error ? error.message : String(error)})`;
    }
    return html(c, pullRequestPage(pr, pr.taskId ? reg.tasks[pr.taskId] : undefined, diff));
  });
  // Live: a `change` event whenever the registry, journal or gate log changes.
  app.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      let seen = source.version();
      await stream.writeSSE({ event: 'hello', data: '{}' });
      while (!stream.aborted && !stopping) {
        await stream.sleep(pollMs);
        const now = source.version();
        if (now !== seen) {
          seen = now;
          await stream.writeSSE({ event: 'change', data: JSON.stringify({ version: now }) });
        }
      }
    }),
  );
  // Live: each normalised event of the task's workers (history first), as `agent` events.
  app.get('/tasks/:id/stream', (c) =>
    streamSSE(c, async (stream) => {
      const id = c.req.param('id');
      const tails = new Map<string, { read(): Array<Record<string, unknown>> }>();
      let workers: WorkerRecord[] = [];
      let seen = '';
      while (!stream.aborted && !stopping) {
        // The task's worker rows change only with the registry: re-read it only then; tail the files every time.
        const now = source.version();
        if (now !== seen) {
          seen = now;
          workers = Object.values((await registry()).workers)
            .filter((w) => w.taskId === id)
            .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
        }
        for (const w of workers) {
          if (!tails.has(w.id)) tails.set(w.id, source.workerEvents(w) as { read(): Array<Record<string, unknown>> });
          for (const ev of tails.get(w.id)!.read()) await stream.writeSSE({ event: 'agent', data: JSON.stringify({ ...ev, worker: w.id }) });
        }
        await stream.sleep(pollMs);
      }
    }),
  );
  // Bad input (e.g. a malformed id) is the client's; anything else is a fault of ours (500).
  app.onError((error, c) =>
    html(c, messagePage('Error', error instanceof Error ? error.message : String(error)), error instanceof PollyError && error.code === 'bad_input' ? 400 : 500),
  );

  let stopping = false;
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 0 }, () => resolve(s as Server)) as Server;
    s.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new PollyError('bad_input', `polly ui: cannot listen on ${host}:${options.port ?? 0}: ${error.code ?? error.message}. Pick another --port.`, {
          cause: error,
          details: { host, port: options.port ?? 0 },
        }),
      ),
    );
  });
  const bound = server.address() as AddressInfo;
  const port = bound.port;
  allowed = allowedHosts(host, port);
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const url = `http://${shown}:${port}`;
  return {
    url,
    loginUrl: `${url}/?token=${token}`,
    port,
    close: async () => {
      stopping = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await source.close();
    },
  };
}
