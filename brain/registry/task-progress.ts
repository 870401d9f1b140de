/**
 * What a task is doing now, for the dashboard and `polly status --watch`: the phase of a long step
 * (the worktree's setup, the base check, the acceptance checks, an agent turn), since when, the
 * current tool call, and the last lines of its output.
 *
 * - A check or a setup has a progress record, `.polly/progress/<task>.json`
 *   `{taskId, phase, command, startedAt, log}`, written by the Brain when the step starts (atomically:
 *   temp file + rename) and removed when it ends; the step's output is appended to `log` as it comes
 *   (the setup's `.polly/logs/worktree-setup-<task>.log`, the checks' `.polly/logs/checks-<task>.log`).
 * - An agent turn needs none: the task's newest live worker is the turn (its purpose, its start), and
 *   its normalised `events.jsonl` has the tool calls and the text (workers/supervisor/).
 * Readers ({@link taskNow}) show a record only while the Brain that wrote it lives and the task is
 * not final: a killed Brain leaves its record behind, and the health line says that Brain is gone.
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { cappedLog, LOG_MAX_BYTES } from '../../workers/proc/capped-log.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import type { Registry, WorkerRecord } from './registry-schema.js';

/** A long step of a task that has a progress record (an agent turn has none: see the module doc). */
export type ProgressPhase = 'setup' | 'base check' | 'checks';

/** One progress record (`.polly/progress/<task>.json`). */
export interface ProgressRecord {
  taskId: string;
  phase: ProgressPhase;
  /** The command running now (`worktrees.setup`, or the acceptance command). */
  command: string;
  /** ISO time the phase started. */
  startedAt: string;
  /** The file its output is appended to as it comes, or null. */
  log: string | null;
}

/** What a task does now (see {@link taskNow}). */
export interface TaskNow {
  /** `setup`, `base check`, `checks`, or `<purpose> turn` (e.g. `implement turn`, `review turn`). */
  phase: string;
  /** The command (a setup, a check) or the worker (`pi`, and its id) of a turn. */
  detail: string;
  /** ISO time the phase started, and the seconds since then at `now`. */
  since: string;
  elapsedS: number;
  /** A turn's current (last) tool call, e.g. `bash npm test`; null for a setup or a check. */
  tool: string | null;
  /** The last lines of its output (a turn: its last events, one line each), oldest first. */
  lines: string[];
}

/** The directory of the progress records: `<pollyDir>/progress`. */
export function progressDir(pollyDir: string): string {
  return join(pollyDir, 'progress');
}

function recordFile(pollyDir: string, taskId: string): string {
  return join(progressDir(pollyDir), `${taskId}.json`);
}

/**
 * Record that task `record.taskId` entered a long step (replacing its previous record), or with
 * `null`, that its step ended (the record is removed). Errors writing are swallowed: progress is
 * a view, never a reason for a task to fail.
 */
export function writeProgress(pollyDir: string, taskId: string, record: ProgressRecord | null): void {
  try {
    const file = recordFile(pollyDir, taskId);
    if (record === null) {
      rmSync(file, { force: true });
      return;
    }
    mkdirSync(progressDir(pollyDir), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(record)}\n`);
    renameSync(tmp, file);
  } catch {
    // a full disk or a removed .polly/: the step goes on without its view
  }
}

/** How a step of commands tells its progress: each command as it starts, each output chunk, its end. */
export interface StepProgress {
  command(command: string): void;
  output(chunk: Buffer): void;
  end(): void;
}

/**
 * Follow a step of commands (the base check, the acceptance checks) of task `taskId`: its output goes
 * to `<pollyDir>/logs/<name>-<task>.log` (emptied at the start; each command under a `$ command`
 * line, then the first `maxBytes` of its output and, past that, one line saying how much was left out) and its
 * record names the command running. Never throws (see {@link writeProgress}).
 * @param maxBytes  bytes of each command's output the log keeps (default workers/proc/capped-log.ts `LOG_MAX_BYTES`: a check runs the worker's code, and its log is on the file system `.polly/` lives on).
 */
export function followStep(pollyDir: string, taskId: string, phase: ProgressPhase, name: string, maxBytes = LOG_MAX_BYTES): StepProgress {
  const log = join(pollyDir, 'logs', `${name}-${taskId}.log`);
  const startedAt = new Date().toISOString();
  const append = (data: string | Buffer) => {
    try {
      appendFileSync(log, data);
    } catch {
      // a view only
    }
  };
  try {
    mkdirSync(join(pollyDir, 'logs'), { recursive: true });
    writeFileSync(log, '');
  } catch {
    // a view only
  }
  let out = cappedLog(append, maxBytes);
  return {
    command(command) {
      out.close();
      append(`${out.lastByte === 0x0a ? '' : '\n'}$ ${command}\n`);
      out = cappedLog(append, maxBytes);
      writeProgress(pollyDir, taskId, { taskId, phase, command, startedAt, log });
    },
    output(chunk) {
      out.write(chunk);
    },
    end() {
      out.close();
      writeProgress(pollyDir, taskId, null);
    },
  };
}

/** Task `taskId`'s progress record, or null (none, or being replaced). */
export function readProgress(pollyDir: string, taskId: string): ProgressRecord | null {
  try {
    return JSON.parse(readFileSync(recordFile(pollyDir, taskId), 'utf8')) as ProgressRecord;
  } catch {
    return null;
  }
}

/**
 * A value that changes whenever a progress record or the output it names grows, or a live worker's
 * events grow (sizes and modification times), for the dashboard's live pages.
 */
export function progressStamp(pollyDir: string, workers: readonly Pick<WorkerRecord, 'id' | 'stateDir' | 'state'>[]): string {
  const parts: string[] = [];
  const stamp = (path: string) => {
    try {
      const s = statSync(path);
      parts.push(`${s.size}.${s.mtimeMs}`);
    } catch {
      parts.push('-');
    }
  };
  let names: string[] = [];
  try {
    names = readdirSync(progressDir(pollyDir)).filter((n) => n.endsWith('.json'));
  } catch {
    // no record yet
  }
  for (const name of names.sort()) {
    const file = join(progressDir(pollyDir), name);
    stamp(file);
    const rec = readProgress(pollyDir, name.slice(0, -'.json'.length));
    if (rec?.log) stamp(rec.log);
  }
  for (const w of workers) if (w.state === 'running') stamp(join(w.stateDir ?? join(pollyDir, 'workers', w.id), 'events.jsonl'));
  return parts.join(',');
}

/** The last `bytes` of a file as text, from a line boundary ('' when missing). */
export function tailOf(path: string, bytes: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(path).size;
    const start = Math.max(0, size - bytes);
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    const text = buf.toString('utf8');
    return start === 0 ? text : text.slice(text.indexOf('\n') + 1);
  } finally {
    closeSync(fd);
  }
}

/** The last `n` non-empty lines of `text`, each at most 300 characters (a carriage-return progress bar keeps its last state). */
export function lastLines(text: string, n: number): string[] {
  return text
    .split('\n')
    .map((l) =>
      (
        l
          .split('\r')
          .filter((p) => p.trim() !== '')
          .at(-1) ?? ''
      ).trimEnd(),
    )
    .filter((l) => l.trim() !== '')
    .slice(-n)
    .map((l) => (l.length > 300 ? `${l.slice(0, 299)}…` : l));
}

/** A tool call as one short line: the tool and its main argument (a command, a path). */
export function toolCallLine(tool: string, input: Record<string, unknown> | undefined): string {
  const arg = input?.command ?? input?.cmd ?? input?.file_path ?? input?.path ?? input?.pattern ?? '';
  return `${tool} ${Array.isArray(arg) ? arg.join(' ') : typeof arg === 'string' ? arg : JSON.stringify(arg)}`.trim();
}

/** One normalised agent event (workers/agents/agent-adapter.ts `AgentEvent`) as a line, or null for the ones not worth a line. */
export function eventLine(ev: Record<string, unknown>): string | null {
  const one = (v: unknown) =>
    String(v ?? '')
      .replace(/\s+/g, ' ')
      .trim();
  switch (ev.type) {
    case 'tool_call':
      return `→ ${toolCallLine(String(ev.tool), ev.input as Record<string, unknown> | undefined)}`;
    case 'tool_result': {
      const out = lastLines(String(ev.output ?? ''), 1)[0] ?? '';
      return `${ev.isError ? '✗' : '←'} ${out || '(no output)'}`;
    }
    case 'text':
      return one(ev.text) || null;
    case 'result':
      return `${ev.ok ? 'turn ended' : 'turn failed'}: ${one(ev.text)}`;
    case 'error':
      return `error: ${one(ev.message)}`;
    default:
      return null;
  }
}

/**
 * What task `taskId` does now (see the module doc), or null when it is in no long step (or the Brain
 * that wrote its record is gone, or it is final).
 * @param now  ms since the epoch.
 * @param maxLines  how many lines of output to return.
 */
export function taskNow(pollyDir: string, reg: Pick<Registry, 'tasks' | 'workers' | 'brain'>, taskId: string, now: number, maxLines = 8): TaskNow | null {
  const task = reg.tasks[taskId];
  if (!task || FINAL_TASK_STATUSES.has(task.status)) return null;
  const elapsed = (since: string) => Math.max(0, Math.round((now - Date.parse(since)) / 1000));
  const worker = Object.values(reg.workers)
    .filter((w) => w.taskId === taskId && (w.state === 'running' || w.state === 'starting') && pidAlive(w.pid))
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt))[0];
  if (worker) {
    const events = tailOf(join(worker.stateDir ?? join(pollyDir, 'workers', worker.id), 'events.jsonl'), 64 * 1024)
      .split('\n')
      .flatMap((l) => {
        try {
          return l.trim() ? [JSON.parse(l) as Record<string, unknown>] : [];
        } catch {
          return []; // a line being written
        }
      });
    const call = [...events].reverse().find((e) => e.type === 'tool_call');
    const lines = events.map(eventLine).filter((l): l is string => l !== null);
    return {
      phase: `${worker.purpose ?? task.purpose} turn`,
      detail: `${worker.harness} (${worker.id})`,
      since: worker.startedAt,
      elapsedS: elapsed(worker.startedAt),
      tool: call ? toolCallLine(String(call.tool), call.input as Record<string, unknown> | undefined) : null,
      lines: lines.slice(-maxLines).map((l) => (l.length > 300 ? `${l.slice(0, 299)}…` : l)),
    };
  }
  const rec = readProgress(pollyDir, taskId);
  if (!rec || !reg.brain || !pidAlive(reg.brain.pid)) return null;
  return {
    phase: rec.phase,
    detail: rec.command,
    since: rec.startedAt,
    elapsedS: elapsed(rec.startedAt),
    tool: null,
    lines: rec.log && existsSync(rec.log) ? lastLines(tailOf(rec.log, 16 * 1024), maxLines) : [],
  };
}
