/**
 * `polly ui` in a real headless Chromium (Debian's `chromium`, driven by playwright-core with its
 * executable path; no browser is downloaded):
 * - the scripted demo (`npm run demo`'s sample project, goal and model scripts; the real claude,
 *   codex and pi CLIs) runs with the dashboard open and without `--yes`: the refused and the
 *   admitted plan appear on the open overview, approving in the page writes the plan-gate record
 *   (who, when) and the Brain dispatches the tasks (their worktrees and branches appear); the
 *   overview follows every task's status to ready and a task page streams its workers' events and
 *   shows its workflow run's state and journal from the run store, all without a reload; a webhook
 *   receiver on loopback gets exactly one notification per notified event of the run, and a Brain
 *   started again sends none twice. The goal's summary is what `npm run demo` shows (two ready
 *   PRs from two vendors, each cross-reviewed, a plan refused then admitted, main untouched, every
 *   run conforming to its workflow). ONE real run serves all of these.
 * - a refused plan's counterexample is shown step by step (action, state diff, emitted effects);
 * - a local PR's page shows its state, review findings and diff;
 * - a request without the token, with a foreign Origin or a foreign Host, or a cross-site form post
 *   from another page in the same browser, is refused and changes nothing (registry and journal
 *   byte-identical).
 * Screenshots of the main pages go to test-artifacts/ui/ (git-ignored).
 *
 * Skipped, saying so, only when no chromium is installed (CI installs it: .ci/run).
 */
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { proposePlan } from '../../../brain/plan/plan-gate.js';
import { openRepoContext, type RepoContext } from '../../../brain/registry/repo-context.js';
import { createRepoUiSource } from '../../../brain/ui/ui-source.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createUiServer, type UiServer } from '../../../brain/ui/ui-server.js';
import { SESSION_TTL_MS } from '../../../brain/ui/ui-security.js';
import { notificationFor, webhookPayload } from '../../../brain/notify/notification.js';
import { runStoreDir } from '../../../brain/registry/run-storage.js';
import { formatCost, formatTotals } from '../../../brain/registry/cost-ledger.js';
import { createLmdbRunStore } from '../../../workflows/run/lmdb-run-store.js';
import { startScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { loadModelScript } from '../../../scripts/scripted-model/script.js';
import { useScriptedModels } from '../../../scripts/scripted-model/configure.js';
import { createTestRepo, git, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../../helpers/sample-project.js';
import { expectRunsConform } from '../../helpers/trace-conformance.js';
import { chromiumPath, hasSystemPackage } from '../../helpers/system-packages.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');
const CHROMIUM = hasSystemPackage('chromium', import.meta.url) ? chromiumPath() : undefined;
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'ui');
const DEMO = join(process.cwd(), 'scripts', 'demo');
/** The demo's goal (scripts/demo.ts `GOAL`; the Brain's script matches any goal). */
const DEMO_GOAL = 'Fix sum() in the stats library and add a median() helper with tests';

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

/** A webhook receiver on loopback: answers 200 and records each JSON body. */
async function startReceiver(): Promise<{ url: string; bodies: Array<{ text: string; blocks?: unknown[] }>; close(): Promise<void> }> {
  const bodies: Array<{ text: string; blocks?: unknown[] }> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/demo`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Run a command without blocking this process's event loop (the servers it talks to answer from
 * here), in its own process group, killed with the group (SIGKILL) after `ms` milliseconds or at
 * cleanup. Resolves with its exit code (null when killed by a signal) and its stderr.
 */
function runBounded(
  file: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  ms: number,
  cleanups: Array<() => Promise<void> | void>,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(file, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  const killGroup = () => {
    if (child.pid && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  cleanups.push(killGroup);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => {
    stderr += `\n[test] killed after ${ms} ms`;
    killGroup();
  }, ms);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
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

  it('the scripted demo with the page open: tasks update live, approving in the page dispatches them, each run shows its state and journal, the webhook gets one notification per event', async () => {
    const started = Date.now();
    // The demo's sample project, model scripts and goal (scripts/demo.ts), with the real claude/codex/pi CLIs.
    const sample = sampleProjectWithOrigin('polly-ui-demo-');
    git(sample.repo, ['remote', 'set-head', 'origin', 'main']);
    execFileSync(process.execPath, [cli, 'init'], { cwd: sample.repo, env: gitTestEnv(), stdio: 'pipe' });
    const model = await startScriptedModelServer({
      script: { sessions: [...loadModelScript(join(DEMO, 'brain-script.yaml')).sessions, ...loadModelScript(join(DEMO, 'workers-script.yaml')).sessions] },
    });
    cleanups.push(() => model.close());
    const receiver = await startReceiver();
    cleanups.push(receiver.close);
    const ctx = await openRepoContext(sample.repo, gitTestEnv());
    const ui = await startUi(ctx);
    cleanups.push(() => ui.close());
    const modelEnv = useScriptedModels(sample.repo, model.url, {
      extra: [
        [['notifications', 'webhook_url'], receiver.url],
        [['notifications', 'dashboard_url'], ui.url],
        [['notifications', 'desktop'], false],
        // A goal budget the run never reaches: the gate page shows what the human approves.
        [['budgets', 'per_goal'], { usd: 100 }],
      ],
    });

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    cleanups.push(() => context.close());
    const overview = await context.newPage();
    await overview.goto(ui.loginUrl);
    expect(overview.url()).toMatch(new RegExp(`^${ui.url}/s/[A-Za-z0-9_-]{43}/$`)); // the session's root
    // Every status each task row shows, in order, as the page updates itself (it is never reloaded: the marker stays).
    await overview.evaluate(() => {
      const w = window as unknown as { marker: number; seen: Record<string, string[]> };
      w.marker = 7;
      w.seen = {};
      const record = () => {
        for (const b of document.querySelectorAll<HTMLElement>('#tasks .task-status .badge')) {
          const id = (b.parentElement as HTMLElement).dataset.task!;
          const list = (w.seen[id] ??= []);
          if (list.at(-1) !== b.dataset.status) list.push(b.dataset.status!);
        }
      };
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      record();
    });

    let out = '';
    let stdout = '';
    let stderr = '';
    const mainBefore = git(sample.repo, ['rev-parse', 'main']);
    const goalCli = spawn(process.execPath, [cli, 'goal', DEMO_GOAL], { cwd: sample.repo, env: { ...gitTestEnv(), ...modelEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    goalCli.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      stdout += d.toString();
    });
    goalCli.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
      stderr += d.toString();
    });
    const goalExit = new Promise<number | null>((r) => goalCli.on('exit', (code) => r(code)));
    cleanups.push(() => {
      if (goalCli.exitCode === null) goalCli.kill();
    });

    // The refused plan, then the admitted one waiting at the gate, appear on the open page.
    await hasText(overview.locator('#plans tr:has(a[href="plans/p1"]) .badge'), 'refused', 200_000);
    await hasText(overview.locator('#plans tr:has(a[href="plans/p2"]) .badge'), 'pending', 200_000);
    await hasAttr(overview.locator('.task-status[data-task="x1"] .badge'), 'data-status', 'done', 60_000);
    await shot(overview, 'demo-overview-pending');
    // Nothing is dispatched before a human approves: no task worktree, no task branch.
    const worktrees = () =>
      git(sample.repo, ['worktree', 'list', '--porcelain'])
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length;
    expect(worktrees()).toBe(1);
    expect(git(sample.repo, ['branch', '--list', 'polly/*'])).toBe('');
    expect(Object.keys((await ctx.store.read()).tasks).sort()).toEqual(['x1']);

    const gate = await context.newPage();
    await gate.goto(`${ui.url}/plans/p1`);
    await hasText(gate.locator('#cx-1 h3'), 't2/reviewer-vendor-differs');
    await shot(gate, 'demo-plan-refused');
    await gate.goto(`${ui.url}/plans/p2`);
    await hasText(gate.locator('#admission-line'), 'admitted: plan-p2');
    expect(await gate.locator('#plan-tasks tbody tr').count()).toBe(2);
    await hasText(gate.locator('#budgets'), 'per task no limit');
    await hasText(gate.locator('#budgets'), 'per goal $100.00');
    await shot(gate, 'demo-plan-gate');
    // The webhook says the plan waits (held a moment, brain/notify/notifier.ts: never sent about a plan decided meanwhile); then the human approves.
    await until('the "waits for approval" notification', () => receiver.bodies.some((b) => b.text.includes('Plan p2 waits for approval')), 30_000);
    const approvedAt = Date.now();
    await Promise.all([gate.waitForURL(/\/s\/[A-Za-z0-9_-]{43}\/plans\/p2$/), gate.click('#approve')]);
    await hasText(gate.locator('#decided'), 'approved by human:tester (polly ui)');
    expect((await ctx.store.read()).plans.p2).toMatchObject({ gate: 'approved', decidedBy: 'human:tester (polly ui)' });

    // Ground truth of the dispatch: both task worktrees and branches exist, the registry has both tasks past queued.
    await until('both task worktrees', () => worktrees() === 3, 120_000);
    await until('both task branches', () => git(sample.repo, ['branch', '--list', 'polly/*']).split('\n').length === 2, 60_000);
    const dispatchedMs = Date.now() - approvedAt;
    // … and the plan page that was approved shows them without a reload.
    await hasCount(gate.locator('#tasks tbody tr'), 2, 60_000);

    // A running task's page: its workers' events stream in, its run's state and journal are shown.
    const taskPage = await context.newPage();
    await taskPage.goto(`${ui.url}/tasks/p2-t1`);
    await taskPage.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    await hasText(taskPage.locator('#stream li.tool_call'), 'src/stats.js', 120_000);
    await hasCount(taskPage.locator('#runs section.run'), 1, 60_000);
    // A gate denial in the task's worktree, as the gate logs one, shows up live.
    appendFileSync(
      join(sample.repo, '.polly', 'gate-decisions.jsonl'),
      `${JSON.stringify({ at: new Date().toISOString(), kind: 'gate.decision', data: { tool: 'bash', input: 'git push --force', cwd: join(sample.repo, '.worktrees', 'p2-t1'), decision: 'deny', rule: 'git.force_push', reason: 'force pushes are never allowed' } })}\n`,
    );
    await hasText(taskPage.locator('#denials'), 'git.force_push');
    await shot(taskPage, 'demo-task-running');

    const code = await goalExit;
    expect(code, out).toBe(0);
    const goalMs = Date.now() - started;
    const reg = await ctx.store.read();
    expect(reg.tasks['p2-t1']).toMatchObject({ status: 'ready', worker: 'claude-code' });
    expect(reg.tasks['p2-t2']).toMatchObject({ status: 'ready', worker: 'codex' });
    // What `npm run demo` shows a newcomer (a separate e2e-demo file once ran the same goal with --yes;
    // this run serves both): the refused then admitted plan, two ready PRs from two vendors, each
    // reviewed by another vendor, inside Polly's sandbox, one clean commit per task branch.
    expect(stdout).toMatch(/^p1: REFUSED: plan-p1 \[refused\]$/m);
    expect(stdout).toMatch(/^p2: admitted: plan-p2 — paths explored: \d+ · states seen: \d+ · exhaustive within declared domains \[approved\]$/m);
    expect(stdout).toMatch(/p2-t1\s+claude-code\s+pi\s+ready\s+red → green\s+0\/1\s+#\d+ ready/);
    expect(stdout).toMatch(/p2-t2\s+codex\s+claude-code\s+ready\s+green\s+0\/0\s+#\d+ ready/);
    expect(stderr).toContain('t2/reviewer-vendor-differs');
    expect(stderr).toContain('x1: done'); // the read-only explore worker ran
    const implemented = Object.values(reg.tasks).filter((t) => t.purpose === 'implement' && t.status === 'ready');
    expect(new Set(implemented.map((t) => t.worker))).toEqual(new Set(['claude-code', 'codex']));
    for (const t of implemented) {
      expect(t.reviewer).not.toBe(t.worker);
      // Ran inside Polly's sandbox (a machine without bubblewrap fails closed here: no allow_unconfined).
      // The repository is under the OS temp dir: Codex once refused to start there (its CODEX_HOME was there).
      expect(t.unconfined ?? null).toBeNull();
      expect(t.pr?.state).toBe('ready');
      // one clean commit on the task branch, on the remote
      expect(git(sample.origin, ['rev-list', '--count', `main..polly/${t.id}`])).toBe('1');
    }
    expect(reg.plans.p1?.gate).toBe('refused');
    expect(reg.plans.p2?.gate).toBe('approved');
    // Polly never merges: main is where it was, locally and on the remote, with no merge commit.
    expect(git(sample.repo, ['rev-parse', 'main'])).toBe(mainBefore);
    expect(git(sample.origin, ['rev-parse', 'main'])).toBe(mainBefore);
    expect(git(sample.repo, ['rev-list', '--merges', '--count', 'main'])).toBe('0');
    // Every run (the schedule and each task) replays through the admitted workflow it ran under.
    expect(await expectRunsConform(sample.repo)).toBeGreaterThanOrEqual(3);

    // The overview followed every task to ready without a reload, through the states in between.
    for (const id of ['p2-t1', 'p2-t2']) await hasAttr(overview.locator(`.task-status[data-task="${id}"] .badge`), 'data-status', 'ready', 30_000);
    const seen = await overview.evaluate(() => (window as unknown as { seen: Record<string, string[]> }).seen);
    for (const id of ['p2-t1', 'p2-t2']) {
      expect(seen[id]!.at(-1), JSON.stringify(seen)).toBe('ready');
      expect(seen[id]!.length, `${id} changed state on the page: ${JSON.stringify(seen)}`).toBeGreaterThanOrEqual(2);
    }
    expect(seen['p2-t1'], 'the red then green attempt was seen running').toContain('running');
    expect(await overview.evaluate(() => (window as unknown as { marker: number }).marker), 'the overview was not reloaded').toBe(7);
    // Each task's spending from its cost ledger: the metering proxy's count, priced from config prices
    // (the scripted models at 0, docs/metering.md), on a model running here: "not billed".
    for (const id of ['p2-t1', 'p2-t2', 'x1']) {
      const ledger = reg.tasks[id]!.ledger!;
      expect(ledger.totals.turns, id).toBeGreaterThan(0);
      await hasText(overview.locator(`#tasks tr:has(a[href="tasks/${id}"])`), formatCost(ledger.totals));
    }
    expect(formatCost(reg.tasks['p2-t2']!.ledger!.totals)).toMatch(/not billed/);
    await shot(overview, 'demo-overview-done');

    // The task page: both attempts' events, the red and the green acceptance run, and the task's
    // run as the run store has it (state, journal), all without a reload.
    const runs = createLmdbRunStore(runStoreDir(ctx.repo.pollyDir));
    cleanups.push(() => runs.close());
    const mine = (await runs.listRuns()).filter((r) => r.input.task === 'p2-t1');
    expect(mine).toHaveLength(1);
    const run = mine[0]!;
    const runJournal = await runs.journal(0, { run: run.id });
    const section = taskPage.locator(`#runs section.run[data-run="${run.id}"]`);
    await hasText(section.locator('.run-state'), String(run.state.state));
    await hasCount(section.locator('tbody tr'), Math.min(runJournal.length, 200));
    expect(runJournal.some((j) => j.kind === 'run.action')).toBe(true);
    const actions = runJournal.filter((j) => j.kind === 'run.action').map((j) => String(j.data.action));
    for (const a of actions) await hasText(section.locator('tbody'), `${a}: `);
    await hasText(taskPage.locator('#stream li.result'), 'npm test passes');
    await hasText(taskPage.locator('#spent'), formatTotals((await ctx.store.read()).tasks['p2-t1']!.ledger!.totals));
    // Both acceptance runs are kept and shown, newest first (issue 32 item 9); the newest with the whole last output.
    const checkRuns = reg.tasks['p2-t1']!.checkRuns ?? [];
    expect(checkRuns.map((r) => [r.attempt, r.green])).toEqual([
      [1, false],
      [2, true],
    ]);
    await hasCount(taskPage.locator('#checks section.check-run'), 2);
    expect(await taskPage.locator('#checks section.check-run').evaluateAll((ss) => ss.map((s) => (s as HTMLElement).dataset.green))).toEqual(['true', 'false']);
    await hasCount(taskPage.locator('#checks section.latest tbody tr'), reg.tasks['p2-t1']!.checks.length);
    expect(await taskPage.evaluate(() => (window as unknown as { marker: number }).marker), 'the task page was not reloaded').toBe(42);
    await shot(taskPage, 'demo-task-done');

    // The webhook: exactly one POST per notified journal event of the demo (the Brain hands the
    // last ones over as it exits), linking to this dashboard's pages.
    const brainGone = async () => {
      const b = (await ctx.store.read()).brain;
      if (!b) return true;
      try {
        process.kill(b.pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    await until('the Brain to exit when idle', brainGone, 60_000);
    const notified = (await ctx.store.journal()).map((j) => notificationFor(j, ui.url)).filter((n) => n !== null);
    expect(notified.map((n) => n.kind).sort()).toEqual(['goal.done', 'plan.proposed', 'plan.refused', 'task.pr_ready', 'task.pr_ready']);
    await until(`${notified.length} webhook posts`, () => receiver.bodies.length >= notified.length, 30_000);
    const sortByText = (xs: Array<{ text: string }>) => [...xs].sort((a, b) => a.text.localeCompare(b.text));
    // Each names its repository (the sample's directory name: no GitHub remote here).
    const repository = basename(sample.repo);
    expect(sortByText(receiver.bodies)).toEqual(sortByText(notified.map((n) => webhookPayload({ ...n, repository }))));
    expect(notified.every((n) => n.link?.startsWith(`${ui.url}/`))).toBe(true);
    // A Brain started again reads the notifier's cursor and announces nothing twice. Spawned
    // asynchronously: the webhook receiver and the dashboard it would talk to answer from this process.
    const again = await runBounded(process.execPath, [cli, 'brain', '--exit-when-idle', '--no-llm'], { cwd: sample.repo, env: { ...gitTestEnv(), ...modelEnv } }, 60_000, cleanups);
    expect(again.code, again.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.bodies).toHaveLength(notified.length);

    // Polly never merges.
    expect(git(sample.origin, ['rev-list', '--count', 'main'])).toBe('1');
    console.log(
      `[ui-dashboard] demo with the page open: approve click -> both worktrees ${dispatchedMs} ms; goal done ${Math.round(goalMs / 1000)} s after start; ${receiver.bodies.length} webhook posts (load ${loadavg()[0]!.toFixed(1)})`,
    );
  }, 420_000);

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
    const host = new URL(ui.url).host;
    const origin = ui.url;
    const cookieName = 'polly_ui_session';

    // The token → a session: a secret root every page lives below, and a cookie scoped to that
    // root (HttpOnly, SameSite=Strict). The token works once; a wrong one gets nothing.
    const login = await rawRequest(ui.loginUrl);
    expect(login.status).toBe(303);
    const root = String(login.headers.location);
    expect(root).toMatch(/^\/s\/[A-Za-z0-9_-]{43}\/$/);
    const setCookie = String(login.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toContain(`Path=${root.slice(0, -1)}`);
    const cookie = setCookie.split(';')[0]!;
    const approve = `${ui.url}${root}plans/${plan.planId}/approve`;
    const approveOutside = `${ui.url}/plans/${plan.planId}/approve`;
    const replayed = await rawRequest(ui.loginUrl);
    expect(replayed.status).toBe(401);
    expect(replayed.body).toContain('already used');
    expect(replayed.headers['set-cookie']).toBeUndefined();
    const wrong = await rawRequest(`${ui.url}/?token=not-the-token`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    // Signed in, the page shows the plan (the control for the refusals below).
    const shown = await rawRequest(`${ui.url}${root}plans/${plan.planId}`, { headers: { cookie } });
    expect(shown.status).toBe(200);
    expect(shown.body).toContain('Approve');
    expect(shown.body).toContain(`<base href="${root}">`);

    // No cookie, a forged cookie, the cookie outside its root or under another session's root:
    // nothing is shown, nothing is changed.
    const forged = `${cookieName}=${'A'.repeat(43)}`;
    for (const [url, headers] of [
      [`${ui.url}${root}plans/${plan.planId}`, {}],
      [`${ui.url}${root}plans/${plan.planId}`, { cookie: forged }],
      [`${ui.url}/plans/${plan.planId}`, { cookie }],
    ] as Array<[string, Record<string, string>]>) {
      const r = await rawRequest(url, { headers });
      expect(r.status, `${url} ${JSON.stringify(headers)}`).toBe(401);
      expect(r.body).not.toContain('Approve');
    }
    const second = await rawRequest(ui.newLoginUrl());
    expect(second.status).toBe(303);
    const root2 = String(second.headers.location);
    expect(root2).not.toBe(root);
    expect((await rawRequest(`${ui.url}${root2}plans/${plan.planId}`, { headers: { cookie } })).status).toBe(401);
    expect((await rawRequest(approve, { method: 'POST', headers: { origin } })).status).toBe(403);
    expect((await rawRequest(approve, { method: 'POST', headers: { origin, cookie: forged } })).status).toBe(403);
    expect((await rawRequest(approveOutside, { method: 'POST', headers: { origin, cookie } })).status).toBe(403);
    // With the cookie but from another origin (CSRF), or without an Origin at all.
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } })).status).toBe(403);
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie } })).status).toBe(403);
    // With the cookie but a foreign Host (DNS rebinding: evil.example resolving to 127.0.0.1).
    expect((await rawRequest(approve, { method: 'POST', headers: { cookie, origin: 'http://evil.example:80', host: 'evil.example:80' } })).status).toBe(421);
    expect((await rawRequest(`${ui.url}${root}`, { headers: { cookie, host: 'evil.example' } })).status).toBe(421);
    // State changes only by POST.
    expect((await rawRequest(approve, { headers: { cookie } })).status).toBe(404);

    // The same browser, signed in, visits a page served from another port of 127.0.0.1 (cookies
    // ignore the port): that server sees none of the session's cookies, its replay of what it got
    // approves nothing, and its page's cross-site form post is refused.
    const context = await browser.newContext();
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(ui.newLoginUrl());
    await hasText(page.locator('#plans'), plan.planId);
    const browserCookie = (await context.cookies()).find((c) => c.name === cookieName)!;
    expect(browserCookie.path).toBe(page.url().replace(ui.url, '').split('/').slice(0, 3).join('/'));
    const heard: string[] = [];
    const evil: Server = createServer((req, res) => {
      heard.push(req.headers.cookie ?? '');
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form id="f" method="post" action="${approveOutside}"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => evil.close(() => r())));
    const evilPort = (evil.address() as { port: number }).port;
    const posted = page.waitForResponse((r) => r.url() === approveOutside);
    await page.goto(`http://127.0.0.1:${evilPort}/`);
    expect((await posted).status()).toBe(403);
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.join(';')).not.toContain(browserCookie.value);
    for (const target of [approveOutside, approve, `${ui.url}${page.url().replace(ui.url, '').split('/').slice(0, 3).join('/')}/plans/${plan.planId}/approve`]) {
      const r = await rawRequest(target, { method: 'POST', headers: { cookie: heard.at(-1)!, origin, host } });
      expect(r.status, target).toBe(403);
    }

    const after = { registry: readFileSync(registryFile, 'utf8'), journal: readFileSync(journalFile, 'utf8') };
    expect(after).toEqual(before);

    // The control: the same POST from the dashboard's own origin, with the cookie, below its root, goes through.
    const good = await rawRequest(approve, { method: 'POST', headers: { cookie, origin, host } });
    expect(good.status).toBe(303);
    // No Brain runs in this repository: the plan page says that nothing runs until polly resume (issue 32 item 1).
    expect(good.headers.location).toBe(
      `${root}plans/${plan.planId}?notice=${encodeURIComponent(`Plan ${plan.planId} is approved, but no Brain runs: nothing of it runs until polly resume ${plan.planId} starts one.`)}`,
    );
    expect((await ctx.store.read()).plans[plan.planId]!.gate).toBe('approved');

    // A session ends 12 hours after its sign-in.
    let clock = Date.now();
    const timed = await createUiServer(
      { source: createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config }), user: 'x' },
      { now: () => clock },
    );
    cleanups.push(() => timed.close());
    const timedLogin = await rawRequest(timed.loginUrl);
    const timedPage = `${timed.url}${String(timedLogin.headers.location)}`;
    const timedCookie = String(timedLogin.headers['set-cookie']).split(';')[0]!;
    expect((await rawRequest(timedPage, { headers: { cookie: timedCookie } })).status).toBe(200);
    clock += SESSION_TTL_MS;
    const ended = await rawRequest(timedPage, { headers: { cookie: timedCookie } });
    expect(ended.status).toBe(401);
    expect(ended.body).toContain('session has ended');
    // Non-loopback binding is refused without --allow-remote.
    const source = createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config });
    await expect(createUiServer({ source, user: 'x' }, { host: '0.0.0.0' })).rejects.toMatchObject({
      code: 'bad_input',
      message: expect.stringMatching(/not a loopback address.*--allow-remote/),
    });
  }, 120_000);
});
