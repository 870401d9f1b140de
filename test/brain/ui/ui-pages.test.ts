/**
 * The dashboard's pages in a real headless Chromium (Debian's, driven by playwright-core), each at a
 * desktop (1440×900) and a phone (390×844) viewport (issue 32), over a repository whose state has one
 * of each thing that waits for a human (test/helpers/ui-state.ts):
 * - item 2: the overview's "needs you" strip lists the plan at the gate, the task parked for its
 *   budget and the failed task with their one-line reason and what moves them, the PR ready to merge;
 *   the count is in the title; approving the plan and retrying the parked task from the strip act.
 * - item 4: live updates patch the page: an opened output section, the focused field (with what was
 *   typed into it) and the scroll position survive 20 live updates, without a reload.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openRepoContext, type RepoContext } from '../../../brain/commands/repo-context.js';
import { createRepoUiSource } from '../../../brain/ui/ui-source.js';
import { createUiServer, type UiServer } from '../../../brain/ui/ui-server.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';
import { chromiumPath, hasSystemPackage } from '../../helpers/system-packages.js';
import { launchChromium, VIEWPORTS } from '../../helpers/chromium.js';
import { needsYouState, type NeedsYouState } from '../../helpers/ui-state.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const CHROMIUM = hasSystemPackage('chromium', import.meta.url) ? chromiumPath() : undefined;

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
async function open(browser: Browser, viewport: { width: number; height: number }, cleanups: Array<() => Promise<void>>) {
  const repo: TestRepo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  repo.commitAll('polly init');
  repo.git(['push', '-q', 'origin', 'main']);
  const ctx: RepoContext = await openRepoContext(repo.dir, gitTestEnv());
  const state: NeedsYouState = await needsYouState(ctx, repo);
  const ui: UiServer = await createUiServer(
    { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config, log: () => {} }), user: 'human:tester (polly ui)' },
    { pollMs: 100, log: () => {} },
  );
  cleanups.push(() => ui.close());
  const context = await browser.newContext({ viewport });
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
  }
});
