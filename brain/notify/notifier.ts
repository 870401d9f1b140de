/**
 * The notifier: follows the journal and hands each notified event (brain/notify/notification.ts)
 * to every sink (the webhook, the desktop), without ever blocking the Brain's loop.
 *
 * - It runs beside the Brain loop (its own `waitForJournal`), and each sink has its own queue:
 *   a slow or dead webhook delays only its own later notifications. A queue holds at most
 *   {@link MAX_QUEUED} notifications; beyond that the oldest are dropped (logged).
 * - At most once per event: the journal seq up to which it has handed events to the sinks is kept in
 *   `.polly/notify-cursor` and read back by the next Brain. Without that file (a first Brain) it
 *   starts with the events of the last {@link FRESH_MS} ms, so a plan proposed by `polly run` just
 *   before the Brain started is still announced, and old history is not.
 * - A failed delivery (after the sink's own retries) is logged (stderr) each time, and journaled
 *   as `notification.failed` once per sink until that sink delivers again (no flood while a
 *   webhook is down).
 * - `stop()` reads the journal one last time (the `goal.done` the loop just wrote), then waits at
 *   most `drainMs` for the queues.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { PollyConfig } from '../config/config-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { JournalEntry } from '../registry/registry-schema.js';
import { createDesktopSink, detectDesktopNotifier } from './desktop.js';
import { dashboardUrl, notificationFor, type Notification } from './notification.js';
import { createWebhookSink, type NotificationSink } from './webhook.js';

/** Events younger than this are announced by a first notifier (no cursor file yet), ms. */
export const FRESH_MS = 10 * 60 * 1000;
/** Notifications waiting per sink before the oldest are dropped. */
export const MAX_QUEUED = 100;

/** The sinks the config asks for: the webhook when `notifications.webhook_url` is set; the desktop when `notifications.desktop` and a notifier exists. */
export function sinksFromConfig(config: Pick<PollyConfig, 'notifications'>, env: NodeJS.ProcessEnv = process.env): NotificationSink[] {
  const sinks: NotificationSink[] = [];
  const n = config.notifications;
  if (n.webhook_url) sinks.push(createWebhookSink({ url: n.webhook_url, timeoutMs: n.timeout_ms }));
  const desktop = n.desktop ? detectDesktopNotifier(process.platform, env.PATH) : null;
  if (desktop) sinks.push(createDesktopSink(desktop));
  return sinks;
}

export interface NotifierDeps {
  store: RegistryStore;
  sinks: readonly NotificationSink[];
  /** The dashboard's base URL for links (config `notifications.dashboard_url`), or null. */
  baseUrl: string | null;
  /** Where the cursor is kept (`.polly/notify-cursor`); null keeps it in memory only. */
  cursorFile: string | null;
  /** Diagnostics (stderr). */
  log: (line: string) => void;
  now?: () => Date;
}

export interface Notifier {
  /** Read the journal a last time, wait up to `drainMs` (default 3000) for the queues, stop. */
  stop(drainMs?: number): Promise<void>;
}

function readCursor(file: string | null): number | null {
  if (!file || !existsSync(file)) return null;
  const n = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(n) && n >= 0 ? n : null;
}

function writeCursor(file: string | null, seq: number): void {
  if (!file) return;
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${seq}\n`);
  renameSync(tmp, file);
}

/** Start following the journal (see the module doc). With no sinks it does nothing and costs nothing. */
export function startNotifier(deps: NotifierDeps): Notifier {
  if (deps.sinks.length === 0) return { stop: async () => {} };
  const now = deps.now ?? (() => new Date());
  const stopper = new AbortController();
  const failing = new Set<string>();
  const queues = deps.sinks.map((sink) => ({ sink, pending: [] as Notification[], running: null as Promise<void> | null }));

  const journalFailure = (sink: NotificationSink, n: Notification, reason: string): Promise<void> =>
    deps.store
      .update((_d, tx) => tx.emit('notification.failed', { sink: sink.name, kind: n.kind, seq: n.seq, reason }))
      .then(
        () => {},
        () => {},
      );

  const pump = (q: (typeof queues)[number]): void => {
    if (q.running) return;
    q.running = (async () => {
      for (let n = q.pending.shift(); n; n = q.pending.shift()) {
        const r = await q.sink.send(n);
        if (r.ok) failing.delete(q.sink.name);
        else {
          deps.log(`[polly] notification: ${r.reason}`);
          if (!failing.has(q.sink.name)) {
            failing.add(q.sink.name);
            await journalFailure(q.sink, n, r.reason);
          }
        }
      }
    })().finally(() => {
      q.running = null;
      if (q.pending.length > 0) pump(q);
    });
  };

  const hand = (entries: readonly JournalEntry[]): void => {
    for (const e of entries) {
      const n = notificationFor(e, deps.baseUrl);
      if (!n) continue;
      for (const q of queues) {
        q.pending.push(n);
        if (q.pending.length > MAX_QUEUED) {
          const dropped = q.pending.shift()!;
          deps.log(`[polly] notification: ${q.sink.name} is behind; dropped ${dropped.kind} (journal seq ${dropped.seq})`);
        }
        pump(q);
      }
    }
  };

  let cursor = readCursor(deps.cursorFile);
  const advance = (entries: readonly JournalEntry[]): void => {
    if (entries.length === 0) return;
    hand(entries);
    cursor = entries[entries.length - 1]!.seq;
    try {
      writeCursor(deps.cursorFile, cursor);
    } catch (error) {
      deps.log(`[polly] notification: cannot write ${deps.cursorFile}: ${(error as Error).message}`);
    }
  };

  const loop = (async () => {
    if (cursor === null) {
      const since = now().getTime() - FRESH_MS;
      const all = await deps.store.journal(0);
      const old = all.filter((e) => Date.parse(e.at) < since);
      cursor = old.at(-1)?.seq ?? 0;
      advance(all.filter((e) => e.seq > cursor!));
    }
    while (!stopper.signal.aborted) {
      const entries = await deps.store.waitForJournal(cursor, 5000, stopper.signal);
      advance(entries);
    }
  })().catch((error: unknown) => deps.log(`[polly] notification: the notifier stopped: ${(error as Error).message}`));

  return {
    async stop(drainMs = 3000) {
      stopper.abort();
      await loop;
      try {
        advance(await deps.store.journal(cursor ?? 0));
      } catch {
        /* the registry is gone or locked: nothing more to announce */
      }
      const drained = Promise.all(
        queues.map(async (q) => {
          while (q.running) await q.running;
        }),
      );
      await Promise.race([drained, new Promise((r) => setTimeout(r, drainMs).unref())]);
    },
  };
}

/** The notifier of a repository's Brain from its config (cursor in `<pollyDir>/notify-cursor`). */
export function startConfiguredNotifier(deps: {
  store: RegistryStore;
  config: PollyConfig;
  pollyDir: string;
  log: (line: string) => void;
  sinks?: readonly NotificationSink[];
}): Notifier {
  return startNotifier({
    store: deps.store,
    sinks: deps.sinks ?? sinksFromConfig(deps.config),
    baseUrl: dashboardUrl(deps.config),
    cursorFile: `${deps.pollyDir}/notify-cursor`,
    log: deps.log,
  });
}
