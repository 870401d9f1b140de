/**
 * The live view of tasks and workers: state, current tool call, elapsed time, and for a task in a
 * long step (a setup, a check, an agent turn) its phase and last lines of output. In a terminal it
 * redraws in place (log-update); otherwise it prints a plain line whenever a task's line changes.
 * Used by `polly status --watch` and by `polly goal` / `polly run` in a terminal.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { createLogUpdate } from 'log-update';
import type { RegistryStore } from '../registry/registry-store.js';
import type { Registry, TaskRecord, WorkerRecord } from '../registry/registry-schema.js';
import { formatTable } from './table.js';
import { taskNow, type TaskNow } from '../registry/task-progress.js';
import { visibleLine } from '../core/visible-text.js';

export interface LiveRow {
  task: string;
  /** What the task does now (its phase, output; brain/registry/task-progress.ts), or null. */
  now: TaskNow | null;
  worker: string;
  reviewer: string | null;
  status: string;
  /** The current (last) tool call of the task's newest worker, e.g. `Bash npm test`. */
  current: string | null;
  /** Seconds since the task started (or its whole run when finished). */
  elapsed: number | null;
  pr: string | null;
}

/** The last tool call recorded in a worker's events.jsonl (reads only the file's tail). */
export function lastToolCall(stateDir: string | undefined): string | null {
  if (!stateDir) return null;
  const file = join(stateDir, 'events.jsonl');
  if (!existsSync(file)) return null;
  const size = statSync(file).size;
  const text = readFileSync(file, 'utf8').slice(Math.max(0, size - 16_384));
  const lines = text.trim().split('\n').reverse();
  for (const line of lines) {
    try {
      const e = JSON.parse(line) as { type?: string; tool?: string; input?: Record<string, unknown> };
      if (e.type === 'tool_call' && e.tool) {
        const arg = e.input?.command ?? e.input?.cmd ?? e.input?.file_path ?? e.input?.path ?? '';
        return `${e.tool} ${String(Array.isArray(arg) ? arg.join(' ') : arg)}`.trim();
      }
    } catch {
      // a partial last line: skip it
    }
  }
  return null;
}

/**
 * One row per task, newest plan first (pure except for reading workers' event tails and the
 * progress records under `pollyDir`, when given).
 */
export function liveRows(reg: Registry, now: Date, pollyDir?: string): LiveRow[] {
  const workersByTask = new Map<string, WorkerRecord>();
  for (const w of Object.values(reg.workers)) {
    const prev = workersByTask.get(w.taskId);
    if (!prev || prev.startedAt < w.startedAt) workersByTask.set(w.taskId, w);
  }
  return Object.values(reg.tasks).map((t: TaskRecord) => {
    const w = workersByTask.get(t.id) as (WorkerRecord & { stateDir?: string; state?: string }) | undefined;
    const end = t.finishedAt ? Date.parse(t.finishedAt) : now.getTime();
    return {
      task: t.id,
      now: pollyDir ? taskNow(pollyDir, reg, t.id, now.getTime(), 3) : null,
      worker: t.worker,
      reviewer: t.reviewer,
      status: t.status,
      current: w && w.state === 'running' ? lastToolCall(w.stateDir) : null,
      elapsed: t.startedAt ? Math.max(0, Math.round((end - Date.parse(t.startedAt)) / 1000)) : null,
      pr: t.pr ? `#${t.pr.number} ${t.pr.state}` : null,
    };
  });
}

/** A row's NOW cell: the phase of its long step and its command or current tool (else the last tool call). */
function nowCell(r: LiveRow): string | null {
  if (!r.now) return r.current;
  return `${r.now.phase} ${r.now.elapsedS}s: ${r.now.tool ?? r.now.detail}`;
}

/**
 * The rows as table lines; under a task in a long step (a setup, a check, an agent turn), its last
 * lines of output, indented (`│ …`), each cut to `width` characters when given.
 */
export function formatLive(rows: LiveRow[], width?: number): string[] {
  const table = formatTable(
    [
      { header: 'TASK', value: (r: LiveRow) => r.task },
      { header: 'WORKER', value: (r) => r.worker },
      { header: 'REVIEWER', value: (r) => r.reviewer },
      { header: 'STATE', value: (r) => r.status },
      { header: 'NOW', value: nowCell, max: 60 },
      { header: 'ELAPSED', value: (r) => (r.elapsed === null ? null : `${r.elapsed}s`) },
      { header: 'PR', value: (r) => r.pr },
    ],
    rows,
  );
  const cut = (line: string) => (width && line.length > width ? `${line.slice(0, Math.max(1, width - 1))}…` : line);
  const out = [cut(table[0]!)];
  rows.forEach((r, i) => {
    out.push(cut(table[i + 1]!));
    for (const l of r.now?.lines ?? []) out.push(cut(`    │ ${visibleLine(l)}`));
  });
  return out;
}

export interface LiveViewOptions {
  store: RegistryStore;
  /** The repository's `.polly/`: the progress of long steps is read from it (brain/registry/task-progress.ts). */
  pollyDir?: string;
  stream: Writable & { isTTY?: boolean; columns?: number };
  /** Stop when this resolves true (checked after every refresh). */
  until?: (reg: Registry) => boolean;
  signal?: AbortSignal;
  /** Refresh interval in ms (default 1000). */
  intervalMs?: number;
}

/** Run the live view until `until` holds or `signal` aborts. */
export async function runLiveView(options: LiveViewOptions): Promise<void> {
  const tty = Boolean(options.stream.isTTY);
  const update = tty ? createLogUpdate(options.stream as NodeJS.WriteStream) : null;
  const printed = new Map<string, string>();
  let cursor = (await options.store.journal()).at(-1)?.seq ?? 0;
  if (!tty) {
    const reg = await options.store.read();
    options.stream.write(`polly: watching ${Object.keys(reg.tasks).length} task(s); a line per change (Ctrl-C to stop)\n`);
  }
  for (;;) {
    const reg = await options.store.read();
    const rows = liveRows(reg, new Date(), options.pollyDir);
    if (update) {
      update(
        [
          `polly — ${rows.filter((r) => !['ready', 'done', 'merged', 'failed', 'cancelled'].includes(r.status)).length} task(s) active   (Ctrl-C to stop watching)`,
          ...formatLive(rows, options.stream.columns),
        ].join('\n'),
      );
    } else {
      for (const r of rows) {
        // A long step's phase and its last line of output: a new line whenever its output moves.
        const step = r.now ? ` · ${r.now.phase}: ${r.now.tool ?? r.now.detail}${r.now.lines.length ? ` · ${visibleLine(r.now.lines.at(-1)!)}` : ''}` : '';
        const line = `${r.task} ${r.worker} ${r.status}${step || (r.current ? ` · ${r.current}` : '')}${r.pr ? ` · PR ${r.pr}` : ''}`;
        if (printed.get(r.task) !== line) {
          printed.set(r.task, line);
          options.stream.write(`${line}${r.elapsed !== null ? ` (${r.elapsed}s)` : ''}\n`);
        }
      }
    }
    if (options.signal?.aborted || options.until?.(reg)) break;
    const entries = await options.store.waitForJournal(cursor, options.intervalMs ?? 1000, options.signal);
    if (entries.length) cursor = entries[entries.length - 1]!.seq;
  }
  update?.done();
}
