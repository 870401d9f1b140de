/**
 * `polly ui` in a real headless Chromium (Debian's `chromium`, driven by playwright-core with its
 * executable path; no browser is downloaded), against a real Brain process with recording task
 * tools (as test/brain/brain-process.test.ts) in a real git repository:
 * - approving a plan in the page writes the plan-gate record (who, when) and the Brain dispatches
 *   its tasks; the overview then shows the tasks' status change live, without a reload;
 * - a task page shows its worker's normalised events as they are appended to `events.jsonl`, and
 *   its acceptance runs and gate denials as they are recorded;
 * - a refused plan's counterexample is shown step by step (action, state diff, emitted effects);
 * - a request without the token, with a foreign Origin or a foreign Host, or a cross-site form post
 *   from another page in the same browser, is refused and changes nothing (registry and journal
 *   byte-identical).
 * Screenshots of the main pages go to test-artifacts/ui/ (git-ignored).
 *
 * Skipped, saying so, only when no chromium is installed (CI installs it: .ci/run).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { createBrainDeps } from '../../brain/process/brain-deps.js';
import { runBrainProcess } from '../../brain/process/brain-process.js';
import { createGoal } from '../../brain/registry/goal-record.js';
import { proposePlan } from '../../brain/plan/plan-gate.js';
import { openRepoContext, type RepoContext } from '../../brain/commands/repo-context.js';
import type { TaskTool, TaskToolOutcome } from '../../brain/task-tools/types.js';
import { createRepoUiSource } from '../../brain/ui/ui-source.js';
import { createLocalForge } from '../../brain/forge/local-forge.js';
import { createUiServer, type UiServer } from '../../brain/ui/ui-server.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const CHROMIUM = [process.env.POLLY_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'ui');
if (!CHROMIUM) console.warn('[ui-dashboard] SKIPPED: no chromium at /usr/bin/chromium (apt-get install chromium; CI installs it in .ci/run)');

const task = (key: string, worker = 'claude-code', reviewer = 'codex') => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker,
  reviewer,
  prompt: 'change something',
  acceptance: { commands: ['true'], criteria: ['the change is covered by a test'] },
});

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Wait until the elements of `loc` together contain `text` (the page may update live). */
async function hasText(loc: Locator, text: string, ms = 30_000): Promise<void> {
  let last = '';
  await until(
    `${loc} to contain ${JSON.stringify(text)}`,
    async () => {
      last = (await loc.allTextContents()).join(' | ');
      return last.includes(text);
    },
    ms,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; it shows ${JSON.stringify(last.slice(0, 500))}`);
  });
}

/** Wait until the first element of `loc` has `attr` = `value`. */
async function hasAttr(loc: Locator, attr: string, value: string, ms = 30_000): Promise<void> {
  let last: string | null = null;
  await until(
    `${loc} ${attr}=${value}`,
    async () => {
      last = (await loc.count()) ? await loc.first().getAttribute(attr) : null;
      return last === value;
    },
    ms,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; it has ${JSON.stringify(last)}`);
  });
}

/** Wait until `loc` matches `n` elements. */
async function hasCount(loc: Locator, n: number, ms = 30_000): Promise<void> {
  await until(`${loc} to match ${n}`, async () => (await loc.count()) === n, ms);
}

function initRepo(): { repo: TestRepo; ctxP: Promise<RepoContext> } {
  const repo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  return { repo, ctxP: openRepoContext(repo.dir, gitTestEnv()) };
}

async function startUi(ctx: RepoContext): Promise<UiServer> {
  const source = createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config });
  return createUiServer({ source, user: 'human:tester (polly ui)' }, { pollMs: 100 });
}

/** One raw HTTP request (node:http, so that Host and Origin can be set as an attacker would). */
function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(!CHROMIUM)(`polly ui in headless Chromium${CHROMIUM ? '' : ' (SKIPPED: chromium is not installed)'}`, () => {
  let browser: Browser;
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // --no-sandbox: the tests run as root (CI), where Chromium's own sandbox cannot start.
    browser = await chromium.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    while (cleanups.length) await cleanups.pop()!();
    await browser?.close();
  });

  const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  it('approving a plan in the page dispatches its tasks; task pages and the overview update live', async () => {
    const { repo, ctxP } = initRepo();
    const ctx = await ctxP;
    const deps = await createBrainDeps(ctx, gitTestEnv(), () => {});
    const waiting = new Map<string, (o: TaskToolOutcome) => void>();
    const worktrees = new Map<string, string>();
    const sleepers: ChildProcess[] = [];
    cleanups.push(() => {
      for (const s of sleepers) s.kill();
    });
    const ok =
      (note: string): TaskTool =>
      async () => ({ outcome: 'ok', note });
    const tools: Record<string, TaskTool> = {
      // A real worktree and a worker row with its state directory, as the supervisor records one;
      // the "agent" is the test, appending to its events.jsonl. Finishes when the test releases it.
      dispatch: async (tctx) => {
        const wt = await tctx.worktrees.create({ id: tctx.task.id });
        worktrees.set(tctx.task.id, wt.path);
        const sleeper = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
        sleepers.push(sleeper);
        const workerId = `w-${tctx.task.id}`;
        const stateDir = join(ctx.repo.pollyDir, 'workers', workerId);
        mkdirSync(stateDir, { recursive: true });
        appendFileSync(join(stateDir, 'events.jsonl'), `${JSON.stringify({ type: 'session', sessionId: `s-${tctx.task.id}` })}\n`);
        const now = new Date().toISOString();
        await tctx.store.update((d) => {
          Object.assign(d.tasks[tctx.task.id]!, { worktree: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, baseCommit: wt.baseCommit });
          d.workers[workerId] = {
            id: workerId,
            taskId: tctx.task.id,
            harness: 'claude-code',
            pid: sleeper.pid!,
            pgid: sleeper.pid!,
            sessionId: `s-${tctx.task.id}`,
            startedAt: now,
            heartbeatAt: now,
            supervisor: null,
            purpose: 'implement',
            state: 'running',
            stateDir,
          };
        });
        return new Promise<TaskToolOutcome>((resolve) => waiting.set(tctx.task.id, resolve));
      },
      run_acceptance: ok('green'),
      push: ok('pushed'),
      open_draft_pr: async () => ({ outcome: 'ok', data: { reviewer: 'codex' }, note: 'opened' }),
      send_followup: ok('fixed'),
      dispatch_review: ok('clean'),
      mark_ready: ok('ready'),
    };
    const controller = new AbortController();
    const done = runBrainProcess({ ...deps, tools, startGoalBrain: null, mergeWatchSeconds: 3600, signal: controller.signal, log: () => {} });
    cleanups.push(async () => {
      for (const r of waiting.values()) r({ outcome: 'failure', permanent: true, note: 'test over' });
      controller.abort();
      await done.catch(() => {});
    });
    const ui = await startUi(ctx);
    cleanups.push(() => ui.close());

    const { goal } = await createGoal(ctx.store, 'two things', 'plan');
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: [task('a'), task('b')] }, { goalId: goal.id });
    expect(plan.admitted).toBe(true);

    const page = await browser.newPage();
    cleanups.push(() => page.close());
    await page.goto(ui.loginUrl);
    // The token is exchanged for the cookie and leaves the address bar.
    expect(page.url()).toBe(`${ui.url}/`);
    await hasText(page.locator('#plans'), plan.planId);
    await shot(page, 'overview-pending');

    await page.goto(`${ui.url}/plans/${plan.planId}`);
    await hasText(page.locator('#admission-line'), `admitted: plan-${plan.planId}`);
    expect(await page.locator('#plan-tasks tbody tr').count()).toBe(2);
    await shot(page, 'plan-gate');
    const approvedAt = Date.now();
    await Promise.all([page.waitForURL(`${ui.url}/plans/${plan.planId}`), page.click('#approve')]);
    await hasText(page.locator('#decided'), 'approved by human:tester (polly ui)');

    // The same plan-gate record as `polly plan approve`: who and when, journaled.
    const decided = (await ctx.store.read()).plans[plan.planId]!;
    expect(decided.gate).toBe('approved');
    expect(decided.decidedBy).toBe('human:tester (polly ui)');
    expect(Date.parse(decided.decidedAt!)).toBeGreaterThanOrEqual(approvedAt - 1000);
    const approvedEvents = (await ctx.store.journal()).filter((j) => j.kind === 'plan.approved');
    expect(approvedEvents.map((j) => j.data)).toEqual([{ planId: plan.planId, goalId: goal.id, by: 'human:tester (polly ui)' }]);

    // The Brain dispatches both tasks.
    await until('both tasks dispatched', () => waiting.size === 2, 150_000);
    console.log(`[ui-dashboard] approve click -> both tasks dispatched: ${Date.now() - approvedAt} ms (load ${loadavg()[0]!.toFixed(1)})`);
    const reg = await ctx.store.read();
    const [idA, idB] = Object.values(reg.tasks)
      .filter((t) => t.planId === plan.planId)
      .map((t) => t.id)
      .sort();

    // A task page: the worker's events arrive as they are written, without a reload.
    await page.goto(`${ui.url}/tasks/${idA}`);
    await hasCount(page.locator('#stream li.session'), 1);
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    const events = join(ctx.repo.pollyDir, 'workers', `w-${idA}`, 'events.jsonl');
    appendFileSync(events, `${JSON.stringify({ type: 'text', text: 'Reading the README first.' })}\n`);
    appendFileSync(events, `${JSON.stringify({ type: 'tool_call', id: 'c1', tool: 'Bash', input: { command: 'npm test' } })}\n`);
    await hasText(page.locator('#stream li.tool_call'), 'tool Bash {"command":"npm test"}');
    await hasText(page.locator('#stream li.text'), 'Reading the README first.');
    // An acceptance run recorded on the task and a gate denial in the decision log appear too.
    await ctx.store.update((d) => {
      d.tasks[idA!]!.checks = [{ command: 'npm test', exitCode: 1, timedOut: false, durationMs: 1234, output: '1 failing' }];
    });
    appendFileSync(
      join(ctx.repo.root, '.polly', 'gate-decisions.jsonl'),
      `${JSON.stringify({ at: new Date().toISOString(), kind: 'gate.decision', data: { tool: 'bash', input: 'git push --force', cwd: worktrees.get(idA!), decision: 'deny', rule: 'git.force_push', reason: 'force pushes are never allowed' } })}\n`,
    );
    await hasText(page.locator('#checks'), 'npm test');
    await hasText(page.locator('#denials'), 'git push --force');
    await hasText(page.locator('#denials'), 'git.force_push');
    const appendedAt = performance.now();
    appendFileSync(events, `${JSON.stringify({ type: 'result', ok: true, text: 'Done: the change and its test.' })}\n`);
    await hasText(page.locator('#stream li.result'), 'Done: the change and its test.');
    console.log(`[ui-dashboard] an appended worker event was on the page after ${Math.round(performance.now() - appendedAt)} ms (poll 100 ms; load ${loadavg()[0]!.toFixed(1)})`);
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker), 'the page was not reloaded').toBe(42);
    await shot(page, 'task-live');

    // The overview: statuses change in place as the Brain moves the tasks on.
    await page.goto(`${ui.url}/`);
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 7));
    await hasAttr(page.locator(`.task-status[data-task="${idA}"] .badge`), 'data-status', 'running');
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      resolve({ outcome: 'ok', note: 'worker finished' });
    }
    await hasAttr(page.locator(`.task-status[data-task="${idA}"] .badge`), 'data-status', 'ready', 60_000);
    await hasAttr(page.locator(`.task-status[data-task="${idB}"] .badge`), 'data-status', 'ready', 60_000);
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker), 'the page was not reloaded').toBe(7);
    await shot(page, 'overview-done');
    await page.goto(`${ui.url}/goals/${goal.id}`);
    await hasText(page.locator('.goal-text'), 'two things');
    await hasText(page.locator('#goal-plans'), plan.planId);
    await hasCount(page.locator('#tasks tbody tr'), 2);
    await page.goto(`${ui.url}/journal`);
    await hasText(page.locator('#journal'), 'plan.approved');
    await hasText(page.locator('#journal'), '"by":"human:tester (polly ui)"');
    void repo;
  }, 240_000);

  it("shows a refused plan's counterexample step by step: action, state diff, emitted effects", async () => {
    const { ctxP } = initRepo();
    const ctx = await ctxP;
    const refused = await proposePlan(ctx.store, ctx.config, { tasks: [task('t1', 'codex', 'codex')] });
    expect(refused.admitted).toBe(false);
    const trace = (await ctx.store.read()).plans[refused.planId]!.counterexampleTraces![0]!;
    const ui = await startUi(ctx);
    cleanups.push(() => ui.close());
    const page = await browser.newPage();
    cleanups.push(() => page.close());
    await page.goto(ui.loginUrl);
    await page.goto(`${ui.url}/plans/${refused.planId}`);
    await hasText(page.locator('.admission'), 'REFUSED');
    await hasCount(page.locator('#approve'), 0);
    const section = page.locator('#cx-1');
    await hasText(section.locator('h3'), 't1/reviewer-vendor-differs');
    const rows = section.locator('tbody tr');
    expect(await rows.count()).toBe(trace.trace.length);
    expect(trace.trace.length).toBeGreaterThan(1);
    for (const [i, step] of trace.trace.entries()) {
      const cells = rows.nth(i).locator('td');
      await hasText(cells.nth(1).locator('code.action'), step.action);
      for (const c of step.changes) await hasText(cells.nth(2), `${c.variable}: ${String(c.from)} → ${String(c.to)}`);
      expect(await cells.nth(3).locator('code.effect').allTextContents()).toEqual(step.emitted);
    }
    // The step that opens the PR emits its effect (the path the invariant forbids with a same-vendor reviewer).
    expect(trace.trace.some((s) => s.emitted.length > 0)).toBe(true);
    await shot(page, 'plan-refused');
  }, 120_000);

  it("shows a local PR's state, review findings and diff", async () => {
    const { repo, ctxP } = initRepo();
    const ctx = await ctxP;
    repo.git(['checkout', '-q', '-b', 'polly/greet']);
    repo.write('greet.txt', 'hello world\n');
    repo.commitAll('add a greeting');
    repo.git(['push', '-q', 'origin', 'polly/greet']);
    repo.git(['checkout', '-q', 'main']);
    const forge = createLocalForge({ repoRoot: ctx.repo.root, store: ctx.store });
    const pr = await forge.openDraftPullRequest({ head: 'polly/greet', base: 'main', title: 'Add a greeting', body: 'Adds greet.txt.' });
    await forge.postReview(pr.number, { event: 'REQUEST_CHANGES', body: 'One thing to change.', comments: [{ path: 'greet.txt', line: 1, body: 'say hello properly' }] });
    const ui = await startUi(ctx);
    cleanups.push(() => ui.close());
    const page = await browser.newPage();
    cleanups.push(() => page.close());
    await page.goto(ui.loginUrl);
    await page.goto(`${ui.url}/prs/${pr.number}`);
    await hasText(page.locator('h1'), 'Add a greeting');
    await hasText(page.locator('h1 .badge'), 'draft');
    await hasText(page.locator('main'), 'changes_requested');
    await hasText(page.locator('section.review'), 'greet.txt:1');
    await hasText(page.locator('section.review'), 'say hello properly');
    await hasText(page.locator('#diff .add'), '+hello world');
    expect(await page.locator('#diff').textContent()).toBe(await forge.diff(pr.number));
    await shot(page, 'pull-request');
  }, 120_000);

  it('refuses a request without the token, with a foreign Origin or Host, or a cross-site form post, and changes nothing', async () => {
    const { ctxP } = initRepo();
    const ctx = await ctxP;
    const plan = await proposePlan(ctx.store, ctx.config, { tasks: [task('a')] });
    const ui = await startUi(ctx);
    cleanups.push(() => ui.close());
    const registryFile = join(ctx.repo.pollyDir, 'registry.json');
    const journalFile = join(ctx.repo.pollyDir, 'journal.jsonl');
    const before = { registry: readFileSync(registryFile, 'utf8'), journal: readFileSync(journalFile, 'utf8') };
    const approve = `${ui.url}/plans/${plan.planId}/approve`;
    const host = new URL(ui.url).host;
    const origin = ui.url;

    // The token → a cookie (HttpOnly, SameSite=Strict); a wrong token gets none.
    const login = await rawRequest(ui.loginUrl);
    expect(login.status).toBe(303);
    const setCookie = String(login.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const cookie = setCookie.split(';')[0]!;
    const wrong = await rawRequest(`${ui.url}/?token=not-the-token`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();

    // No token/cookie: nothing is shown, nothing is changed.
    const anonymous = await rawRequest(`${ui.url}/plans/${plan.planId}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).not.toContain('Approve');
    expect((await rawRequest(approve, { method: 'POST', headers: { origin } })).status).toBe(403);
    // With the cookie but from another origin (CSRF), or without an Origin at all.
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } })).status).toBe(403);
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie } })).status).toBe(403);
    // With the cookie but a foreign Host (DNS rebinding: evil.example resolving to 127.0.0.1).
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie, origin: 'http://evil.example:80', host: 'evil.example:80' } })).status).toBe(421);
    expect((await rawRequest(`${ui.url}/`, { headers: { cookie, host: 'evil.example' } })).status).toBe(421);
    // State changes only by POST.
    expect((await rawRequest(approve, { headers: { cookie } })).status).toBe(404);

    // A cross-site page in the same browser (signed in to the dashboard) posts the approve form.
    const context = await browser.newContext();
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(ui.loginUrl);
    await hasText(page.locator('#plans'), plan.planId);
    const evil: Server = createServer((_req, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form id="f" method="post" action="${approve}"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => evil.close(() => r())));
    const evilPort = (evil.address() as { port: number }).port;
    const posted = page.waitForResponse((r) => r.url() === approve);
    await page.goto(`http://localhost:${evilPort}/`);
    expect((await posted).status()).toBe(403);

    const after = { registry: readFileSync(registryFile, 'utf8'), journal: readFileSync(journalFile, 'utf8') };
    expect(after).toEqual(before);

    // The control: the same POST from the dashboard's own origin, with the cookie, goes through.
    const good = await rawRequest(approve, { method: 'POST', headers: { cookie, origin, host } });
    expect(good.status).toBe(303);
    expect((await ctx.store.read()).plans[plan.planId]!.gate).toBe('approved');
    // Non-loopback binding is refused without --allow-remote.
    const source = createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config });
    await expect(createUiServer({ source, user: 'x' }, { host: '0.0.0.0' })).rejects.toMatchObject({
      code: 'bad_input',
      message: expect.stringMatching(/not a loopback address.*--allow-remote/),
    });
  }, 120_000);
});
