/**
 * A Brain that dies with work pending is announced once per death, by whoever notices it first
 * (brain/notify/brain-death.ts): the registry row is stamped and `brain.died` journaled under the
 * lock, the notification goes to the sinks, and a second noticer (or a later Brain's notifier, which
 * follows the journal) sends nothing. A live Brain, or a dead one with nothing waiting, is not news.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { noticeBrainDeath } from '../../../brain/notify/brain-death.js';
import { notificationFor, type Notification } from '../../../brain/notify/notification.js';
import { startNotifier } from '../../../brain/notify/notifier.js';
import { parseConfig } from '../../../brain/config/config.js';
import { proposePlan } from '../../../brain/plan/plan-gate.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

const task = { key: 'a', title: 'task a', purpose: 'implement', worker: 'claude-code', reviewer: 'codex', prompt: 'p', acceptance: { commands: ['true'], criteria: [] } };

function recording() {
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
}

describe('the Brain died with work pending (issue 32 item 1)', () => {
  it('is announced once, naming the repository and the command that resumes; a later noticer or Brain sends nothing', async () => {
    const config = parseConfig('notifications:\n  dashboard_url: http://127.0.0.1:8080\n', 'c.yaml');
    const store = createMemoryRegistryStore();
    await proposePlan(store, config, { tasks: [task] });
    const pid = await deadPid();
    await store.update((d) => {
      d.brain = { pid, startedAt: '2026-12-01T00:00:00.000Z', heartbeatAt: '2026-12-01T00:05:00.000Z' };
    });
    const { sent, sink } = recording();
    const deps = { store, config, pollyDir: '/repos/widgets/.polly', sinks: [sink] };
    const first = await noticeBrainDeath({ ...deps, noticedBy: 'polly ui' });
    expect(first.notification).toMatchObject({
      kind: 'brain.died',
      repository: 'widgets',
      title: 'The Brain stopped with work pending',
      text: `The Brain (pid ${pid}, last heartbeat 2026-12-01T00:05:00.000Z) is gone and 1 plan at the gate waits: nothing runs until polly resume starts one.`,
      link: 'http://127.0.0.1:8080/',
    });
    // Two more noticers: nothing more is sent or journaled.
    expect((await noticeBrainDeath({ ...deps, noticedBy: 'polly status' })).notification).toBeNull();
    expect((await noticeBrainDeath({ ...deps, noticedBy: 'polly ui' })).notification).toBeNull();
    expect(sent).toHaveLength(1);
    const died = (await store.journal()).filter((e) => e.kind === 'brain.died');
    expect(died).toHaveLength(1);
    expect(died[0]!.data).toMatchObject({ pid, noticedBy: 'polly ui', waiting: { tasks: 0, plans: 1 } });
    expect((await store.read()).brain?.deathNoticedAt).toBeTruthy();
    // A Brain started later follows the journal from its predecessor's cursor: brain.died is not its to send.
    expect(notificationFor(died[0]!, null)).toBeNull();
    const later = recording();
    const notifier = startNotifier({ store, sinks: [later.sink], baseUrl: null, cursorFile: null, log: () => {}, decisionGraceMs: 0 });
    await new Promise((r) => setTimeout(r, 300));
    await notifier.stop();
    expect(later.sent.map((n) => n.kind)).not.toContain('brain.died');
  });

  it('is not news while the Brain lives, nor when nothing waits', async () => {
    const config = parseConfig('', 'c.yaml');
    const { sent, sink } = recording();
    // Alive (this process), with a plan at the gate.
    const alive = createMemoryRegistryStore();
    await proposePlan(alive, config, { tasks: [task] });
    await alive.update((d) => {
      d.brain = { pid: process.pid, startedAt: '2026-12-01T00:00:00.000Z', heartbeatAt: '2026-12-01T00:00:00.000Z' };
    });
    expect((await noticeBrainDeath({ store: alive, config, pollyDir: '/r/.polly', sinks: [sink], noticedBy: 'polly ui' })).notification).toBeNull();
    // Dead, with nothing waiting.
    const idle = createMemoryRegistryStore();
    const pid = await deadPid();
    await idle.update((d) => {
      d.brain = { pid, startedAt: '2026-12-01T00:00:00.000Z', heartbeatAt: '2026-12-01T00:00:00.000Z' };
    });
    expect((await noticeBrainDeath({ store: idle, config, pollyDir: '/r/.polly', sinks: [sink], noticedBy: 'polly ui' })).notification).toBeNull();
    expect(sent).toEqual([]);
    expect((await idle.journal()).filter((e) => e.kind === 'brain.died')).toEqual([]);
  });
});
