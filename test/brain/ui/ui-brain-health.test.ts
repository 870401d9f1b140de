/**
 * A dead Brain is visible (issue 32 item 1), in a real headless Chromium (Debian's, driven by
 * playwright-core) and the built CLI: `polly run --detach` starts a real Brain and the plan waits at
 * the gate; the open overview says the Brain runs; SIGKILL of the Brain shows on the page within
 * 2 s, with the command that resumes it, without a reload; approving in the page then says that
 * nothing runs until `polly resume`; `polly status`'s first line says the same.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { openRepoContext } from '../../../brain/commands/repo-context.js';
import { createRepoUiSource } from '../../../brain/ui/ui-source.js';
import { createUiServer, type UiServer } from '../../../brain/ui/ui-server.js';
import { pidAlive } from '../../../workers/proc/process-liveness.js';
import { gitTestEnv } from '../../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../../helpers/sample-project.js';
import { stopTrackedBrains, trackBrains } from '../../helpers/brain-cleanup.js';
import { chromiumPath, hasSystemPackage } from '../../helpers/system-packages.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const run = promisify(execFile);
const CHROMIUM = hasSystemPackage('chromium', import.meta.url) ? chromiumPath() : undefined;

const plan = (key: string) => `goal: Add ${key}
tasks:
  - key: ${key}
    title: Add ${key}
    purpose: implement
    worker: pi
    reviewer: codex
    prompt: Add ${key}.
    acceptance:
      commands: [npm test]
`;

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!CHROMIUM)(`the Brain's health on the dashboard${CHROMIUM ? '' : ' (SKIPPED: chromium is not installed)'}`, () => {
  let browser: Browser | undefined;
  let ui: UiServer | undefined;
  afterAll(async () => {
    await ui?.close();
    await browser?.close();
    await stopTrackedBrains();
  });

  it('a SIGKILLed Brain shows on the open page within 2 s; an approval then says nothing runs until polly resume', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-ui-health-');
    trackBrains(repo);
    // Keys the agents are checked for before anything is proposed; no agent runs in this test.
    const env = { ...gitTestEnv(), USER: 'tester', OPENAI_API_KEY: 'sk-test-unused' };
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    writeFileSync(join(root, 'plan.yaml'), plan('one'));
    const detached = await run(process.execPath, [cli, 'run', join(root, 'plan.yaml'), '--detach'], { cwd: repo, env });
    expect(detached.stdout).toContain('plan p1 waits for approval');
    const registry = () => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as { brain: { pid: number } | null; plans: Record<string, { gate: string }> };
    const pid = await until('the Brain to own the registry', async () => registry().brain?.pid, 60_000);

    const ctx = await openRepoContext(repo, env);
    ui = await createUiServer(
      { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config }), user: 'human:tester (polly ui)' },
      { pollMs: 100 },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox'] });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(ui.loginUrl);
    const health = page.locator('#brain-health');
    expect(await health.getAttribute('data-state')).toBe('running');
    expect(await health.textContent()).toMatch(new RegExp(`^Brain running \\(pid ${pid}, since \\d{4}-.*, last heartbeat \\d+ s ago\\)$`));
    await until('the live stream', async () => (await page.locator('#live-state').textContent()) === 'live', 10_000);
    await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 7;
    });

    process.kill(pid, 'SIGKILL');
    const killed = Date.now();
    await until('the Brain to be gone', async () => !pidAlive(pid), 5_000);
    await until('the page to show the dead Brain', async () => (await health.getAttribute('data-state').catch(() => null)) === 'gone', 2_000);
    const ms = Date.now() - killed;
    console.log(`[brain health] the page showed the SIGKILLed Brain ${ms} ms after the kill (load ${loadavg()[0]!.toFixed(2)})`);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(7); // not reloaded: live
    expect(await health.textContent()).toBe(
      `Brain not running (pid ${pid} is gone, last heartbeat ${(registry().brain as unknown as { heartbeatAt: string }).heartbeatAt}): nothing runs until polly resume (1 plan at the gate waits)`,
    );

    // Every page carries it.
    const plan1 = await page.context().newPage();
    await plan1.goto(`${ui.url}/plans/p1`);
    expect(await plan1.locator('#brain-health').getAttribute('data-state')).toBe('gone');
    await Promise.all([plan1.waitForURL(/\/plans\/p1\?notice=/), plan1.locator('#approve').click()]);
    expect(await plan1.locator('p.notice').first().textContent()).toBe('Plan p1 is approved, but no Brain runs: nothing of it runs until polly resume p1 starts one.');
    expect(await plan1.locator('#brain-health').textContent()).toContain('nothing runs until polly resume (1 unfinished task waits)');
    expect(registry().plans.p1?.gate).toBe('approved');

    const status = await run(process.execPath, [cli, 'status'], { cwd: repo, env });
    expect(status.stdout.split('\n')[0]).toBe(
      `Polly in ${repo} · Brain not running (pid ${pid} is gone, last heartbeat ${(registry().brain as unknown as { heartbeatAt: string }).heartbeatAt}): nothing runs until polly resume (1 unfinished task waits)`,
    );
  }, 180_000);
});
