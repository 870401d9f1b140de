/**
 * A Brain that dies (SIGKILL, a crash, the machine's OOM killer) with work pending cannot say so:
 * the notifier lives inside it (./notifier.ts). Something outside it notices instead — `polly ui`'s
 * server while it runs (every poll of its live pages) and `polly status` — and tells the human once
 * per death:
 * - the registry's Brain row is found with its pid gone and work waiting (approved plans' unfinished
 *   tasks, plans at the gate: brain/registry/brain-health.ts);
 * - under the registry lock, the row is stamped `deathNoticedAt` and `brain.died` is journaled; a
 *   row already stamped is left alone, so two noticers (the dashboard and a `polly status`, or
 *   two dashboards) announce it once between them;
 * - the noticer sends the notification to the configured sinks (webhook, desktop) itself. It is not
 *   one of the journal kinds the notifier follows (./notification.ts), so the next Brain, which
 *   reads the journal from its predecessor's cursor, does not send it again.
 * A Brain that stopped by itself clears its row (brain/process/brain-process.ts): no death.
 */
import { basename, dirname, resolve } from 'node:path';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import type { PollyConfig } from '../config/config-schema.js';
import { brainHealth } from '../registry/brain-health.js';
import type { JournalEntry } from '../registry/registry-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { dashboardUrl, type Notification } from './notification.js';
import { sinksFromConfig } from './notifier.js';
import type { NotificationSink } from './webhook.js';

/** What `brain.died` records: the dead Brain's row, the work it left and who noticed. */
export interface BrainDeath {
  pid: number;
  startedAt: string;
  heartbeatAt: string;
  /** Approved plans' unfinished tasks and plans at the gate when the death was noticed. */
  waiting: { tasks: number; plans: number };
  /** Which process noticed it (e.g. `polly ui`, `polly status`). */
  noticedBy: string;
}

/**
 * The notification for a `brain.died` entry (pure): the repository's work stopped and the command
 * that resumes it. Links to the dashboard's overview when `baseUrl` is set.
 */
export function brainDeathNotification(entry: Pick<JournalEntry, 'seq' | 'data'>, baseUrl: string | null, repository?: string): Notification {
  const d = entry.data as unknown as BrainDeath;
  const work = [
    d.waiting.tasks > 0 ? `${d.waiting.tasks} unfinished task${d.waiting.tasks === 1 ? '' : 's'}` : '',
    d.waiting.plans > 0 ? `${d.waiting.plans} plan${d.waiting.plans === 1 ? '' : 's'} at the gate` : '',
  ]
    .filter(Boolean)
    .join(' and ');
  return {
    ...(repository ? { repository } : {}),
    kind: 'brain.died',
    seq: entry.seq,
    title: 'The Brain stopped with work pending',
    text: `The Brain (pid ${d.pid}, last heartbeat ${d.heartbeatAt}) is gone and ${work} wait${d.waiting.tasks + d.waiting.plans === 1 ? 's' : ''}: nothing runs until polly resume starts one.`,
    link: baseUrl ? `${baseUrl}/` : null,
  };
}

/**
 * Notice a dead Brain (see the module doc): journal `brain.died` once per death and send its
 * notification to `sinks` (default: the config's). Cheap when the Brain lives or nothing waits
 * (one registry read, no lock).
 * @param deps.noticedBy  who noticed, recorded in the journal (`polly ui`, `polly status`).
 * @param deps.repository the repository the notification names (default the directory holding `pollyDir`).
 * @returns the notification sent (null when there was nothing to announce or another process did)
 *   and the sinks' failures, one line each (logged by the caller; never thrown).
 * @throws PollyError from the store (`registry_corrupt`, `lock_timeout`).
 */
export async function noticeBrainDeath(deps: {
  store: Pick<RegistryStore, 'read' | 'update'>;
  config: Pick<PollyConfig, 'notifications'>;
  pollyDir: string;
  noticedBy: string;
  sinks?: readonly NotificationSink[];
  repository?: string;
  now?: () => Date;
}): Promise<{ notification: Notification | null; failures: string[] }> {
  const pending = (reg: Parameters<typeof brainHealth>[0]) => {
    const h = brainHealth(reg);
    return h.state === 'gone' && !reg.brain?.deathNoticedAt && h.waiting.tasks + h.waiting.plans > 0 ? h : null;
  };
  if (!pending(await deps.store.read())) return { notification: null, failures: [] };
  const entry = await deps.store.update((draft, tx) => {
    const row = draft.brain;
    const h = pending(draft);
    if (!row || !h || pidAlive(row.pid)) return null;
    row.deathNoticedAt = (deps.now?.() ?? new Date()).toISOString();
    const data: BrainDeath = { pid: row.pid, startedAt: row.startedAt, heartbeatAt: row.heartbeatAt, waiting: h.waiting, noticedBy: deps.noticedBy };
    tx.emit('brain.died', data as unknown as Record<string, unknown>);
    // The seq the entry gets at commit (the store numbers after the counter), for the notification's log lines.
    return { seq: draft.counters.journalSeq + 1, data };
  });
  if (!entry) return { notification: null, failures: [] };
  const n = brainDeathNotification(
    { seq: entry.seq, data: entry.data as unknown as Record<string, unknown> },
    dashboardUrl(deps.config),
    deps.repository ?? basename(dirname(resolve(deps.pollyDir))),
  );
  const sinks = deps.sinks ?? sinksFromConfig(deps.config);
  const failures = (await Promise.all(sinks.map((s) => s.send(n)))).flatMap((r) => (r.ok ? [] : [r.reason]));
  return { notification: n, failures };
}
