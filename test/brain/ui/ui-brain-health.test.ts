/**
 * A dead Brain is visible (issue 32 item 1), in a real headless Chromium (Debian's, driven by
 * playwright-core) and the built CLI: `polly run --detach` starts a real Brain and the plan waits at
 * the gate; the open overview says the Brain runs; SIGKILL of the Brain shows on the page within
 * 2 s, with the command that resumes it, without a reload, and a webhook receiver gets one
 * "the Brain stopped" notification within 2 s (noticed by the dashboard's server: the Brain's own
 * notifier died with it), not repeated by `polly status`; approving in the page then says that
 * nothing runs until `polly resume`; `polly status`'s first line says the same. With config
 * `brain.start_on_approve`, approving in the page starts a Brain instead.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../helpers/chromium.js';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import { proposePlan } from '../../../brain/plan/plan-gate.js';
import { createRepoUiSource } from '../../../brain/ui/ui-source.js';
import { createUiServer, type UiServer } from '../../../brain/ui/ui-server.js';
import { pidAlive } from '../../../workers/proc/process-liveness.js';
import { editConfig } from '../../helpers/polly-state.js';
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

/** A webhook receiver on loopback: answers 200 and records each body with the time it came. */
async function startReceiver(): Promise<{ url: string; bodies: Array<{ text: string; at: number }>; close(): Promise<void> }> {
  const bodies: Array<{ text: string; at: number }> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ ...(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { text: string }), at: Date.now() });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe.skipIf(!CHROMIUM)(`the Brain's health on the dashboard${CHROMIUM ? '' : ' (SKIPPED: chromium is not installed)'}`, () => {
  let browser: Browser | undefined;
  let ui: UiServer | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await ui?.close();
    await browser?.close();
    await stopTrackedBrains();
    while (cleanups.length) await cleanups.pop()!();
  });

  it('a SIGKILLed Brain shows on the open page within 2 s; an approval then says nothing runs until polly resume', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-ui-health-');
    trackBrains(repo);
    // Keys the agents are checked for before anything is proposed; no agent runs in this test.
    const env = { ...gitTestEnv(), USER: 'tester', OPENAI_API_KEY: 'sk-test-unused' };
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    const receiver = await startReceiver();
    cleanups.push(receiver.close);
    editConfig(repo, [
      [['notifications', 'webhook_url'], receiver.url],
      [['notifications', 'desktop'], false],
    ]);
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
    browser = await launchChromium(CHROMIUM!);
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
    // The notification: the dashboard's server noticed the death (its notifier died with the Brain).
    const stopped = () => receiver.bodies.filter((b) => b.text.includes('The Brain stopped with work pending'));
    await until('the "Brain stopped" notification', async () => stopped().length === 1, 2_000 - (Date.now() - killed) + 100);
    const notifiedMs = stopped()[0]!.at - killed;
    console.log(
      `[brain health] the page showed the SIGKILLed Brain ${ms} ms after the kill, the webhook got its notification after ${notifiedMs} ms (load ${loadavg()[0]!.toFixed(2)})`,
    );
    expect(notifiedMs).toBeLessThan(2_000);
    expect(stopped()[0]!.text).toBe(
      `[${basename(repo)}] The Brain stopped with work pending: The Brain (pid ${pid}, last heartbeat ${(registry().brain as unknown as { heartbeatAt: string }).heartbeatAt}) is gone and 1 plan at the gate waits: nothing runs until polly resume starts one.`,
    );
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
    // The death was announced once: polly status (another noticer) sends nothing more.
    await new Promise((r) => setTimeout(r, 300));
    expect(stopped()).toHaveLength(1);
    expect(readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8').match(/"kind":"brain\.died"/g)).toHaveLength(1);
    expect(status.stdout.split('\n')[0]).toBe(
      `Polly in ${repo} · Brain not running (pid ${pid} is gone, last heartbeat ${(registry().brain as unknown as { heartbeatAt: string }).heartbeatAt}): nothing runs until polly resume (1 unfinished task waits)`,
    );
  }, 180_000);

  it('with brain.start_on_approve, approving in the page with no Brain running starts one', async () => {
    const { repo } = sampleProjectWithOrigin('polly-ui-start-');
    trackBrains(repo);
    const env = { ...gitTestEnv(), USER: 'tester', OPENAI_API_KEY: 'sk-test-unused' };
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    editConfig(repo, [[['brain', 'start_on_approve'], true]]);
    const ctx = await openRepoContext(repo, env);
    const proposed = await proposePlan(ctx.store, ctx.config, {
      tasks: [{ key: 'one', title: 'Add one', purpose: 'implement', worker: 'pi', reviewer: 'codex', prompt: 'Add one.', acceptance: { commands: ['npm test'], criteria: [] } }],
    });
    expect(proposed.admitted).toBe(true);
    expect(ctx.config.brain.start_on_approve).toBe(true);
    const started = await createUiServer(
      { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config, env }), user: 'human:tester (polly ui)' },
      { pollMs: 100 },
    );
    cleanups.push(() => started.close());
    browser ??= await launchChromium(CHROMIUM!);
    const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(started.loginUrl);
    await page.goto(`${started.url}/plans/${proposed.planId}`);
    expect(await page.locator('#brain-health').getAttribute('data-state')).toBe('none');
    await Promise.all([page.waitForURL(/\?notice=/), page.locator('#approve').click()]);
    const notice = await page.locator('p.notice').first().textContent();
    const pid = Number(/pid (\d+)/.exec(notice ?? '')?.[1]);
    expect(notice).toBe(`Plan ${proposed.planId} is approved. No Brain ran, so one was started to run it (pid ${pid}; config brain.start_on_approve).`);
    expect(pidAlive(pid)).toBe(true);
    // The Brain it started owns the registry.
    await until('the started Brain to own the registry', async () => (await ctx.store.read()).brain?.pid === pid, 60_000);
    await until(
      'the page to show it running',
      async () =>
        (await page
          .locator('#brain-health')
          .getAttribute('data-state')
          .catch(() => null)) === 'running',
      10_000,
    );
  }, 180_000);
});
