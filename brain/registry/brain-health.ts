/**
 * The Brain's health in one line, for `polly status`'s first line and the top of every dashboard
 * page: running (pid, since when, its last heartbeat), or not running — with what that means for
 * the work waiting and the command that resumes it. Pure over the registry, except that the pid's
 * liveness is read (a Brain row whose process is gone, e.g. after SIGKILL, is not a running Brain).
 */
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import type { Registry } from './registry-schema.js';
import { planTaskId } from './task-record.js';

/** The Brain's state and its line. `waiting`: approved plans' unfinished tasks and plans at the gate, which no Brain moves. */
export interface BrainHealth {
  state: 'running' | 'gone' | 'none';
  pid: number | null;
  /** ISO times from the Brain row: when it started, its last heartbeat (null without a row). */
  since: string | null;
  heartbeatAt: string | null;
  /** How many tasks of approved plans are not final (or not created yet), and how many plans wait at the gate. */
  waiting: { tasks: number; plans: number };
  line: string;
}

/** Seconds from `iso` to `now`, as `12 s ago` / `3 min ago`. */
function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  return s < 120 ? `${s} s ago` : s < 7200 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}

/**
 * The Brain's health (see the module doc).
 * @param now  ms since the epoch (default `Date.now()`), for "… ago".
 */
export function brainHealth(reg: Pick<Registry, 'brain' | 'plans' | 'tasks'>, now: number = Date.now()): BrainHealth {
  const row = reg.brain;
  const alive = row !== null && pidAlive(row.pid);
  // The tasks of approved plans not final yet, or not yet created (the Brain creates them).
  let tasks = 0;
  for (const p of Object.values(reg.plans)) {
    if (p.gate !== 'approved') continue;
    for (const spec of p.tasks) {
      const t = reg.tasks[planTaskId(p, spec.key)];
      if (!t ? !p.retries?.[spec.key] : t.planId === p.id && !FINAL_TASK_STATUSES.has(t.status)) tasks += 1;
    }
  }
  const plans = Object.values(reg.plans).filter((p) => p.gate === 'pending').length;
  const base = { pid: row?.pid ?? null, since: row?.startedAt ?? null, heartbeatAt: row?.heartbeatAt ?? null, waiting: { tasks, plans } };
  if (alive) return { ...base, state: 'running', line: `Brain running (pid ${row.pid}, since ${row.startedAt}, last heartbeat ${ago(row.heartbeatAt, now)})` };
  const work = [tasks > 0 ? `${tasks} unfinished task${tasks === 1 ? '' : 's'}` : '', plans > 0 ? `${plans} plan${plans === 1 ? '' : 's'} at the gate` : '']
    .filter(Boolean)
    .join(' and ');
  const then = work ? `: nothing runs until polly resume (${work} wait${tasks + plans === 1 ? 's' : ''})` : '';
  if (row) return { ...base, state: 'gone', line: `Brain not running (pid ${row.pid} is gone, last heartbeat ${row.heartbeatAt})${then || '; polly resume continues its work'}` };
  return { ...base, state: 'none', line: `Brain not running${then}` };
}
