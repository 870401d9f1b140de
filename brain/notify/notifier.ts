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
 * - Coalesced per repository, PR and reason ({@link COALESCED_KINDS}) within `coalesceMs` (default
 *   {@link COALESCE_MS}): a PR event that needs attention is announced at once and the ones of the
 *   same kind on the same PR in the next window make one "N more" notification at its end; a
 *   non-collaborator's comments (`pr.untrusted_feedback`) wait for the window's end and make one
 *   "N comments from non-collaborators on PR #N", so 20 comments are one notification, not 20.
 * - Never about a decision already made: "plan waits for approval" (`plan.proposed`) is held
 *   `decisionGraceMs` (default {@link DECISION_GRACE_MS}) and sent only if the plan still waits
 *   at the gate then (`polly run --yes` approves it a moment after proposing it).
 * - Deduplicated: a notification identical to one sent in the last `coalesceMs` (same
 *   repository, title and text) is not sent again.
 * - Every notification names its repository (`repository`, the directory's name by default).
 * - `stop()` reads the journal one last time (the `goal.done` the loop just wrote), then waits at
 *   most `drainMs` for the queues.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { PollyConfig } from '../config/config-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { JournalEntry } from '../registry/registry-schema.js';
import { createDesktopSink, detectDesktopNotifier } from './desktop.js';
import { dashboardUrl, notificationFor, type Notification } from './notification.js';
import { createWebhookSink, type NotificationSink } from './webhook.js';

/** Events younger than this are announced by a first notifier (no cursor file yet), ms. */
export const FRESH_MS = 10 * 60 * 1000;
/** The window within which PR notifications of one kind on one PR are coalesced, ms (5 min). */
export const COALESCE_MS = 5 * 60 * 1000;
/** The kinds coalesced per PR (see the module doc); `pr.untrusted_feedback` waits for its window's end. */
export const COALESCED_KINDS: ReadonlySet<string> = new Set(['pr.feedback', 'pr.checks_failed', 'pr.untrusted_feedback']);
const TRAILING_ONLY = 'pr.untrusted_feedback';

/** How long "plan waits for approval" is held before it is sent, if the plan still waits, ms. */
export const DECISION_GRACE_MS = 3000;

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
  /** The repository every notification names (`owner/repo`, or the directory's name). */
  repository?: string;
  /** The coalescing window, ms (default {@link COALESCE_MS}); also the window of the duplicate check. */
  coalesceMs?: number;
  /** How long `plan.proposed` is held before the gate is looked at again, ms (default {@link DECISION_GRACE_MS}). */
  decisionGraceMs?: number;
}

/** The one notification for `count` coalesced ones of a kind on a PR (`first` the first of them). Pure. */
export function coalescedNotification(first: Notification, count: number, number: string, leading: boolean): Notification {
  if (first.kind === TRAILING_ONLY) {
    if (count === 1) return first;
    return {
      ...first,
      title: `${count} comments from non-collaborators on PR #${number}`,
      text: `${count} reviews or comments on PR #${number} came from accounts without write access to the repository; not acted on, not shown to the worker (polly pr list shows them).`,
    };
  }
  const what = first.kind === 'pr.checks_failed' ? 'failing check reports' : 'reviews or comments';
  return {
    ...first,
    title: `${count} more ${what} on PR #${number}`,
    text: `${count} more ${what} arrived on PR #${number}${leading ? ' since the last notification' : ''}; Polly answers them in its fix rounds.`,
  };
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

  const coalesceMs = deps.coalesceMs ?? COALESCE_MS;
  // Open windows by `kind|number`: how many arrived after the first (or all, for the trailing kind).
  const windows = new Map<string, { first: Notification; number: string; count: number; timer: NodeJS.Timeout }>();
  const flush = (key: string): void => {
    const w = windows.get(key);
    if (!w) return;
    clearTimeout(w.timer);
    windows.delete(key);
    const trailing = w.first.kind === TRAILING_ONLY;
    if (w.count > 0) enqueue(coalescedNotification(w.first, w.count, w.number, !trailing));
  };
  // "Plan waits for approval", held until the gate is looked at again (see the module doc).
  const graceMs = deps.decisionGraceMs ?? DECISION_GRACE_MS;
  const held = new Map<Notification, { planId: string; timer: NodeJS.Timeout }>();
  const releasing = new Set<Promise<void>>();
  const release = (n: Notification): Promise<void> => {
    const h = held.get(n);
    if (!h) return Promise.resolve();
    clearTimeout(h.timer);
    held.delete(n);
    const p = (async () => {
      let gate: string | undefined;
      try {
        gate = (await deps.store.read()).plans[h.planId]?.gate;
      } catch (error) {
        deps.log(`[polly] notification: cannot read the registry for plan ${h.planId}: ${(error as Error).message}; announcing it`);
        gate = 'pending';
      }
      if (gate === 'pending') enqueue(n);
      else deps.log(`[polly] notification: plan ${h.planId} was ${gate ?? 'removed'} before its "waits for approval" went out; not sent`);
    })().finally(() => releasing.delete(p));
    releasing.add(p);
    return p;
  };
  const hold = (n: Notification, planId: string): void => {
    const timer = setTimeout(() => void release(n), graceMs);
    timer.unref();
    held.set(n, { planId, timer });
  };
  const hand = (entries: readonly JournalEntry[]): void => {
    for (const e of entries) {
      const made = notificationFor(e, deps.baseUrl);
      if (!made) continue;
      const n: Notification = deps.repository ? { ...made, repository: deps.repository } : made;
      if (n.kind === 'plan.proposed') {
        hold(n, String(e.data.planId ?? ''));
        continue;
      }
      if (COALESCED_KINDS.has(n.kind)) {
        const number = String(e.data.number ?? '?');
        const key = `${n.kind}|${number}`;
        const open = windows.get(key);
        if (open) {
          open.count += 1;
          continue;
        }
        const trailing = n.kind === TRAILING_ONLY;
        const timer = setTimeout(() => flush(key), coalesceMs);
        timer.unref();
        windows.set(key, { first: n, number, count: trailing ? 1 : 0, timer });
        if (trailing) continue;
      }
      enqueue(n);
    }
  };
  // Sent recently, by repository, title and text: the same notification twice is sent once.
  const recent = new Map<string, number>();
  function enqueue(n: Notification): void {
    const key = `${n.repository ?? ''}\u0000${n.title}\u0000${n.text}`;
    const at = now().getTime();
    for (const [k, t] of recent) if (at - t >= coalesceMs) recent.delete(k);
    if (recent.has(key)) {
      deps.log(`[polly] notification: ${n.kind} (journal seq ${n.seq}) repeats one sent ${Math.round((at - recent.get(key)!) / 1000)} s ago; not sent again`);
      return;
    }
    recent.set(key, at);
    for (const q of queues) {
      q.pending.push(n);
      if (q.pending.length > MAX_QUEUED) {
        const dropped = q.pending.shift()!;
        deps.log(`[polly] notification: ${q.sink.name} is behind; dropped ${dropped.kind} (journal seq ${dropped.seq})`);
      }
      pump(q);
    }
  }

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
      // Open coalescing windows end with the notifier: what they hold is announced now, and a held
      // "waits for approval" goes if its plan still waits.
      for (const key of [...windows.keys()]) flush(key);
      await Promise.all([...held.keys()].map((n) => release(n)));
      await Promise.all([...releasing]);
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
  /** The repository notifications name (default the name of the directory holding `pollyDir`). */
  repository?: string;
}): Notifier {
  return startNotifier({
    store: deps.store,
    sinks: deps.sinks ?? sinksFromConfig(deps.config),
    baseUrl: dashboardUrl(deps.config),
    cursorFile: `${deps.pollyDir}/notify-cursor`,
    log: deps.log,
    repository: deps.repository ?? basename(dirname(resolve(deps.pollyDir))),
  });
}
