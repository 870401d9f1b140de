/**
 * The dashboard's HTTP server (hono on node:http): the pages of `ui-pages.ts` over a
 * {@link UiSource}, live updates as Server-Sent Events, and the security rules of
 * `ui-security.ts` applied to every request, in this order:
 *   1. the Host header must name this server (DNS rebinding) — else 421;
 *   2. a POST must carry this server's Origin (CSRF) — else 403;
 *   3. `?token=<token>` (the URL `polly ui` prints; each token works once) is exchanged for a
 *      session: a secret root path `/s/<secret>/` and a cookie scoped to it; the browser is
 *      redirected to the same page below the root — a wrong or used token is 401;
 *   4. every page lives below a session's root and needs its cookie — else 401 (GET) / 403 (POST).
 *      A GET of a page outside any root (a link from a notification) gets a sign-in page whose
 *      script goes on to the same page below the root this browser signed in to (kept in the
 *      origin's localStorage, which, unlike cookies, another port cannot read), if any.
 * State changes only by POST (approve/reject a plan; propose a retry of a task, which waits at the
 * plan gate like any plan); nothing is changed before all four pass.
 * The pages are written relative to the dashboard's root (`plans/p1`); each page served gets
 * `<base href="<root>">`, and a redirect to `/x` becomes one to `<root>x`.
 * SSE format: https://html.spec.whatwg.org/multipage/server-sent-events.html
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { PollyError } from '../core/errors.js';
import type { Registry, WorkerRecord } from '../registry/registry-schema.js';
import { goalPage, healthBanner, journalPage, messagePage, overviewPage, planPage, pullRequestPage, signInPage, taskPage, UI_SCRIPT, UI_STYLE } from './ui-pages.js';
import { allowedHosts, checkBindHost, createSessionBook, hostAllowed, originAllowed, UI_COOKIE, type UiSession } from './ui-security.js';
import type { UiSource } from './ui-source.js';
import { brainHealth } from '../registry/brain-health.js';
import type { RetryBudgets } from '../plan/plan-retry.js';
import { budgetSchema } from '../plan/plan-schema.js';
import { renderMarkdown } from './markdown.js';
import { readKeptState, writeKeptState } from './ui-kept-state.js';

let morphdomSource: string | null = null;
/**
 * morphdom's browser build (npm `morphdom`, MIT; https://github.com/patrick-steele-idem/morphdom),
 * served as `/morphdom.js` for the live pages' patching (`window.morphdom`); read once.
 */
function morphdomScript(): string {
  morphdomSource ??= readFileSync(createRequire(import.meta.url).resolve('morphdom/dist/morphdom-umd.min.js'), 'utf8');
  return morphdomSource;
}

/**
 * The budget a task page's retry form asks for (fields `tokens` and `usd`, both optional): none
 * given → the budget the task ran under; else a budget of the fields given (validated as a plan
 * file's `budget`, brain/plan/plan-schema.ts).
 * @throws PollyError `bad_input` naming the field and value at fault.
 */
export function retryFormBudgets(form: Record<string, unknown>): RetryBudgets {
  const field = (name: 'tokens' | 'usd'): number | undefined => {
    const raw = form[name];
    if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return undefined;
    const n = typeof raw === 'string' ? Number(raw.trim()) : Number.NaN;
    if (!Number.isFinite(n))
      throw new PollyError('bad_input', `The retry form's ${name} ${JSON.stringify(String(raw))} is not a number; give a number, or leave it empty.`, { details: { field: name } });
    return n;
  };
  const tokens = field('tokens');
  const usd = field('usd');
  if (tokens === undefined && usd === undefined) return {};
  const budget = { ...(tokens !== undefined ? { tokens } : {}), ...(usd !== undefined ? { usd } : {}) };
  const parsed = budgetSchema.safeParse(budget);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new PollyError(
      'bad_input',
      `The retry form's ${issue.path.join('.') || 'budget'} is not valid (${JSON.stringify(budget)}): ${issue.message}. Tokens are a whole number of at least 1, USD a positive amount.`,
      {
        details: { budget },
      },
    );
  }
  return { budget };
}

export interface UiServerOptions {
  /** The address to listen on (default `127.0.0.1`); non-loopback needs `allowRemote`. */
  host?: string;
  /** The TCP port (default 0: any free port). */
  port?: number;
  allowRemote?: boolean;
  /** How often live streams look for changes, ms (default 300). */
  pollMs?: number;
  /** The first login token (default: a fresh random one); for tests that need to know it in advance. */
  token?: string;
  /** The clock for session expiry, ms since the epoch (default `Date.now`; tests move it). */
  now?: () => number;
  /** Diagnostics (default stderr). */
  log?: (line: string) => void;
  /**
   * Where this server hands its port and sessions to the next one (brain/ui/ui-kept-state.ts;
   * `polly ui` gives the repository's state directory). With it, a server started without `port`
   * takes the last server's port when it is free and the same host, and accepts the last server's
   * sessions that have not ended: an open tab reconnects on its own after a restart. Without it
   * (default), sessions end with the server.
   */
  keepDir?: string;
}

export interface UiServer {
  /** `http://<address>:<port>`, the address actually bound (`localhost` shows as 127.0.0.1 or [::1]). */
  url: string;
  /** The URL to open once: `<url>/?token=<token>`; the token works once. It is the user's capability: print it only to stdout. */
  loginUrl: string;
  /** A fresh login URL (another single-use token), e.g. to sign in a second browser. */
  newLoginUrl(): string;
  port: number;
  /** Stop listening, end open streams and close the source (`UiSource.close`). */
  close(): Promise<void>;
}

/**
 * A response of the pages app as served below `session.root`: a redirect to `/x` goes to
 * `<root>x`, and an HTML page gets `<base href="<root>">` so its relative links stay in the session.
 */
async function rebase(res: Response, session: UiSession): Promise<Response> {
  const headers = new Headers(res.headers);
  const location = headers.get('location');
  if (location?.startsWith('/') && !location.startsWith('//')) headers.set('location', `${session.root}${location.slice(1)}`);
  if (!(headers.get('content-type') ?? '').startsWith('text/html')) return new Response(res.body, { status: res.status, headers });
  const page = (await res.text()).replace('<head>', `<head><base href="${session.root}">`);
  headers.delete('content-length');
  return new Response(page, { status: res.status, headers });
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
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const last = options.keepDir ? readKeptState(options.keepDir, log) : null;
  const book = createSessionBook(options.now, undefined, last?.sessions ?? []);
  const token = book.issueToken(options.token);
  const pollMs = options.pollMs ?? 300;
  // Hand the sessions on after each sign-in (and the port once bound), so a restart keeps them.
  let keep = (): void => {};
  let allowed = new Set<string>();
  const { source } = deps;

  const app = new Hono();
  const html = (c: Context, body: string, status: 200 | 400 | 401 | 403 | 404 | 409 | 421 | 500 = 200) => c.html(body, status);

  // The front door: headers, Host and Origin for every request, the static assets, sign-in, and
  // the session check; a request that passes reaches `app` with its root taken off the path.
  const front = new Hono();
  front.use('*', async (c, next) => {
    c.header(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'",
    );
    // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` on the page's own
    // form posts (Fetch standard, "serializing a request origin"), which the CSRF check must refuse.
    // It also keeps a session's root out of the Referer of any request to another origin.
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
  front.get('/ui.css', (c) => c.body(UI_STYLE, 200, { 'Content-Type': 'text/css; charset=utf-8' }));
  front.get('/ui.js', (c) => c.body(UI_SCRIPT, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  front.get('/morphdom.js', (c) => c.body(morphdomScript(), 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  const inSession = async (c: Context) => {
    const secret = c.req.param('secret') ?? '';
    const check = book.check(secret, getCookie(c, UI_COOKIE));
    if (!check.ok) {
      const why =
        check.why === 'expired'
          ? 'This dashboard session has ended (sessions last 12 hours). Sign in again with a new login link: press Enter in the terminal running "polly ui".'
          : 'This page needs the session of the browser that signed in. Open the login URL "polly ui" printed (each works once; press Enter there for another).';
      return c.req.method === 'GET' ? html(c, signInPage('Not signed in', why, 'signed-out'), 401) : html(c, messagePage('Refused', `No session: ${why}`), 403);
    }
    const url = new URL(c.req.url);
    url.pathname = `/${url.pathname.slice(`/s/${secret}/`.length)}`;
    return rebase(await withHealth(await app.fetch(new Request(url, c.req.raw))), check.session);
  };
  front.all('/s/:secret', (c) => c.redirect(`/s/${c.req.param('secret')}/`, 308));
  front.all('/s/:secret/*', inSession);
  front.all('*', async (c) => {
    const given = c.req.query('token');
    if (given !== undefined && c.req.method === 'GET') {
      const session = book.redeem(given);
      if (session !== null && session !== 'used') keep();
      if (session === 'used') {
        return html(c, messagePage('Not signed in', 'That login link was already used: each works once. Press Enter in the terminal running "polly ui" for another.'), 401);
      }
      if (session === null) return html(c, messagePage('Not signed in', 'That token is not this dashboard\'s. Open the URL "polly ui" printed.'), 401);
      // Path without the trailing slash: RFC 6265 §5.1.4 path-match then covers `/s/<secret>` and all below it.
      setCookie(c, UI_COOKIE, session.cookie, { httpOnly: true, sameSite: 'Strict', path: session.root.slice(0, -1) });
      return c.redirect(`${session.root}${c.req.path.slice(1)}`, 303);
    }
    return c.req.method === 'GET'
      ? html(c, signInPage('Not signed in', 'Open the login URL "polly ui" printed (it carries a token that works once).', 'boot'), 401)
      : html(c, messagePage('Refused', 'No session: open the login URL "polly ui" printed first.'), 403);
  });
  front.onError((error, c) => html(c, messagePage('Error', error instanceof Error ? error.message : String(error)), 500));

  const registry = (): Promise<Registry> => source.readRegistry();
  // Every page of a session starts with the Brain's health (inside <main>: the live reload keeps it current).
  const withHealth = async (res: Response): Promise<Response> => {
    if (!(res.headers.get('content-type') ?? '').startsWith('text/html')) return res;
    const page = (await res.text()).replace('<main>', `<main>${healthBanner(brainHealth(await registry()))}`);
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(page, { status: res.status, headers });
  };
  app.get('/', async (c) => {
    const reg = await registry();
    return html(c, overviewPage(reg, await source.parkCauses(), c.req.query('notice'), source.tasksNow(reg, 4)));
  });
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
    // From the overview's "needs you" strip: back there, with the same notice.
    const back = (await c.req.parseBody()).back === 'overview';
    try {
      const plan = await source.decidePlan(id, decision, deps.user);
      // Approved with no Brain running: one starts when config brain.start_on_approve says so;
      // otherwise the page says that nothing runs yet, and what starts it.
      let notice: string | null = null;
      if (decision === 'approve') {
        const brain = await source.brainAfterApproval();
        if (brain.state === 'started') notice = `Plan ${plan.id} is approved. No Brain ran, so one was started to run it (pid ${brain.pid}; config brain.start_on_approve).`;
        else if (brain.state === 'none') notice = `Plan ${plan.id} is approved, but no Brain runs: nothing of it runs until polly resume ${plan.id} starts one.`;
      }
      if (back) return c.redirect(`/?notice=${encodeURIComponent(notice ?? `Plan ${plan.id} is ${plan.gate}.`)}`, 303);
      return c.redirect(`/plans/${encodeURIComponent(plan.id)}${notice ? `?notice=${encodeURIComponent(notice)}` : ''}`, 303);
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
    return html(
      c,
      taskPage(t, workers, t.worktree ? await source.gateDecisions({ taskId: t.id, dir: t.worktree }, 200) : [], await source.taskRuns(t.id, 200), {
        park: await source.parkCause(t.id),
        now: source.tasksNow({ ...reg, tasks: { [t.id]: t } }, 12).get(t.id) ?? null,
      }),
    );
  });
  // Retry a task (a budget stop, a disk fault, a failure), as `polly retry TASK --budget B`: the
  // retry plan is proposed and waits at the gate; the plan page says what approving it does.
  app.post('/tasks/:id/retry', async (c) => {
    const id = c.req.param('id');
    const form = await c.req.parseBody();
    let budgets: RetryBudgets;
    try {
      budgets = retryFormBudgets(form);
    } catch (error) {
      if (error instanceof PollyError && error.code === 'bad_input') return html(c, messagePage('Not proposed', error.message), 400);
      throw error;
    }
    try {
      const r = await source.retryTask(id, budgets);
      const notice = r.existing
        ? `A retry of ${id} was already proposed: plan ${r.planId}. Decide it here.`
        : r.admitted
          ? `Retry plan ${r.planId} proposed for ${id}. Approve it below to continue the task in its worktree; a Brain runs it (polly resume ${r.planId} starts one when none runs).`
          : `The retry of ${id} was refused by the checker: ${r.line}, it would violate ${r.violated.join(', ') || 'an invariant'}. The shortest counterexamples are below.`;
      return c.redirect(`/plans/${encodeURIComponent(r.planId)}?notice=${encodeURIComponent(notice)}`, 303);
    } catch (error) {
      if (error instanceof PollyError && ['conflict', 'not_found', 'agent_refused', 'bad_input'].includes(error.code)) {
        return html(c, messagePage('Not proposed', error.message), error.code === 'not_found' ? 404 : error.code === 'bad_input' ? 400 : 409);
      }
      throw error;
    }
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
      // retry: how soon a browser tries again when the stream ends (a restart), ms (the default is about 3 s).
      await stream.writeSSE({ event: 'hello', data: '{}', retry: 1000 });
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
  // Live: each normalised event of the task's workers (history first), as `agent` events; a `result`
  // (the turn's report) also carries `html`, its Markdown rendered without raw HTML.
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
          for (const ev of tails.get(w.id)!.read()) {
            // A turn's report is Markdown: sent rendered (sanitised, brain/ui/markdown.ts) beside its text.
            const html = ev.type === 'result' && typeof ev.text === 'string' && ev.text.trim() ? { html: renderMarkdown(ev.text) } : {};
            await stream.writeSSE({ event: 'agent', data: JSON.stringify({ ...ev, ...html, worker: w.id }) });
          }
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
  const listen = (port: number) =>
    new Promise<Server>((resolve, reject) => {
      const s = serve({ fetch: front.fetch, hostname: host, port }, () => resolve(s as Server)) as Server;
      s.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new PollyError('bad_input', `polly ui: cannot listen on ${host}:${port}: ${error.code ?? error.message}. Pick another --port.`, {
            cause: error,
            details: { host, port },
          }),
        ),
      );
    });
  // The last server's port first (an open tab of it reconnects), any free one when it is taken.
  const lastPort = options.port === undefined && last && last.host === host && last.port > 0 ? last.port : null;
  let server: Server;
  if (lastPort !== null) {
    try {
      server = await listen(lastPort);
    } catch {
      log(`[polly ui] port ${lastPort} of the last dashboard is taken: listening on another (tabs open on the old one must be opened again)`);
      server = await listen(0);
    }
  } else server = await listen(options.port ?? 0);
  // A Brain that dies with work pending is noticed here (its own notifier died with it): once per
  // death, between this server and any other noticer (brain/notify/brain-death.ts).
  let noticing = false;
  const watcher = setInterval(() => {
    if (noticing || stopping) return;
    noticing = true;
    source
      .noticeBrainDeath()
      .catch((error: unknown) => log(`[polly ui] cannot notice the Brain's state: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => (noticing = false));
  }, pollMs);
  watcher.unref();
  const bound = server.address() as AddressInfo;
  const port = bound.port;
  const keepDir = options.keepDir;
  if (keepDir) {
    keep = () => {
      try {
        writeKeptState(keepDir, { host, port, sessions: book.kept() });
      } catch (error) {
        log(`[polly ui] cannot keep the sessions for a restart in ${keepDir}: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    keep();
  }
  allowed = allowedHosts(host, port);
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const url = `http://${shown}:${port}`;
  return {
    url,
    loginUrl: `${url}/?token=${token}`,
    newLoginUrl: () => `${url}/?token=${book.issueToken()}`,
    port,
    close: async () => {
      stopping = true;
      clearInterval(watcher);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await source.close();
    },
  };
}
