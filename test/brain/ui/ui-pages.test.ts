/**
 * The dashboard's pages in a real headless Chromium (Debian's, driven by playwright-core), each at a
 * desktop (1440×900) and a phone (390×844) viewport (issue 32), over a repository whose state has one
 * of each thing that waits for a human (test/helpers/ui-state.ts):
 * - item 2: the overview's "needs you" strip lists the plan at the gate, the task parked for its
 *   budget and the failed task with their one-line reason and what moves them, the PR ready to merge;
 *   the count is in the title; approving the plan and retrying the parked task from the strip act.
 * - item 4: live updates patch the page: an opened output section, the focused field (with what was
 *   typed into it) and the scroll position survive 20 live updates, without a reload.
 * - item 6: no page is wider than the viewport (one column under 600 px: a table row is a card), and
 *   axe-core (npm axe-core, run in the page) finds no WCAG 2.1 A/AA violation (contrast included) and
 *   no best-practice one (landmarks, regions, one h1) on any page. The overview's screenshots at both
 *   sizes go to test-artifacts/ui/ (docs/ui-overview-*.png are copies).
 * - item 9: every acceptance run of a task is shown, newest first; a PR's body, its reviews and a
 *   turn's report are rendered Markdown, and hostile Markdown (raw HTML, event handlers,
 *   `javascript:` links) runs no script and adds no element of its own, with the page's
 *   Content-Security-Policy bypassed so that only the rendering is what stops it; an open tab
 *   reconnects by itself after `polly ui` restarts (same port, the session handed over) and catches
 *   up, or says it is signed out when the new server does not know its session.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { openRepoContext, type RepoContext } from '../../../brain/registry/repo-context.js';
import { createRepoUiSource } from '../../../brain/ui/ui-source.js';
import { createUiServer, type UiServer } from '../../../brain/ui/ui-server.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';
import { chromiumPath, hasSystemPackage } from '../../helpers/system-packages.js';
import { launchChromium, VIEWPORTS } from '../../helpers/chromium.js';
import { needsYouState, type NeedsYouState } from '../../helpers/ui-state.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const CHROMIUM = hasSystemPackage('chromium', import.meta.url) ? chromiumPath() : undefined;
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'ui');
/** axe-core's browser build, evaluated in the page (CDP's evaluate is not held to the page's CSP). */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

/** axe-core's violations on `page`: WCAG 2.0/2.1 A and AA (contrast included) and best practices (landmarks, regions, headings). */
async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, o: unknown): Promise<{ violations: AxeViolation[] }> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }));
  });
}

/** How much wider than the viewport the page is, in CSS px (0: it fits). */
function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth);
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh repository with {@link needsYouState}, a dashboard over it, and a signed-in page at `viewport`. */
async function open(browser: Browser, viewport: { width: number; height: number }, cleanups: Array<() => Promise<void>>, contextOptions: BrowserContextOptions = {}) {
  const repo: TestRepo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  repo.commitAll('polly init');
  repo.git(['push', '-q', 'origin', 'main']);
  const ctx: RepoContext = await openRepoContext(repo.dir, gitTestEnv());
  // The parked task's pi (reviewed by codex) ran metered, as a budget stop implies: the plan gate refuses a
  // budget on a worker Polly cannot meter (brain/plan/budgets.ts `unmeteredBudgets`), the retry's included.
  // Nothing is called at these URLs: no agent runs here.
  ctx.config.workers.pi = { ...ctx.config.workers.pi, base_url: 'http://127.0.0.1:9/v1' };
  ctx.config.workers.codex = { ...ctx.config.workers.codex, provider: { id: 'metered', base_url: 'http://127.0.0.1:9/v1', env_key: 'POLLY_UI_TEST_KEY' } };
  const state: NeedsYouState = await needsYouState(ctx, repo);
  const ui: UiServer = await createUiServer(
    { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config, log: () => {} }), user: 'human:tester (polly ui)' },
    { pollMs: 100, log: () => {} },
  );
  cleanups.push(() => ui.close());
  const context = await browser.newContext({ viewport, ...contextOptions });
  cleanups.push(() => context.close());
  const page: Page = await context.newPage();
  await page.goto(ui.loginUrl);
  return { repo, ctx, state, ui, page };
}

describe.skipIf(!CHROMIUM)(`the dashboard's pages at a desktop and a phone${CHROMIUM ? '' : ' (SKIPPED: chromium is not installed)'}`, () => {
  let browser: Browser;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    browser = await launchChromium(CHROMIUM!);
  });
  afterAll(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => {});
    await browser?.close();
  });

  for (const viewport of VIEWPORTS) {
    it(`the "needs you" strip (${viewport.name} ${viewport.width}x${viewport.height}): what waits, why, and the button or command that moves it; acting from it works`, async () => {
      const { ctx, state, ui, page } = await open(browser, viewport, cleanups);
      const strip = page.locator('#needs-you');
      expect(await page.title()).toBe('(4) Overview · Polly');
      expect(await strip.locator('li').evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.kind))).toEqual(['plan', 'task', 'task', 'pr']);
      // The plan at the gate, with Approve/Reject in place.
      const plan = strip.locator(`#ny-plan-${state.pending}`);
      expect(await plan.textContent()).toContain(`Plan ${state.pending} waits for approval`);
      expect(await plan.locator('button').allTextContents()).toEqual([`Approve ${state.pending}`, 'Reject']);
      // The parked task: its one-line reason and the retry with a budget that lets it go on.
      const parked = strip.locator(`#ny-task-${state.parked}`);
      expect(await parked.locator('.badge').textContent()).toBe('parked');
      expect(await parked.textContent()).toContain('budget reached: the task budget (2000 tokens): tokens 2600 ≥ limit 2000.');
      expect(await parked.locator('button').textContent()).toBe(`Retry ${state.parked} with tokens 6000`);
      expect(await parked.locator('code').textContent()).toBe(`polly retry ${state.parked} --budget '{tokens: 6000}'`);
      // The failed task: its reason with its fix, and the retry.
      const failed = strip.locator(`#ny-task-${state.failed}`);
      expect(await failed.textContent()).toContain(
        `acceptance red after 3 attempts: npm test exited 1 (mean() of [] is NaN, expected 0). Fix: change the code on polly/${state.failed}`,
      );
      expect(await failed.locator('button').textContent()).toBe(`Retry ${state.failed}`);
      expect(await failed.locator('code').textContent()).toBe(`polly retry ${state.failed}`);
      // The PR waiting for a human merge.
      const pr = strip.locator(`#ny-pr-${state.pr}`);
      expect(await pr.textContent()).toContain(`PR #${state.pr} of task ${state.ready} is ready for you to merge`);
      expect(await pr.locator(`a[href="prs/${state.pr}"]`).count()).toBe(1);
      await page.screenshot({ path: join(process.cwd(), 'test-artifacts', 'ui', `needs-you-${viewport.name}.png`), fullPage: true });

      // Approve in place: back on the overview, the plan is approved (the same record as polly plan
      // approve) and no Brain runs, which the page says; the strip and the title follow.
      await Promise.all([page.waitForURL(/\/\?notice=/), page.locator(`#ny-approve-${state.pending}`).click()]);
      expect((await ctx.store.read()).plans[state.pending]).toMatchObject({ gate: 'approved', decidedBy: 'human:tester (polly ui)' });
      expect(await page.locator('main p.notice').textContent()).toBe(
        `Plan ${state.pending} is approved, but no Brain runs: nothing of it runs until polly resume ${state.pending} starts one.`,
      );
      expect(await strip.locator(`#ny-plan-${state.pending}`).count()).toBe(0);
      expect(await page.title()).toBe('(3) Overview · Polly');

      // Retry the parked task with the raised budget: its retry plan is proposed and waits at the gate.
      await Promise.all([page.waitForURL(/\/plans\/p\d+\?notice=/), parked.locator('button').click()]);
      const reg = await ctx.store.read();
      const retry = Object.values(reg.plans).find((p) => p.gate === 'pending' && p.retries && Object.values(p.retries).includes(state.parked));
      expect(retry, JSON.stringify(Object.values(reg.plans).map((p) => [p.id, p.gate, p.retries]))).toBeDefined();
      expect(retry!.tasks[0]!.budget).toEqual({ tokens: 6000 });
      expect(await page.locator('p.notice').first().textContent()).toContain(`Retry plan ${retry!.id} proposed for ${state.parked}`);
      // The overview now lists the retry plan instead of the parked task (one thing, not two).
      await page.goto(`${ui.url}/`);
      expect(await strip.locator(`#ny-plan-${retry!.id}`).count()).toBe(1);
      expect(await strip.locator(`#ny-task-${state.parked}`).count()).toBe(0);
      expect(await page.title()).toBe('(3) Overview · Polly');
    }, 120_000);

    it(`live updates patch the page (${viewport.name}): an open section, the focused field and the scroll survive 20 updates`, async () => {
      const { ctx, state, ui, page } = await open(browser, viewport, cleanups);
      await page.goto(`${ui.url}/tasks/${state.parked}`);
      await until('the live stream', async () => (await page.locator('#live-state').textContent()) === 'live');
      await page.evaluate(() => {
        (window as unknown as { marker: number }).marker = 7;
      });
      const section = page.locator('#checks details').first();
      await section.locator('summary').click();
      expect(await section.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
      const tokens = page.locator('#retry-tokens');
      await tokens.fill('7000');
      await tokens.focus();
      await page.evaluate(() => window.scrollTo(0, 150));
      const scrollY = await page.evaluate(() => window.scrollY);
      let fetched = 0;
      page.on('request', (r) => {
        if (r.url() === page.url()) fetched += 1;
      });
      const worktree = (await ctx.store.read()).tasks[state.parked]!.worktree!;
      for (let i = 1; i <= 20; i++) {
        appendFileSync(
          join(ctx.repo.root, '.polly', 'gate-decisions.jsonl'),
          `${JSON.stringify({ at: new Date().toISOString(), kind: 'gate.decision', data: { tool: 'bash', input: `curl https://example.com/${i}`, cwd: worktree, decision: 'deny', rule: 'network.egress', reason: 'no network in a turn' } })}\n`,
        );
        await until(`update ${i} on the page`, async () => (await page.locator('#denials tbody tr').count()) === i);
      }
      expect(fetched).toBeGreaterThanOrEqual(20);
      expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 'patched, not reloaded').toBe(7);
      expect(await section.evaluate((d) => (d as HTMLDetailsElement).open), 'the opened section is still open').toBe(true);
      expect(await page.evaluate(() => document.activeElement?.id), 'focus stayed on the field').toBe('retry-tokens');
      expect(await tokens.inputValue(), 'what was typed is kept').toBe('7000');
      expect(await page.evaluate(() => window.scrollY)).toBe(scrollY);
      // A field nobody edits still follows the state: the other budget field is patched like any element.
      expect(await page.locator('#retry-usd').inputValue()).toBe('');
    }, 120_000);

    it(`every acceptance run is kept and shown; Markdown is rendered and a hostile body runs nothing (${viewport.name})`, async () => {
      const { ctx, repo, state, ui, page } = await open(browser, viewport, cleanups, { bypassCSP: true });
      // The failed task ran its checks three times: the page shows the three runs, newest first.
      await page.goto(`${ui.url}/tasks/${state.failed}`);
      const runs = page.locator('#checks section.check-run');
      expect(await runs.evaluateAll((ss) => ss.map((s) => [s.id, (s as HTMLElement).dataset.green]))).toEqual([
        ['check-run-3', 'false'],
        ['check-run-2', 'false'],
        ['check-run-1', 'false'],
      ]);
      expect(await runs.locator('h3').allTextContents()).toEqual([
        expect.stringMatching(/^red Run 3 of 3 · attempt 3 · \d{4}-/),
        expect.stringMatching(/^red Run 2 of 3 · attempt 2 · /),
        expect.stringMatching(/^red Run 1 of 3 · attempt 1 · /),
      ]);
      const run2 = page.locator('#check-run-2');
      expect(await run2.locator('td').nth(1).textContent()).toContain('timed out');
      await run2.locator('summary').click();
      expect(await run2.locator('pre').textContent()).toBe('RUNS test/stats.test.js\n');
      await page.locator('#check-run-1 summary').click();
      expect(await page.locator('#check-run-1 pre').textContent()).toContain('mean is not defined');

      // A hostile PR body, review and turn report: Markdown renders, HTML and script links do not.
      const hostile = [
        '## Changes',
        '',
        'Adds **median()** with `tests`; see [the docs](https://example.com/docs).',
        '',
        '- one',
        '- two',
        '',
        `<script>window.pwned = 'script'</script>`,
        `<img src="x" onerror="window.pwned = 'img'">`,
        `<svg onload="window.pwned = 'svg'"></svg>`,
        `<iframe src="javascript:window.pwned = 'iframe'"></iframe>`,
        '',
        `[click me](javascript:window.pwned='link') and ![pic](javascript:window.pwned='image')`,
        '',
        `<a href="javascript:window.pwned = 'raw-a'">raw link</a>`,
      ].join('\n');
      const forge = createLocalForge({ repoRoot: ctx.repo.root, store: ctx.store });
      await forge.updateBody(state.pr, hostile);
      await forge.addFeedback(state.pr, { event: 'COMMENT', body: hostile });
      const stateDir = join(repo.dir, '.polly', 'workers', 'w-hostile');
      mkdirSync(stateDir, { recursive: true });
      writeFileSync(join(stateDir, 'events.jsonl'), `${JSON.stringify({ type: 'text', text: 'Working.' })}\n${JSON.stringify({ type: 'result', ok: true, text: hostile })}\n`);
      await ctx.store.update((d) => {
        const at = new Date().toISOString();
        d.workers['w-hostile'] = {
          id: 'w-hostile',
          taskId: state.ready,
          harness: 'pi',
          pid: 1,
          pgid: 1,
          sessionId: null,
          startedAt: at,
          heartbeatAt: at,
          supervisor: null,
          stateDir,
          state: 'exited',
          endedAt: at,
        };
      });
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      const pwned = () => page.evaluate(() => (window as unknown as { pwned?: string }).pwned ?? null);
      /** Elements that only raw HTML could have made, or links and images that run script. */
      const injected = (root: string) =>
        page
          .locator(root)
          .evaluateAll((roots) =>
            roots.flatMap((r) => [
              ...[...r.querySelectorAll('script, iframe, svg, object, embed, [onerror], [onload]')].map((x) => x.outerHTML),
              ...[...r.querySelectorAll('a, img')].filter((x) => /^\s*javascript:/i.test(x.getAttribute('href') ?? x.getAttribute('src') ?? '')).map((x) => x.outerHTML),
            ]),
          );
      await page.goto(`${ui.url}/prs/${state.pr}`);
      const body = page.locator('#pr-body');
      expect(await body.locator('h2').textContent()).toBe('Changes');
      expect(await body.locator('strong').textContent()).toBe('median()');
      expect(await body.locator('code').textContent()).toBe('tests');
      expect(await body.locator('li').allTextContents()).toEqual(['one', 'two']);
      expect(await body.locator('a').evaluateAll((as) => as.map((a) => [a.getAttribute('href'), a.getAttribute('rel')]))).toEqual([
        ['https://example.com/docs', 'noopener noreferrer nofollow'],
      ]);
      // The raw HTML is shown as the text it is.
      expect(await body.textContent()).toContain(`<script>window.pwned = 'script'</script>`);
      expect(await body.textContent()).toContain(`<img src="x" onerror="window.pwned = 'img'">`);
      expect(await page.locator('section.review .markdown h2').first().textContent()).toBe('Changes');
      expect(await injected('main')).toEqual([]);
      await page.locator('#pr-body').scrollIntoViewIfNeeded();
      await page.waitForTimeout(300);
      expect(await pwned()).toBeNull();

      // The turn's report on the task page's live stream.
      await page.goto(`${ui.url}/tasks/${state.ready}`);
      const report = page.locator('#stream li.result .report');
      await until('the report in the stream', async () => (await report.count()) === 1);
      expect(await report.locator('h2').textContent()).toBe('Changes');
      expect(await report.textContent()).toContain(`<script>window.pwned = 'script'</script>`);
      expect(await page.locator('#stream li.result').textContent()).toMatch(/^\[w-hostile\] turn ended:/);
      expect(await injected('#stream')).toEqual([]);
      // Clicking the script link does nothing either (it is not a link).
      await report.getByText('click me').click();
      await page.waitForTimeout(300);
      expect(await pwned()).toBeNull();
      expect(dialogs).toEqual([]);
    }, 120_000);

    it(`an open tab reconnects by itself after polly ui restarts, catches up, and says so when the new server does not know its session (${viewport.name})`, async () => {
      const repo: TestRepo = createTestRepo();
      execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
      repo.commitAll('polly init');
      repo.git(['push', '-q', 'origin', 'main']);
      const ctx: RepoContext = await openRepoContext(repo.dir, gitTestEnv());
      const state = await needsYouState(ctx, repo);
      const keepDir = mkdtempSync(join(tmpdir(), 'polly-ui-keep-'));
      cleanups.push(async () => rmSync(keepDir, { recursive: true, force: true }));
      const start = (port?: number) =>
        createUiServer(
          {
            source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config, log: () => {} }),
            user: 'human:tester (polly ui)',
          },
          { pollMs: 100, log: () => {}, keepDir, ...(port === undefined ? {} : { port }) },
        );
      let ui = await start();
      let closed = false;
      cleanups.push(async () => {
        if (!closed) await ui.close();
      });
      const context = await browser.newContext({ viewport });
      cleanups.push(() => context.close());
      const page = await context.newPage();
      await page.goto(ui.loginUrl);
      await page.goto(`${ui.url}/tasks/${state.parked}`);
      const live = page.locator('#live-state');
      await until('the live stream', async () => (await live.textContent()) === 'live');
      await page.evaluate(() => {
        (window as unknown as { marker: number }).marker = 7;
      });
      const firstPort = ui.port;

      // polly ui stops: the tab says it is reconnecting; something happens while no server runs.
      closed = true;
      await ui.close();
      await until('reconnecting…', async () => (await live.textContent()) === 'reconnecting…');
      const worktree = (await ctx.store.read()).tasks[state.parked]!.worktree!;
      appendFileSync(
        join(ctx.repo.root, '.polly', 'gate-decisions.jsonl'),
        `${JSON.stringify({ at: new Date().toISOString(), kind: 'gate.decision', data: { tool: 'bash', input: 'curl https://example.com/while-down', cwd: worktree, decision: 'deny', rule: 'network.egress', reason: 'no network in a turn' } })}\n`,
      );
      await new Promise((r) => setTimeout(r, 1500));
      // A new polly ui on the repository takes the same port and the session: the tab is live again
      // without a reload or a new sign-in, and shows what happened while it was away.
      ui = await start();
      closed = false;
      expect(ui.port).toBe(firstPort);
      const back = Date.now();
      await until('live again', async () => (await live.textContent()) === 'live', 15_000);
      await until('the denial made while the server was down', async () => (await page.locator('#denials tbody tr').count()) === 1, 15_000);
      console.log(`[ui-pages] ${viewport.name}: the tab was live again ${Date.now() - back} ms after the restart`);
      expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 'patched, not reloaded').toBe(7);

      // A server that does not know the session (its handover removed): the tab says it is signed
      // out and what to do, instead of "reconnecting…" forever.
      closed = true;
      await ui.close();
      rmSync(join(keepDir, 'ui-server.json'));
      ui = await start(firstPort);
      closed = false;
      await until('signed out', async () => (await live.textContent())?.startsWith('signed out') ?? false, 15_000);
      expect(await live.textContent()).toBe('signed out: this dashboard no longer knows this session. Open a new login URL from polly ui (press Enter in its terminal).');
      expect((await axeViolations(page)).filter((v) => v.id === 'color-contrast')).toEqual([]);
    }, 120_000);

    it(`every page fits the viewport and axe-core finds no contrast, landmark or other WCAG AA violation (${viewport.name})`, async () => {
      const { state, ui, page } = await open(browser, viewport, cleanups);
      const reg = await (async () => state)();
      const pages = [
        '/',
        `/plans/${reg.pending}`,
        `/plans/${reg.approved}`,
        `/tasks/${reg.parked}`,
        `/tasks/${reg.failed}`,
        `/tasks/${reg.ready}`,
        `/prs/${reg.pr}`,
        '/journal',
        '/goals/g2',
      ];
      const found: string[] = [];
      for (const path of pages) {
        await page.goto(`${ui.url}${path}`);
        await until(`the live stream on ${path}`, async () => (await page.locator('#live-state').textContent()) === 'live');
        const wider = await overflowX(page);
        if (wider > 0) found.push(`${path}: ${wider} px wider than the ${viewport.width} px viewport`);
        for (const v of await axeViolations(page)) found.push(`${path}: ${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
        if (path === '/') {
          mkdirSync(ARTIFACTS, { recursive: true });
          await page.screenshot({ path: join(ARTIFACTS, `overview-${viewport.name}.png`), fullPage: true });
        }
      }
      // A page outside any session (a notification's link): the sign-in page.
      const stranger = await (await browser.newContext({ viewport })).newPage();
      await stranger.goto(`${ui.url}/plans/${reg.pending}`);
      if ((await overflowX(stranger)) > 0) found.push('sign-in page: wider than the viewport');
      for (const v of await axeViolations(stranger)) found.push(`sign-in page: ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
      await stranger.context().close();
      expect(found).toEqual([]);
      // Under 600 px the tables are one column: a row's cells stack, each with its column's name.
      if (viewport.width < 600) {
        await page.goto(`${ui.url}/`);
        const cells = page.locator('#tasks tbody tr').first().locator('td');
        const boxes = await cells.evaluateAll((tds) => tds.map((td) => td.getBoundingClientRect().left));
        expect(new Set(boxes.map((x) => Math.round(x))).size, 'the cells of a row are stacked').toBe(1);
        expect(await cells.first().evaluate((td) => getComputedStyle(td, '::before').content)).toBe('"Task"');
      }
    }, 180_000);
  }
});
