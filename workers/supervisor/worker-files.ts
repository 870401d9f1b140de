/**
 * One worker's files (the layout is {@link workerFiles}, described in worker-supervisor.ts's module
 * doc), written by the runner (./worker-runner.ts) and read by the supervisor: the result, the
 * runner's liveness by its command line, the agent and runner pids, the runner log's tail, and an
 * incremental tail of `events.jsonl`. Readers never throw for a file that is missing or
 * half-written: a worker's files appear over time. A module apart from the runner, so that the
 * Brain does not load the runner's gate, adapters and sandbox to read them (issue 33 item 6).
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, readSync, renameSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentEvent, AgentRunResult, AgentRunStatus } from '../agents/agent-adapter.js';

/** The files of one worker under its directory. */
export interface WorkerFiles {
  dir: string;
  spec: string;
  events: string;
  heartbeat: string;
  result: string;
  /** The runner's stdout+stderr. */
  log: string;
  runnerPid: string;
  /** `{pid, startedAt}` of the agent CLI (its process group leader). */
  agent: string;
}

/** Paths of the worker files in `dir`. */
export function workerFiles(dir: string): WorkerFiles {
  return {
    dir,
    spec: join(dir, 'spec.json'),
    events: join(dir, 'events.jsonl'),
    heartbeat: join(dir, 'heartbeat'),
    result: join(dir, 'result.json'),
    log: join(dir, 'runner.log'),
    runnerPid: join(dir, 'runner.pid'),
    agent: join(dir, 'agent.json'),
  };
}

/** Write JSON to `path` atomically: `<path>.<pid>.tmp`, fsync, rename. */
export function writeJsonAtomic(path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** The result in `result.json`, or null when there is none (yet) or it is unreadable. */
export function readWorkerResult(files: WorkerFiles): AgentRunResult | null {
  if (!existsSync(files.result)) return null;
  try {
    return JSON.parse(readFileSync(files.result, 'utf8')) as AgentRunResult;
  } catch {
    return null;
  }
}

/** A result for a turn that ended before (or without) the agent: a runner fault or a refusal. */
export function faultResult(status: AgentRunStatus, message: string, started: number, events: AgentEvent[] = [], stderr = ''): AgentRunResult {
  return { status, message, exitCode: null, signal: null, sessionId: null, finalText: '', events, stderr, durationMs: Date.now() - started, command: [] };
}

/**
 * Whether the runner of `specPath` is alive as `pid` (see the module doc): its command line names
 * the spec file, or — for a standby runner that was handed this spec — the tag in `runner.tag`.
 */
export function runnerAlive(pid: number, specPath: string): boolean {
  if (!pid || pid <= 0) return false;
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (args.includes(specPath)) return true;
    let tag = '';
    try {
      tag = readFileSync(join(dirname(specPath), 'runner.tag'), 'utf8').trim();
    } catch {
      return false;
    }
    return tag !== '' && args.includes(tag);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/cmdline')) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** The agent CLI's pid from `agent.json`, or null before the runner wrote it. */
export function readAgentPid(files: WorkerFiles): number | null {
  try {
    const pid = (JSON.parse(readFileSync(files.agent, 'utf8')) as { pid?: unknown }).pid;
    return typeof pid === 'number' && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** The runner's pid from `runner.pid`, or 0 when absent. */
export function readRunnerPid(files: WorkerFiles): number {
  try {
    const pid = Number(readFileSync(files.runnerPid, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return 0;
  }
}

/** The last `bytes` characters of `runner.log` ('' when absent). */
export function logTail(files: WorkerFiles, bytes = 4096): string {
  try {
    const text = readFileSync(files.log, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '';
  }
}

/** Reads events.jsonl incrementally from a byte offset (whole lines only). */
export function createEventTail(path: string): { read(): AgentEvent[] } {
  let offset = 0;
  let partial = '';
  return {
    read() {
      let fd: number;
      try {
        fd = openSync(path, 'r');
      } catch {
        return [];
      }
      const out: AgentEvent[] = [];
      try {
        const size = statSync(path).size;
        while (offset < size) {
          const buf = Buffer.alloc(Math.min(1 << 20, size - offset));
          const n = readSync(fd, buf, 0, buf.length, offset);
          if (n <= 0) break;
          offset += n;
          partial += buf.subarray(0, n).toString('utf8');
        }
      } finally {
        closeSync(fd);
      }
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        if (!line.trim()) continue;
        try {
          out.push(JSON.parse(line) as AgentEvent);
        } catch {
          out.push({ type: 'unknown', raw: line });
        }
      }
      return out;
    },
  };
}
