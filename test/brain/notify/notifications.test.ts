/**
 * Notifications from a real Brain process running a small plan (its task tools
 * recorded, as in brain-process.test.ts), to real HTTP receivers on loopback: exactly one webhook
 * POST per notified event; a webhook that hangs or is down neither slows nor breaks the run, and
 * its failure is journaled once. Plus the pure parts: which events notify, the Slack body, links.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { createBrainDeps } from '../../../brain/process/brain-deps.js';
import { runBrainProcess } from '../../../brain/process/brain-process.js';
import { createGoal } from '../../../brain/registry/goal-record.js';
import { decidePlan, proposePlan } from '../../../brain/plan/plan-gate.js';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import type { TaskTool } from '../../../brain/task-tools/types.js';
import { budgetReason, parkForBudget } from '../../../brain/task-tools/turn-budget.js';
import { desktopArgs } from '../../../brain/notify/desktop.js';
import { createWebhookSink, type NotificationSink } from '../../../brain/notify/webhook.js';
import { dashboardUrl, notificationFor, webhookPayload, type Notification } from '../../../brain/notify/notification.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { parseConfig } from '../../../brain/config/config.js';
import { startNotifier } from '../../../brain/notify/notifier.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

interface Receiver {
  url: string;
  bodies: Array<{ text: string; blocks?: unknown[] }>;
  close(): Promise<void>;
}

/** A webhook receiver on loopback: `answer` 200 (records the body), or `hang` (records, never answers). */
async function startReceiver(mode: 'answer' | 'hang'): Promise<Receiver> {
  const bodies: Receiver['bodies'] = [];
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      if (mode === 'hang') held.push(res);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/T000/B000/secret-part`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => {});
});

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 150_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const planTask = (key: string, reviewer = 'codex') => ({
  key,
  title: `task ${key}`,
  purpose: 'implement',
  worker: 'claude-code',
  reviewer,
  prompt: 'change something',
  acceptance: { commands: ['true'], criteria: [] },
});

/**
 * A Brain on a fresh repo running one goal: a refused plan, then an admitted plan of three tasks
 * (a: ready; b: its budget is reached and it is parked; c: its worker fails), approved.
 */
async function runSmallPlan(options: { webhookUrl?: string; sinks?: NotificationSink[] }) {
  const repo = createTestRepo();
  execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
  const ctx = await openRepoContext(repo.dir, gitTestEnv());
  const config = { ...ctx.config, notifications: { webhook_url: options.webhookUrl ?? null, desktop: false, timeout_ms: 2000, dashboard_url: null } };
  const deps = await createBrainDeps({ ...ctx, config }, gitTestEnv(), () => {});
  const ok =
    (note: string): TaskTool =>
    async () => ({ outcome: 'ok', note });
  const tools: Record<string, TaskTool> = {
    dispatch: async (tctx) => {
      if (tctx.task.id.endsWith('-c')) return { outcome: 'failure', permanent: true, note: 'dispatch: agent_exited: the worker crashed' };
      const wt = await tctx.worktrees.create({ id: tctx.task.id });
      const task = await tctx.store.update((d) =>
        Object.assign(d.tasks[tctx.task.id]!, { worktree: wt.path, branch: wt.branch, baseBranch: wt.baseBranch, baseCommit: wt.baseCommit }),
      );
      writeFileSync(join(wt.path, `${tctx.task.id}.txt`), 'work\n');
      if (tctx.task.id.endsWith('-b')) {
        // The real park step, as a turn that reached its budget ends.
        return parkForBudget({ ...tctx, task: structuredClone(task) }, { scope: 'task', goalId: null, budget: { tokens: 100 }, reach: { kind: 'tokens', limit: 100, spent: 140 } });
      }
      return { outcome: 'ok', note: 'worker finished' };
    },
    run_acceptance: ok('green'),
    push: ok('pushed'),
    open_draft_pr: async () => ({ outcome: 'ok', data: { reviewer: 'codex' }, note: 'opened' }),
    send_followup: ok('fixed'),
    dispatch_review: ok('clean'),
    // As the real mark_ready does once the forge marked the PR ready.
    mark_ready: async (tctx) => {
      await tctx.store.update((_d, tx) => tx.emit('task.pr_ready', { taskId: tctx.task.id, number: 7, url: 'local:7', orderId: tctx.order.id }));
      return { outcome: 'ok', note: 'ready' };
    },
  };
  const controller = new AbortController();
  const done = runBrainProcess({
    ...deps,
    tools,
    startGoalBrain: null,
    mergeWatchSeconds: 3600,
    signal: controller.signal,
    ...(options.sinks ? { notificationSinks: options.sinks } : {}),
  });
  let stopMs = -1;
  const stop = async () => {
    if (stopMs >= 0) return;
    const t = Date.now();
    controller.abort();
    await done.catch(() => {});
    stopMs = Date.now() - t;
  };
  cleanups.push(stop);
  const { goal } = await createGoal(ctx.store, 'three things', 'plan');
  const refused = await proposePlan(ctx.store, config, { tasks: [planTask('x', 'claude-code')] }, { goalId: goal.id });
  expect(refused.admitted).toBe(false);
  const plan = await proposePlan(ctx.store, config, { tasks: ['a', 'b', 'c'].map((k) => planTask(k)) }, { goalId: goal.id });
  expect(plan.admitted).toBe(true);
  await decidePlan(ctx.store, config, plan.planId, 'approve');
  const approvedAt = Date.now();
  await until('the goal to end', async () => ((await ctx.store.read()).goals[goal.id]?.status === 'failed' ? true : null));
  const goalDoneAfterMs = Date.now() - approvedAt;
  return { ctx, goal, plan, stop, stopMs: () => stopMs, goalDoneAfterMs, repository: basename(repo.dir) };
}

/** The notified kinds of this run, as the journal has them, in order. */
const EXPECTED = ['plan.refused', 'plan.proposed', 'task.pr_ready', 'task.parked', 'task.failed', 'goal.done'];

describe('notifications from a plan run', () => {
  it('a webhook receiver on loopback gets exactly one notification per event, Slack-shaped, without the secret URL', async () => {
    const receiver = await startReceiver('answer');
    cleanups.push(receiver.close);
    const run = await runSmallPlan({ webhookUrl: receiver.url });
    await run.stop();
    const journal = await run.ctx.store.journal();
    const all = journal.map((e) => notificationFor(e, null)).filter((n) => n !== null);
    expect(all.map((n) => n.kind).sort()).toEqual([...EXPECTED].sort());
    // The plan was approved at once: its "waits for approval" never went out (issue 32 item 8: never
    // about a decision already made); every other notified event is one POST.
    const notified = all.filter((n) => n.kind !== 'plan.proposed');
    expect(receiver.bodies).toHaveLength(notified.length);
    expect([...receiver.bodies].sort((a, b) => a.text.localeCompare(b.text))).toEqual(
      notified.map((n) => webhookPayload({ ...n, repository: run.repository })).sort((a, b) => a.text.localeCompare(b.text)),
    );
    const texts = receiver.bodies.map((b) => b.text).join('\n');
    expect(texts).not.toContain('waits for approval');
    // One notification per budget stop (the journal's budget.reached and task.parked are one stop),
    // with the command that continues the task.
    const budget = receiver.bodies.filter((b) => b.text.includes(`${run.plan.planId}-b`) && b.text.includes('budget'));
    expect(budget.map((b) => b.text)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^\\[${run.repository}\\] Budget reached: task ${run.plan.planId}-b: Task ${run.plan.planId}-b was parked: budget reached: the task budget \\(100 tokens\\): tokens 140 ≥ limit 100\\. .*polly retry ${run.plan.planId}-b --budget`,
        ),
      ),
    ]);
    expect(texts).toContain(`Goal ${run.goal.id} failed`);
    expect(texts).not.toContain('secret-part');
    // No dashboard URL is configured: no link.
    expect(receiver.bodies.every((b) => !b.text.includes('http'))).toBe(true);
    expect(journal.filter((e) => e.kind === 'notification.failed')).toEqual([]);
    // The parked task's run ended (held to its workflow: no divergence) and left it parked, with its reason.
    const b = (await run.ctx.store.read()).tasks[`${run.plan.planId}-b`]!;
    expect(b).toMatchObject({ status: 'parked', statusReason: expect.stringMatching(/^budget reached: /) });
    expect(b.finishedAt).toBeTruthy();
    expect(b.backupRefs).toHaveLength(1);
    expect(
      journal
        .filter((e) => e.kind === 'task.failed')
        .map((e) => e.data.status)
        .sort(),
    ).toEqual(['failed', 'parked']);
  }, 300_000);

  it('a webhook that hangs and one that is down neither hold up the run nor its stop; the failure is journaled once', async () => {
    const hanging = await startReceiver('hang');
    cleanups.push(hanging.close);
    const down = `http://127.0.0.1:${await closedPort()}/hook`;
    const sinks = [createWebhookSink({ url: hanging.url, timeoutMs: 120_000 }), createWebhookSink({ url: down, timeoutMs: 1000, backoffMs: 100 })];
    const run = await runSmallPlan({ sinks });
    // Had the Brain waited on the hanging webhook (120 s per attempt), the goal could not have ended
    // before its first notification timed out: the first POST is still unanswered.
    expect(run.goalDoneAfterMs).toBeLessThan(120_000);
    expect(hanging.bodies).toHaveLength(1);
    await run.stop();
    // The stop waits at most its drain time (3 s) for the queues, not for the webhook.
    expect(run.stopMs()).toBeLessThan(10_000);
    const failed = (await run.ctx.store.journal()).filter((e) => e.kind === 'notification.failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ sink: `webhook ${new URL(down).origin}`, kind: 'plan.refused' });
    expect(String(failed[0]!.data.reason)).toMatch(/after 3 attempt\(s\): fetch failed \(connect ECONNREFUSED/);
  }, 300_000);
});

describe('notification content', () => {
  it('links to the dashboard page when notifications.dashboard_url is configured', () => {
    expect(dashboardUrl({ notifications: { dashboard_url: null } })).toBeNull();
    const base = dashboardUrl(parseConfig('notifications:\n  dashboard_url: http://127.0.0.1:9000/\n', 'c.yaml'));
    const n = notificationFor(
      { seq: 5, at: '2026-12-01T00:00:00Z', kind: 'task.parked', data: { taskId: 'p1-a', reason: 'budget reached: token ghp_abcdefghijklmnopqrstuvwx1234 leaked' } },
      base,
    )!;
    expect(n.link).toBe('http://127.0.0.1:9000/tasks/p1-a');
    expect(n.text).not.toContain('ghp_');
    const body = webhookPayload(n);
    expect(body.text).toContain('http://127.0.0.1:9000/tasks/p1-a');
    expect(body.blocks[0]).toMatchObject({ type: 'section', text: { type: 'mrkdwn' } });
    expect(
      notificationFor({ seq: 6, at: '2026-12-01T00:00:00Z', kind: 'pr.feedback', data: { number: 3, taskId: 't', event: 'REQUEST_CHANGES', body: 'rename it' } }, null),
    ).toMatchObject({
      kind: 'pr.feedback',
      text: 'Changes requested on PR #3 of task t: rename it',
      link: null,
    });
    expect(notificationFor({ seq: 7, at: '2026-12-01T00:00:00Z', kind: 'task.turn_usage', data: {} }, null)).toBeNull();
  });

  it('a budget stop is one notification, titled for the budget; read-only work does not claim work was kept', () => {
    const data = { taskId: 'x1', goalId: null, scope: 'task', kind: 'tokens', limit: 1, spent: 460 };
    // The stop's two journal entries (one transaction): only the park, which says the way forward, notifies.
    expect(notificationFor({ seq: 1, at: '2026-12-01T00:00:00Z', kind: 'budget.reached', data: { ...data, orderId: 'adhoc:x1' } }, null)).toBeNull();
    const reason = budgetReason({ scope: 'task', goalId: null, budget: { tokens: 1 }, reach: { kind: 'tokens', limit: 1, spent: 460 } }, { readOnly: true });
    expect(notificationFor({ seq: 2, at: '2026-12-01T00:00:00Z', kind: 'task.parked', data: { taskId: 'x1', reason, backupRef: null, budget: true } }, null)).toMatchObject({
      title: 'Budget reached: task x1',
      text: expect.stringMatching(/^Task x1 was parked: budget reached: .*The worker was stopped; its report so far is on the task\./),
    });
    expect(notificationFor({ seq: 3, at: '2026-12-01T00:00:00Z', kind: 'task.parked', data: { taskId: 'x1', reason: 'fix rounds exhausted' } }, null)?.title).toBe(
      'Task x1 parked',
    );
  });

  it('the desktop notification names the repository', () => {
    const n = { ...notificationFor({ seq: 1, at: '2026-12-01T00:00:00Z', kind: 'goal.done', data: { goalId: 'g1', status: 'done' } }, null)!, repository: 'acme/widgets' };
    expect(desktopArgs({ kind: 'notify-send', path: '/usr/bin/notify-send' }, n)).toEqual(['--app-name=Polly', 'Polly: [acme/widgets] Goal g1 done', 'Goal g1 is done.']);
    expect(desktopArgs({ kind: 'osascript', path: '/usr/bin/osascript' }, n)[1]).toContain('subtitle "[acme/widgets] Goal g1 done"');
  });

  it('a PR event that needs attention notifies when it arrives; each fix round closes with one "handled" notification', () => {
    const at = '2026-12-01T00:00:00Z';
    // The events Polly answers with a fix round: feedback, failing checks, conflicts — one each.
    expect(
      notificationFor({ seq: 1, at, kind: 'pr.checks_failed', data: { forge: 'github', number: 4, taskId: 'p1-t1', checks: [{ name: 'ci / test' }, { name: 'lint' }] } }, null),
    ).toMatchObject({ kind: 'pr.checks_failed', title: 'Checks failed on PR #4', text: expect.stringMatching(/^ci \/ test, lint failed on PR #4 of task p1-t1; /) });
    expect(notificationFor({ seq: 2, at, kind: 'pr.conflicts', data: { forge: 'local', number: 4, taskId: 'p1-t1', base: 'main', files: ['src/stats.js'] } }, null)).toMatchObject({
      kind: 'pr.conflicts',
      title: 'PR #4 conflicts with main',
      text: expect.stringContaining('no longer merges into main (src/stats.js)'),
    });
    // Their resolution and the fix round's own steps are not notified: the round's end is.
    for (const kind of ['pr.conflicts_resolved', 'task.fix_round', 'task.pr_reply']) {
      expect(notificationFor({ seq: 3, at, kind, data: { number: 4, taskId: 'p1-t1' } }, null), kind).toBeNull();
    }
    // The PR ready the first time, and again at the end of fix round 1 (mark_ready's fixRound).
    expect(notificationFor({ seq: 4, at, kind: 'task.pr_ready', data: { taskId: 'p1-t1', number: 4, fixRound: null } }, null)).toMatchObject({ title: 'PR #4 ready' });
    expect(notificationFor({ seq: 5, at, kind: 'task.pr_ready', data: { taskId: 'p1-t1', number: 4, fixRound: 1 } }, null)).toMatchObject({
      kind: 'task.pr_ready',
      title: 'Feedback on PR #4 handled',
      text: expect.stringMatching(/^Fix round 1 of task p1-t1 is done: .* PR #4 is ready again/),
    });
  });
});

describe('PR notifications from strangers (issue 26 item 6)', () => {
  it('are escaped for Slack, coalesced per PR and reason, and name the repository, through the real webhook path', async () => {
    const receiver = await startReceiver('answer');
    cleanups.push(receiver.close);
    const store = createMemoryRegistryStore();
    const notifier = startNotifier({
      store,
      sinks: [createWebhookSink({ url: receiver.url, timeoutMs: 2000 })],
      baseUrl: null,
      cursorFile: null,
      log: () => {},
      repository: 'acme/widgets',
    });
    const evil = '<!channel> see <https://evil.example/x|the fix> & approve';
    await store.update((_d, tx) => {
      for (let i = 0; i < 20; i++)
        tx.emit('pr.untrusted_feedback', {
          forge: 'github',
          number: 7,
          taskId: 'p1-t1',
          author: 'mallory',
          association: 'NONE',
          permission: 'none',
          source: 'issue_comment',
          id: i,
          body: evil,
        });
      tx.emit('pr.feedback', { forge: 'github', number: 7, taskId: 'p1-t1', author: 'maint', event: 'REQUEST_CHANGES', body: 'rename <x> & y' });
      tx.emit('pr.feedback', { forge: 'github', number: 7, taskId: 'p1-t1', author: 'maint', event: 'REQUEST_CHANGES', body: 'also z' });
    });
    await until('the first notification', async () => receiver.bodies.length >= 1, 10_000);
    await notifier.stop();
    const texts = receiver.bodies.map((b) => b.text);
    // 20 stranger comments: one notification; two change requests: the first at once, one "1 more".
    expect(texts).toHaveLength(3);
    const untrusted = texts.filter((t) => t.includes('non-collaborators'));
    expect(untrusted).toEqual([expect.stringMatching(/^\[acme\/widgets\] 20 comments from non-collaborators on PR #7: /)]);
    expect(texts.filter((t) => t.includes('Changes requested'))).toEqual(['[acme/widgets] Feedback on PR #7: Changes requested on PR #7 of task p1-t1: rename &lt;x&gt; &amp; y']);
    expect(texts.filter((t) => t.includes('1 more'))).toHaveLength(1);
    // A single stranger comment is shown escaped: no mention, no link reaches Slack.
    const one = webhookPayload({
      ...notificationFor({ seq: 1, at: '2026-12-01T00:00:00Z', kind: 'pr.untrusted_feedback', data: { number: 7, taskId: 't', author: 'mallory', body: evil } }, null)!,
      repository: 'acme/widgets',
    });
    for (const s of [one.text, JSON.stringify(one.blocks)]) {
      expect(s).not.toContain('<!channel>');
      expect(s).not.toContain('<https://');
    }
    expect(one.text).toContain('&lt;!channel&gt; see &lt;https://evil.example/x|the fix&gt; &amp; approve');
  });
});

describe('never about a decision already made, never twice (issue 32 item 8)', () => {
  /** A sink that records what it is given. */
  const recording = () => {
    const sent: Notification[] = [];
    return {
      sent,
      sink: {
        name: 'recording',
        send: async (n: Notification) => {
          sent.push(n);
          return { ok: true as const };
        },
      },
    };
  };

  it('"plan waits for approval" is held and dropped when the plan was decided meanwhile; sent when it still waits', async () => {
    const store = createMemoryRegistryStore();
    const config = parseConfig('', 'c.yaml');
    const { sent, sink } = recording();
    const notifier = startNotifier({ store, sinks: [sink], baseUrl: null, cursorFile: null, log: () => {}, repository: 'acme/widgets', decisionGraceMs: 300 });
    const decided = await proposePlan(store, config, { tasks: [planTask('a')] });
    const waiting = await proposePlan(store, config, { tasks: [planTask('b')] });
    // As polly run --yes does, a moment after proposing (the notifier has seen the proposal by now).
    await until('the notifier to see both proposals', async () => (await store.journal()).filter((e) => e.kind === 'plan.proposed').length === 2, 5_000);
    await new Promise((r) => setTimeout(r, 100));
    await decidePlan(store, config, decided.planId, 'approve', { by: 'polly --yes' });
    await until('the waiting plan announced', async () => sent.length >= 1, 5_000);
    await new Promise((r) => setTimeout(r, 500));
    await notifier.stop();
    expect(sent.map((n) => n.title)).toEqual([`Plan ${waiting.planId} waits for approval`]);
    expect(sent[0]!.repository).toBe('acme/widgets');
  });

  it('the same notification twice within the window is sent once', async () => {
    const store = createMemoryRegistryStore();
    const { sent, sink } = recording();
    const notifier = startNotifier({ store, sinks: [sink], baseUrl: null, cursorFile: null, log: () => {}, repository: 'acme/widgets' });
    await store.update((_d, tx) => {
      tx.emit('task.failed', { taskId: 'p1-a', status: 'failed', reason: 'worker crashed' });
      tx.emit('task.failed', { taskId: 'p1-a', status: 'failed', reason: 'worker crashed' });
      tx.emit('task.failed', { taskId: 'p1-b', status: 'failed', reason: 'worker crashed' });
    });
    await until('two notifications', async () => sent.length >= 2, 5_000);
    await notifier.stop();
    expect(sent.map((n) => n.title)).toEqual(['Task p1-a failed', 'Task p1-b failed']);
  });
});
