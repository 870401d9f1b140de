/**
 * Progress of long steps (issue 32 item 5), through a real keyless run (`polly try --script`: the
 * real pi and codex CLIs against the scripted model server, the real sandbox) with the dashboard open
 * in headless Chromium at a desktop (1440×900) and a phone (390×844), and `polly status --watch`
 * beside it:
 * - a 25 s `worktrees.setup` shows its phase, its command, the time it has run and its output lines
 *   as they come, while it runs (the page and the watch);
 * - the agent's turn shows its phase and the tool call it is in (a 6 s shell loop);
 * - the acceptance checks show their phase, the command and its output as it comes.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { openRepoContext } from '../../brain/registry/repo-context.js';
import { createRepoUiSource } from '../../brain/ui/ui-source.js';
import { createUiServer } from '../../brain/ui/ui-server.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { keylessEnv, polly } from '../helpers/keyless-cli.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { editConfig } from '../helpers/polly-state.js';
import { chromiumPath, hasSystemPackage } from '../helpers/system-packages.js';
import { launchChromium, VIEWPORTS } from '../helpers/chromium.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const CHROMIUM = hasSystemPackage('chromium', import.meta.url) && hasSystemPackage('bubblewrap', import.meta.url) ? chromiumPath() : undefined;

const SETUP = 'for i in $(seq 1 25); do echo "setup step $i"; sleep 1; done';
const TOOL = 'for i in 1 2 3 4 5 6; do echo "tool step $i"; sleep 1; done';
const CHECK = 'for i in 1 2 3 4 5 6; do echo "check step $i"; sleep 1; done; test -f src/median.js';

const PLAN = `goal: Add median()
tasks:
  - key: t1
    title: Add median()
    purpose: implement
    worker: pi
    reviewer: codex
    prompt: Add median(xs) in src/median.js.
    acceptance:
      commands: ['${CHECK}']
      criteria: ["median() exists"]
`;

const SCRIPT = `sessions:
  - name: implement-median
    match: {role: implement, contains: ["Add median()"]}
    turns:
      - steps:
          - run: '${TOOL}'
          - write:
              path: src/median.js
              content: |
                export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
          - finish: "Added median()."
  - name: review-median
    match: {role: review, contains: ["Add median()"]}
    turns:
      - steps:
          - finish: '{"blocking": [], "non_blocking": []}'
`;

interface Seen {
  phase: string;
  detail: string;
  tool: string | null;
  last: string;
  elapsed: string;
  t: number;
}

/** Record, in the page, every change of what the "running now" views show (`window.seen`). */
async function record(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { seen: Seen[] };
    w.seen = [];
    const rec = () => {
      for (const n of document.querySelectorAll<HTMLElement>('.now')) {
        const s: Seen = {
          phase: n.dataset.phase ?? '',
          detail: n.querySelector('.detail')?.textContent ?? '',
          tool: n.querySelector('.tool')?.textContent ?? null,
          last: (n.querySelector('pre.lines')?.textContent ?? '').split('\n').at(-1) ?? '',
          elapsed: n.querySelector('.elapsed')?.textContent ?? '',
          t: Date.now(),
        };
        const prev = w.seen.at(-1);
        if (!prev || prev.phase !== s.phase || prev.last !== s.last || prev.tool !== s.tool || prev.elapsed !== s.elapsed) w.seen.push(s);
      }
    };
    new MutationObserver(rec).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    rec();
  });
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The distinct numbers N of lines `<word> step N` seen in `lines`. */
const steps = (word: string, lines: string[]) => new Set(lines.flatMap((l) => [...l.matchAll(new RegExp(`${word} step (\\d+)`, 'g'))].map((m) => Number(m[1]))));

describe.skipIf(!CHROMIUM)(`progress of long steps${CHROMIUM ? '' : ' (SKIPPED: chromium or bubblewrap is not installed)'}`, () => {
  let browser: Browser | undefined;
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    while (cleanups.length) await cleanups.pop()!();
    await browser?.close();
    await stopTrackedBrains();
  });

  it('a 25 s setup, a long tool call and a long check show their phase, elapsed time, tool and output while they run, on the page and in polly status --watch', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-progress-');
    const env = keylessEnv();
    expect((await polly(['init'], repo, env)).code).toBe(0);
    editConfig(repo, [[['worktrees', 'setup'], SETUP]]);
    writeFileSync(join(root, 'plan.yaml'), PLAN);
    writeFileSync(join(root, 'script.yaml'), SCRIPT);

    const ctx = await openRepoContext(repo, env);
    const ui = await createUiServer(
      {
        source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config, log: () => {} }),
        user: 'human:tester (polly ui)',
      },
      { pollMs: 150, log: () => {} },
    );
    cleanups.push(() => ui.close());
    browser = await launchChromium(CHROMIUM!);
    const pages: Array<{ name: string; page: Page }> = [];
    for (const vp of VIEWPORTS) {
      const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
      cleanups.push(() => context.close());
      const page = await context.newPage();
      await page.goto(ui.newLoginUrl()); // each login URL works once
      await record(page);
      pages.push({ name: `${vp.name} overview`, page });
    }

    // polly status --watch beside it (not a terminal: a line per change).
    const watch = spawn(process.execPath, [cli, 'status', '--watch'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let watched = '';
    watch.stdout.on('data', (d: Buffer) => (watched += d.toString()));
    cleanups.push(() => {
      if (watch.exitCode === null) watch.kill('SIGINT');
    });

    const started = Date.now();
    const trial = polly(['try', join(root, 'plan.yaml'), '--script', join(root, 'script.yaml'), '--yes'], repo, env);
    // The task page, at each size, once the task exists.
    await until('the task', () => (JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as { tasks: Record<string, unknown> }).tasks['p1-t1'], 60_000);
    for (const vp of VIEWPORTS) {
      const page = await (await browser.newContext({ viewport: { width: vp.width, height: vp.height } })).newPage();
      cleanups.push(() => page.context().close());
      await page.goto(ui.newLoginUrl());
      await page.goto(`${ui.url}/tasks/p1-t1`);
      await record(page);
      pages.push({ name: `${vp.name} task page`, page });
    }
    // While the setup runs: its phase, command, output so far and a time that counts up, on every page.
    for (const { name, page } of pages) {
      const now = page.locator('.now[data-task="p1-t1"]');
      await until(`${name}: the setup's phase`, async () => (await now.getAttribute('data-phase').catch(() => null)) === 'setup', 60_000);
      expect(await now.locator('.detail').textContent(), name).toBe(SETUP);
      await until(
        `${name}: a setup output line`,
        async () =>
          /setup step \d+/.test(
            (await now
              .locator('pre.lines')
              .textContent()
              .catch(() => '')) ?? '',
          ),
        20_000,
      );
    }
    const during = await pages[1]!.page.locator('.now[data-task="p1-t1"] .elapsed').textContent();
    await new Promise((r) => setTimeout(r, 2500));
    const later = await pages[1]!.page.locator('.now[data-task="p1-t1"] .elapsed').textContent();
    expect(Number.parseInt(later!, 10), `elapsed ${during} then ${later}`).toBeGreaterThan(Number.parseInt(during!, 10));
    mkdirSync(join(process.cwd(), 'test-artifacts', 'ui'), { recursive: true });
    for (const { name, page } of pages)
      await page.screenshot({ path: join(process.cwd(), 'test-artifacts', 'ui', `progress-setup-${name.replace(' ', '-')}.png`), fullPage: true });

    const out = await trial;
    expect(out.code, out.stderr).toBe(0);
    const totalS = Math.round((Date.now() - started) / 1000);
    watch.kill('SIGINT');
    await new Promise((r) => watch.once('close', r));

    for (const { name, page } of pages) {
      const seen = await page.evaluate(() => (window as unknown as { seen: Seen[] }).seen);
      const of = (phase: string) => seen.filter((s) => s.phase === phase);
      // The setup's output came line by line while it ran (several steps seen, over several seconds).
      const setup = of('setup');
      expect(
        steps(
          'setup',
          setup.map((s) => s.last),
        ).size,
        `${name}: ${JSON.stringify(setup.slice(-3))}`,
      ).toBeGreaterThanOrEqual(4);
      expect(setup.at(-1)!.t - setup[0]!.t, name).toBeGreaterThan(5_000);
      // The agent's turn: its phase and the long tool call it was in.
      const turn = of('implement turn');
      expect(
        turn.some((s) => s.tool?.includes('tool step')),
        `${name}: ${JSON.stringify(turn.slice(-3))}`,
      ).toBe(true);
      // The checks: the command and its output as it came.
      const checks = of('checks');
      expect(
        checks.some((s) => s.detail === CHECK),
        `${name}: ${JSON.stringify(checks.slice(-3))}`,
      ).toBe(true);
      expect(
        steps(
          'check',
          checks.map((s) => s.last),
        ).size,
        `${name}: ${JSON.stringify(checks.slice(-3))}`,
      ).toBeGreaterThanOrEqual(2);
    }
    // polly status --watch: a line per change, with the phase, the command or tool, and the last output line.
    const lines = watched.split('\n');
    expect(
      steps(
        'setup',
        lines.filter((l) => l.includes(`· setup: ${SETUP} · `)),
      ).size,
      watched.slice(-2000),
    ).toBeGreaterThanOrEqual(4);
    expect(
      lines.some((l) => /· implement turn: \S+ .*tool step/.test(l)),
      watched.slice(-2000),
    ).toBe(true);
    expect(
      steps(
        'check',
        lines.filter((l) => l.includes('· checks: ')),
      ).size,
      watched.slice(-2000),
    ).toBeGreaterThanOrEqual(2);
    console.log(`[progress] polly try with a 25 s setup, a 6 s tool call and a 6 s check: ${totalS} s (load ${loadavg()[0]!.toFixed(1)})`);
  }, 420_000);
});
