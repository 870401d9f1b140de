/**
 * The worker supervisor: runs agent turns as detached runner processes (workers/worker-runner.ts)
 * that outlive the Brain, records them in the registry's `workers`, and adopts or reaps them after
 * a restart (orchestration case 6 in test/workers/supervisor/orchestration-workers.test.ts: no row stays "running" without a live process).
 *
 * Files, per worker, in `<stateRoot>/<workerId>/` (see {@link workerFiles}): `spec.json` (what to
 * run; env VALUES are not in it — they reach the runner through its environment), `runner.pid`,
 * `heartbeat`, `events.jsonl` (one normalised event per line), `agent.json` (the agent's pid),
 * `result.json` (written last, atomically), `runner.log` (the runner's stdout+stderr). The agent's
 * own state (its sessions) lives in `<agentStateRoot>/agents/<taskId>/<harness>/` (default under
 * `$XDG_STATE_HOME/polly/`, see workers/sandbox/agent-state-dir.ts), shared by the turns of
 * one task so that a follow-up can resume the session.
 *
 * Identity: the worker id is derived from the order id (`w-<taskId>-<sha1(orderId)[0:10]>`), so a
 * second `runTurn` for the same order finds the first one's row and files — and, when the row was
 * lost (a registry restored from its backup), the files alone: a live runner or a result there is
 * adopted, never started again. The row is inserted
 * BEFORE the runner is spawned: a spec without a row was never started and may be started; a row
 * whose runner is gone without a result is a lost turn and is never started again.
 *
 * A runner is "alive" when `/proc/<pid>/cmdline` names its spec file, or the tag of the standby
 * runner it was handed to (`runner.tag`), so a reused pid or a zombie is not mistaken for it; where
 * there is no /proc, when `kill(pid, 0)` succeeds.
 *
 * Standby: from `prewarm()` (a dispatch has begun: its worktree and checks come first) or its first
 * turn on, the supervisor keeps `standby` runners (default 1) booted ahead of need
 * (`worker-runner.js --standby <tag>`, waiting on a stdin pipe, its sandbox probed); the next turn
 * hands it the spec and env in one line instead of waiting for node to start and the probes to run
 * (about 1-2.5 s on a loaded 2-core machine, issue 33 item 6). It dies with the supervisor.
 *
 * Stopping: `stop()` (the Brain got SIGTERM/SIGINT) ends the standby runners at once and starts no
 * worker process after it: a turn whose order has no row yet rejects with PollyError `stopping`
 * before its row is written, so the order stays open and the next Brain starts it (issue 35: a
 * stopping Brain's in-flight dispatch started a runner and its sandbox after the signal, which
 * then outlived the Brain). A row written before the stop is always spawned: a row without a
 * runner would be a lost turn, never started again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { workerRunnerPath } from '../../brain/core/install-paths.js';
import type { WorkerSupervisor, WorkerTurnRequest, WorkerTurnResult } from '../worker-turn.js';
import type { AgentEvent, AgentRunResult } from '../agents/agent-adapter.js';
import { scrubbedProcessEnv } from '../agents/agent-process.js';
import { killTree, signalPid } from '../proc/kill.js';
import { repoStateDir } from '../sandbox/agent-state-dir.js';
import type { WorkerRunConfig, WorkerSpec } from './worker-runner.js';
import {
  createEventTail,
  faultResult,
  logTail,
  readAgentPid,
  readRunnerPid,
  readWorkerResult,
  runnerAlive,
  workerFiles,
  writeJsonAtomic,
  type WorkerFiles,
} from './worker-files.js';
import type { WorkerRecord, WorkerRecordStore } from './worker-record-store.js';
import { configuredHosts, DEFAULT_HOST_LEASE_SECONDS, type ResolvedHost } from '../hosts/host-config.js';
import { createPlacement, type Placement } from '../hosts/placement.js';
import { sshContext } from '../hosts/ssh.js';
import { repoKeyFor } from '../hosts/worktree-transfer.js';
import { pollyIdentity } from '../../brain/core/polly-identity.js';
import { createGitRunner } from '../git/git.js';

export interface WorkerSupervisorOptions {
  /** The repository's main checkout (absolute). */
  repoRoot: string;
  /** Where worker rows live (the registry store satisfies this port). */
  store: WorkerRecordStore;
  /** The config the runner needs (a PollyConfig satisfies it); written into each spec.json. */
  config: WorkerRunConfig;
  /** Where worker directories go. Default `<repoRoot>/.polly/workers`. */
  stateRoot?: string;
  /**
   * Where the agents' own state goes (`<root>/agents/<taskId>/<harness>/`: CLI config dirs,
   * sessions, the private HOME). Default {@link repoStateDir}: outside the repository and the OS
   * temp dir.
   */
  agentStateRoot?: string;
  /** The built runner. Default `dist/workers/supervisor/worker-runner.js` of this package. */
  runnerPath?: string;
  /** The node executable for the runner. Default `process.execPath`. */
  nodePath?: string;
  /** How often a follower looks at the worker's files, ms. Default 100. */
  pollMs?: number;
  /** How often the runner touches its heartbeat file, ms. Default 2000. */
  heartbeatMs?: number;
  /** Write an observed heartbeat into the registry at most this often, ms. Default 5000. */
  registryHeartbeatMs?: number;
  /** After SIGTERM, how long a runner gets to write its `cancelled` result before SIGKILL, ms. Default 8000. */
  cancelGraceMs?: number;
  /** Gate decision log for the workers (default: prepareGate's `<repoRoot>/.polly/gate-decisions.jsonl`). */
  gateJournalPath?: string | null;
  /**
   * How many runners to keep started ahead of need (modules loaded, waiting on a stdin pipe), so a
   * turn does not wait for node to boot: 0 turns this off. They are started after the first turn
   * of this supervisor and replaced after each use; they exit when this process exits (their pipe
   * closes). Default 1 (each idle runner holds about 40 MB).
   */
  standby?: number;
  /**
   * Where each turn runs (workers/hosts/placement.ts). Default: the remote hosts of
   * `config.workers.hosts` when there are any, else every turn here (null: always here).
   */
  placement?: Placement | null;
}

/** The worker id of an order: stable, so a repeated order finds its first run. */
export function workerIdFor(taskId: string, orderId: string): string {
  return `w-${taskId}-${createHash('sha1').update(orderId).digest('hex').slice(0, 10)}`;
}

/** This package's built runner, `dist/workers/supervisor/worker-runner.js`. @throws PollyError `not_built`. */
export function defaultRunnerPath(): string {
  const path = workerRunnerPath();
  if (existsSync(path)) return path;
  throw new PollyError('not_built', `the worker runner is not built (no ${path}). Run "npm run build" first.`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function isLiveState(w: WorkerRecord): boolean {
  return w.state === undefined || w.state === 'starting' || w.state === 'running';
}

/** The outcome recorded on a row whose host never started the turn (placed again at once, under the next worker id). */
export const HOST_NOT_STARTED = 'host_not_started';
/** The outcome recorded on a row whose host was lost while the turn ran. */
export const HOST_LOST = 'host_lost';

/** The worker id of the `n`th placement of an order (n ≥ 1): the first is {@link workerIdFor}'s. */
export function placedWorkerId(taskId: string, orderId: string, n: number): string {
  return n <= 1 ? workerIdFor(taskId, orderId) : workerIdFor(taskId, `${orderId}#placement-${n}`);
}

/**
 * Create the supervisor (implements {@link WorkerSupervisor} of workers/worker-turn.ts).
 *
 * - `runTurn(request)`: idempotent per `request.orderId`. A row for the order whose runner lives →
 *   adopt (replay events.jsonl from the start through `onEvent`, wait for result.json); runner gone
 *   with a result → that result; gone without one → status `agent_exited`, "the worker process died
 *   (pid N) without a result" (never started again). Otherwise a new runner is started (row first,
 *   then the detached process, stdio to runner.log). Aborting `options.signal` cancels the turn
 *   (SIGTERM to the runner, which cancels the agent's group) and resolves with its `cancelled` result.
 *   Never rejects for agent failures; rejects only for faults of Polly itself (registry, not built).
 * - `cancelTask(taskId)`: SIGTERM every live runner of the task, wait up to `cancelGraceMs` for its
 *   result, then SIGKILL the runner and the agent's process group; rows end `exited` or `dead`.
 * - `reconcile()`: live rows whose runner lives are adopted (supervisor = this pid); the others are
 *   reaped: `exited` with the outcome of result.json, else `dead` with the cause; a surviving agent
 *   group of a dead runner is killed.
 * - `live()`: rows in state starting/running whose runner is alive.
 * - `stop()`: no worker process starts after it (`runTurn` for an order without a row rejects
 *   with PollyError `stopping`); idle standby runners are ended. Live workers are left running.
 */
export function createWorkerSupervisor(options: WorkerSupervisorOptions): WorkerSupervisor {
  const stateRoot = resolve(options.stateRoot ?? join(options.repoRoot, '.polly', 'workers'));
  const pollMs = options.pollMs ?? 100;
  const heartbeatMs = options.heartbeatMs ?? 2000;
  const registryHeartbeatMs = options.registryHeartbeatMs ?? 5000;
  const cancelGraceMs = options.cancelGraceMs ?? 8000;
  const store = options.store;
  /** Turns followed by this process, by worker id (a second call for the same order joins the first). */
  const following = new Map<string, Promise<WorkerTurnResult>>();
  const standbyCount = Math.max(0, Math.floor(options.standby ?? 1));
  const standbys: Array<{ child: ChildProcess; tag: string }> = [];
  let standbySeq = 0;
  /** Set by stop(): no runner or standby starts after it. */
  let stopping = false;
  const placement: Placement | null =
    options.placement !== undefined
      ? options.placement
      : configuredHosts(options.config.workers).length > 0
        ? createPlacement({ workers: options.config.workers, ssh: sshContext(options.config.workers) })
        : null;
  /** Hosts chosen for turns whose row is not written yet (so two placements at once see each other). */
  const placing = new Map<string, string>();
  let placeChain: Promise<void> = Promise.resolve();
  let repoKey: Promise<string> | null = null;
  const dropStandby = (child: ChildProcess): void => {
    const i = standbys.findIndex((x) => x.child === child);
    if (i >= 0) standbys.splice(i, 1);
  };

  /** Top the standby runners up to `standbyCount` (best effort: without one, a turn starts a runner cold). */
  const spawnStandby = (runnerPath: string): void => {
    while (!stopping && standbys.length < standbyCount && spawnOneStandby(runnerPath));
  };
  const spawnOneStandby = (runnerPath: string): boolean => {
    try {
      mkdirSync(stateRoot, { recursive: true });
      const tag = `polly-standby-${process.pid}-${++standbySeq}-${createHash('sha1').update(`${Date.now()}${Math.random()}`).digest('hex').slice(0, 8)}`;
      const log = openSync(join(stateRoot, 'standby.log'), 'a', 0o600);
      try {
        const child = spawn(options.nodePath ?? process.execPath, [runnerPath, '--standby', tag], {
          cwd: stateRoot,
          env: scrubbedProcessEnv(),
          detached: true,
          stdio: ['pipe', log, log],
        });
        child.on('error', () => dropStandby(child));
        child.on('exit', () => dropStandby(child));
        child.stdin?.on('error', () => {});
        child.unref();
        (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
        if (!child.pid) return false;
        standbys.push({ child, tag });
        return true;
      } finally {
        closeSync(log);
      }
    } catch {
      return false;
    }
  };

  /** Hand `specPath` (and the env) to the standby runner; its pid, or 0 when there is none. */
  const claimStandby = (files: WorkerFiles, env: Record<string, string>): number => {
    const s = standbys.shift();
    if (!s?.child.pid || s.child.exitCode !== null || !s.child.stdin?.writable) return 0;
    writeFileSync(join(files.dir, 'runner.tag'), `${s.tag}\n`);
    writeFileSync(files.log, `[polly] this turn runs in standby runner ${s.tag} (pid ${s.child.pid}); its stdout/stderr go to ${join(stateRoot, 'standby.log')}\n`, { flag: 'a' });
    s.child.stdin.end(`${JSON.stringify({ specPath: files.spec, env })}\n`);
    return s.child.pid;
  };

  const patchRow = async (id: string, patch: Partial<WorkerRecord>, event?: { kind: string; data: Record<string, unknown> }): Promise<void> => {
    await store.update((draft, tx) => {
      const row = draft.workers[id];
      if (!row) return;
      Object.assign(row, patch);
      if (event) tx.emit(event.kind, event.data);
    });
  };

  /** Mark a row ended (exited with a result, or dead) unless it already is. */
  const endRow = async (row: WorkerRecord, result: AgentRunResult | null, cause: string | null): Promise<void> => {
    await store.update((draft, tx) => {
      const w = draft.workers[row.id];
      if (!w || !isLiveState(w)) return;
      w.state = result ? 'exited' : 'dead';
      w.endedAt = new Date().toISOString();
      w.outcome = result?.hostLost ? (result.hostLost.started ? HOST_LOST : HOST_NOT_STARTED) : result ? result.status : 'agent_exited';
      w.cause = result ? (result.message ?? '') || null : cause;
      if (result?.sessionId) w.sessionId = result.sessionId;
      tx.emit(result ? 'worker.exited' : 'worker.dead', { workerId: w.id, taskId: w.taskId, orderId: w.orderId ?? null, outcome: w.outcome, cause: w.cause });
    });
  };

  const lostResult = (row: WorkerRecord, files: WorkerFiles, events: AgentEvent[], started: number): AgentRunResult => {
    const pid = row.pid || readRunnerPid(files);
    const tail = logTail(files);
    const logEnd = tail.trim() ? `; its log ends: ${tail.trim().split('\n').slice(-5).join(' | ')}` : '';
    const message = pid
      ? `the worker process died (pid ${pid}) without a result${logEnd}`
      : `the worker process never started (the supervisor stopped between recording the worker and spawning it)${logEnd}`;
    const sessionId = [...events].reverse().find((e): e is Extract<AgentEvent, { type: 'session' }> => e.type === 'session')?.sessionId ?? row.sessionId;
    return { ...faultResult('agent_exited', message, started, [...events, { type: 'error', message }], tail), sessionId };
  };

  /** Follow a started (or adopted) worker until its result, or its death. */
  const follow = async (
    row: WorkerRecord,
    files: WorkerFiles,
    adopted: boolean,
    opts: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void },
  ): Promise<WorkerTurnResult> => {
    const started = Date.now();
    const tail = createEventTail(files.events);
    const seen: AgentEvent[] = [];
    let sessionRecorded = row.sessionId;
    let agentRecorded = row.agentPid ?? null;
    let lastHeartbeatMs = 0;
    let lastRegistryBeat = 0;
    let termAt = 0;
    const drain = async (): Promise<void> => {
      for (const e of tail.read()) {
        seen.push(e);
        try {
          opts.onEvent?.(e);
        } catch {
          /* a listener fault must not stop the follower */
        }
        if (e.type === 'session' && e.sessionId !== sessionRecorded) {
          sessionRecorded = e.sessionId;
          await patchRow(row.id, { sessionId: e.sessionId });
        }
      }
    };
    for (;;) {
      await drain();
      const result = readWorkerResult(files);
      if (result) {
        await drain();
        await endRow(row, result, null);
        return { ...result, workerId: row.id, adopted };
      }
      const pid = row.pid || readRunnerPid(files);
      if (!runnerAlive(pid, files.spec)) {
        // The runner may have written its result just before exiting: look once more.
        await sleep(Math.min(200, pollMs * 2));
        const late = readWorkerResult(files);
        if (late) continue;
        await drain();
        await killTree(readAgentPid(files));
        const lost = lostResult({ ...row, pid }, files, seen, started);
        await endRow(row, null, lost.message ?? null);
        return { ...lost, workerId: row.id, adopted };
      }
      if (agentRecorded === null) {
        const agentPid = readAgentPid(files);
        if (agentPid) {
          agentRecorded = agentPid;
          await patchRow(row.id, { agentPid });
        }
      }
      try {
        const mtime = statSync(files.heartbeat).mtimeMs;
        if (mtime > lastHeartbeatMs) {
          lastHeartbeatMs = mtime;
          if (Date.now() - lastRegistryBeat >= registryHeartbeatMs) {
            lastRegistryBeat = Date.now();
            await patchRow(row.id, { heartbeatAt: new Date(mtime).toISOString() });
          }
        }
      } catch {
        /* no heartbeat yet */
      }
      if (opts.signal?.aborted) {
        if (!termAt) {
          termAt = Date.now();
          signalPid(pid, 'SIGTERM');
        } else if (Date.now() - termAt > cancelGraceMs) {
          signalPid(pid, 'SIGKILL');
          await killTree(readAgentPid(files), 0);
        }
      }
      await sleep(pollMs);
    }
  };

  /** Start the runner; null when another supervisor recorded this worker first (then adopt it). */
  const start = async (request: WorkerTurnRequest, id: string, files: WorkerFiles, host: ResolvedHost | null): Promise<WorkerRecord | null> => {
    const runnerPath = options.runnerPath ?? defaultRunnerPath();
    mkdirSync(files.dir, { recursive: true });
    const agentStateDir = join(options.agentStateRoot ?? repoStateDir(options.repoRoot), 'agents', request.taskId, request.harness);
    mkdirSync(agentStateDir, { recursive: true });
    const spec: WorkerSpec = {
      version: 1,
      workerId: id,
      taskId: request.taskId,
      orderId: request.orderId,
      harness: request.harness,
      purpose: request.purpose,
      role: request.role,
      readOnly: request.readOnly,
      cwd: request.cwd,
      prompt: request.prompt,
      // An agent session lives where the task's last turn ran (its host, or here): placed elsewhere,
      // the turn starts a new session in the same worktree state.
      resumeSessionId: (host?.name ?? null) === (request.host ?? null) ? request.resumeSessionId : null,
      model: request.model,
      gateContext: request.gateContext,
      envKeys: Object.keys(request.env),
      timeoutMs: request.timeoutMs ?? null,
      meter: request.meter ?? null,
      agentStateDir,
      gateDir: join(files.dir, 'gate'),
      journalPath: options.gateJournalPath === undefined ? join(options.repoRoot, '.polly', 'gate-decisions.jsonl') : options.gateJournalPath,
      heartbeatMs,
      config: options.config,
      host: host
        ? {
            host,
            sshConfig: options.config.workers.ssh_config ?? null,
            controlDir: sshContext(options.config.workers).controlDir,
            leaseMs: (options.config.workers.host_lease_seconds ?? DEFAULT_HOST_LEASE_SECONDS) * 1000,
            repoKey: await (repoKey ??= repoKeyFor(createGitRunner(), options.repoRoot)),
            clone: pollyIdentity(options.repoRoot).id,
            baseBranch: request.base?.branch ?? null,
            baseCommit: request.base?.commit ?? null,
          }
        : null,
    };
    writeJsonAtomic(files.spec, spec);
    const now = new Date().toISOString();
    const row: WorkerRecord = {
      id,
      taskId: request.taskId,
      harness: request.harness,
      pid: 0,
      pgid: 0,
      sessionId: request.resumeSessionId,
      startedAt: now,
      heartbeatAt: now,
      supervisor: process.pid,
      orderId: request.orderId,
      purpose: request.purpose,
      stateDir: files.dir,
      state: 'starting',
      agentPid: null,
      endedAt: null,
      outcome: null,
      cause: null,
      host: host?.name ?? null,
    };
    // The row first: a crash after this line leaves a row (a lost turn), never a second agent.
    // Stopping is decided in the same write: a row written is a runner started, however the stop races it.
    const inserted = await store.update((draft, tx) => {
      if (stopping) return 'stopping' as const;
      if (draft.workers[id]) return false;
      draft.workers[id] = row;
      tx.emit('worker.starting', {
        workerId: id,
        taskId: request.taskId,
        orderId: request.orderId,
        harness: request.harness,
        purpose: request.purpose,
        ...(host ? { host: host.name } : {}),
      });
      return true;
    });
    if (inserted === 'stopping') {
      throw new PollyError(
        'stopping',
        `the Brain is stopping: the ${request.harness} ${request.purpose} turn of task ${request.taskId} (order ${request.orderId}) was not started; the next Brain (polly resume) starts it`,
        { details: { taskId: request.taskId, orderId: request.orderId } },
      );
    }
    if (!inserted) return null;
    let pid = claimStandby(files, request.env);
    let spawnError: string | null = null;
    if (!pid) {
      const log = openSync(files.log, 'a', 0o600);
      try {
        const child = spawn(options.nodePath ?? process.execPath, [runnerPath, files.spec], {
          cwd: files.dir,
          env: scrubbedProcessEnv(request.env),
          detached: true,
          stdio: ['ignore', log, log],
        });
        child.on('error', (error) => {
          spawnError = error.message;
        });
        child.unref();
        pid = child.pid ?? 0;
      } finally {
        closeSync(log);
      }
    }
    spawnStandby(runnerPath);
    if (!pid) {
      await sleep(10);
      const message = `the worker runner could not be started (${spawnError ?? 'no pid'}): check that ${options.nodePath ?? process.execPath} and ${runnerPath} exist`;
      writeJsonAtomic(files.result, faultResult('agent_exited', message, Date.now()));
      return row;
    }
    row.pid = pid;
    row.pgid = pid;
    row.state = 'running';
    await store.update((draft, tx) => {
      const w = draft.workers[id];
      if (!w) return;
      w.pid = pid;
      w.pgid = pid;
      if (w.state === 'starting') w.state = 'running';
      tx.emit('worker.started', { workerId: id, taskId: request.taskId, orderId: request.orderId, harness: request.harness, pid });
    });
    return row;
  };

  /**
   * No row, but this order's worker directory shows a runner that lives or a result: the row was
   * lost (a registry restored from its backup is one write behind, issue 35). The row is written
   * again from the files (journal `worker.adopted` with `fromFiles`) and the worker followed, so
   * the order never starts a second agent. Null when the files show neither.
   */
  const adoptFromFiles = async (request: WorkerTurnRequest, id: string, files: WorkerFiles): Promise<WorkerRecord | null> => {
    const pid = readRunnerPid(files);
    const alive = runnerAlive(pid, files.spec);
    if (!alive && !readWorkerResult(files)) return null;
    const now = new Date().toISOString();
    const row: WorkerRecord = {
      id,
      taskId: request.taskId,
      harness: request.harness,
      pid,
      pgid: pid,
      sessionId: request.resumeSessionId,
      startedAt: now,
      heartbeatAt: now,
      supervisor: process.pid,
      orderId: request.orderId,
      purpose: request.purpose,
      stateDir: files.dir,
      state: 'running',
      agentPid: readAgentPid(files) || null,
      endedAt: null,
      outcome: null,
      cause: null,
    };
    const written = await store.update((draft, tx) => {
      if (draft.workers[id]) return draft.workers[id]!;
      draft.workers[id] = row;
      tx.emit('worker.adopted', { workerId: id, taskId: request.taskId, orderId: request.orderId, pid, fromFiles: true, alive });
      return row;
    });
    return { ...written };
  };

  const runTurnOnce = async (
    request: WorkerTurnRequest,
    id: string,
    opts: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void },
    avoid: ReadonlySet<string> = new Set(),
  ): Promise<WorkerTurnResult> => {
    const files = workerFiles(join(stateRoot, id));
    const existing = (await store.read()).workers[id];
    if (existing) {
      let row = existing;
      if (!row.pid) {
        // Inserted, then the Brain died around the spawn: the runner writes runner.pid first thing.
        await sleep(1000);
        const pid = readRunnerPid(files);
        if (pid && runnerAlive(pid, files.spec)) {
          row = { ...row, pid, pgid: pid };
          await patchRow(id, { pid, pgid: pid, state: 'running' });
        }
      }
      if (!readWorkerResult(files) && !isLiveState(row)) {
        // Ended earlier without a result (dead): report the same loss again, never start the order twice.
        const lost = lostResult(row, files, createEventTail(files.events).read(), Date.now());
        return { ...lost, message: row.cause ?? lost.message ?? '', workerId: id, adopted: true };
      }
      if (runnerAlive(row.pid, files.spec)) {
        await patchRow(id, { supervisor: process.pid }, { kind: 'worker.adopted', data: { workerId: id, taskId: row.taskId, orderId: request.orderId, pid: row.pid } });
      }
      // Alive: adopt; a result: return it; dead without one: follow() reports the loss.
      return follow(row, files, true, opts);
    }
    const orphan = await adoptFromFiles(request, id, files);
    if (orphan) return follow(orphan, files, true, opts);
    const placed = await place(request, id, avoid);
    if ('refused' in placed) return placed.refused;
    let row: WorkerRecord | null;
    try {
      row = await start(request, id, files, placed.host);
    } finally {
      placing.delete(id);
    }
    if (!row) return runTurnOnce(request, id, opts, avoid); // lost the race to another supervisor: adopt its worker
    return follow(row, files, false, opts);
  };

  /**
   * Decide where a new turn runs (workers/hosts/placement.ts); while every ready host is full,
   * wait for a slot (a turn that frees one is seen within a second). A refusal is the turn's
   * result, with no row and no runner: `agent_refused` when waiting cannot help, else `agent_exited`.
   */
  const place = async (request: WorkerTurnRequest, id: string, avoid: ReadonlySet<string>): Promise<{ host: ResolvedHost | null } | { refused: WorkerTurnResult }> => {
    if (!placement) return { host: null };
    let said = '';
    for (;;) {
      if (stopping) break;
      // One decision at a time: two turns placed at once must each see the other's slot.
      const decided = placeChain.then(async () => {
        const load = new Map<string, number>();
        for (const w of Object.values((await store.read()).workers)) if (w.host && isLiveState(w)) load.set(w.host, (load.get(w.host) ?? 0) + 1);
        for (const [wid, h] of placing) if (wid !== id) load.set(h, (load.get(h) ?? 0) + 1);
        const d = await placement.place(
          { taskId: request.taskId, harness: request.harness, purpose: request.purpose, readOnly: request.readOnly, preferHost: request.host ?? null },
          load,
          avoid,
        );
        if (d.kind === 'host') placing.set(id, d.host.name);
        return d;
      });
      placeChain = decided.then(
        () => undefined,
        () => undefined,
      );
      const decision = await decided;
      if (decision.kind === 'host') return { host: decision.host };
      if (decision.kind === 'local') {
        if (decision.note && request.purpose === 'implement')
          await store.update((_d, tx) => tx.emit('worker.placed_here', { workerId: id, taskId: request.taskId, orderId: request.orderId, note: decision.note }));
        return { host: null };
      }
      if (decision.kind === 'refuse') {
        const result = faultResult(decision.permanent ? 'agent_refused' : 'agent_exited', decision.reason, Date.now(), [{ type: 'error', message: decision.reason }]);
        await store.update((_d, tx) => tx.emit('worker.not_placed', { workerId: id, taskId: request.taskId, orderId: request.orderId, reason: decision.reason }));
        return { refused: { ...result, workerId: id, adopted: false } };
      }
      if (decision.reason !== said) {
        said = decision.reason;
        await store.update((_d, tx) => tx.emit('worker.waiting_for_host', { workerId: id, taskId: request.taskId, orderId: request.orderId, reason: decision.reason }));
      }
      await sleep(1000);
    }
    throw new PollyError(
      'stopping',
      `the Brain is stopping: the ${request.harness} ${request.purpose} turn of task ${request.taskId} (order ${request.orderId}) was waiting for a host and was not started; the next Brain (polly resume) starts it`,
      { details: { taskId: request.taskId, orderId: request.orderId } },
    );
  };

  /**
   * Run the order's turn, placing it again (under the next worker id, {@link placedWorkerId}) each
   * time a host did not start it (busy, unreachable before the turn): those rows end
   * {@link HOST_NOT_STARTED} and the order is not spent. At most 20 placements.
   */
  const runPlaced = async (request: WorkerTurnRequest, opts: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void }): Promise<WorkerTurnResult> => {
    const avoid = new Set<string>();
    const rows = (await store.read()).workers;
    let last: WorkerTurnResult | null = null;
    for (let n = 1; n <= 20; n++) {
      const id = placedWorkerId(request.taskId, request.orderId, n);
      const row = rows[id];
      if (row && row.outcome === HOST_NOT_STARTED) {
        if (row.host) avoid.add(row.host);
        continue;
      }
      const result = await runTurnOnce(request, id, opts, avoid);
      if (!result.hostLost || result.hostLost.started) {
        if (result.hostLost) placement?.forget(result.hostLost.host);
        return result;
      }
      last = result;
      placement?.forget(result.hostLost.host);
      avoid.add(result.hostLost.host);
      if (avoid.size >= (placement?.hosts().length ?? 0)) {
        // Every host refused this turn once: start over after a pause (a busy one may have a slot now).
        avoid.clear();
        await sleep(1000);
      }
    }
    return last!;
  };

  return {
    runTurn(request, opts = {}) {
      const id = workerIdFor(request.taskId, request.orderId);
      const current = following.get(id);
      if (current) return current.then((r) => ({ ...r, adopted: true }));
      const p = runPlaced(request, opts).finally(() => following.delete(id));
      following.set(id, p);
      return p;
    },

    async cancelTask(taskId) {
      const rows = Object.values((await store.read()).workers).filter((w) => w.taskId === taskId && isLiveState(w));
      await Promise.all(
        rows.map(async (row) => {
          const files = workerFiles(row.stateDir ?? join(stateRoot, row.id));
          const pid = row.pid || readRunnerPid(files);
          if (runnerAlive(pid, files.spec)) {
            signalPid(pid, 'SIGTERM');
            const deadline = Date.now() + cancelGraceMs;
            while (Date.now() < deadline && runnerAlive(pid, files.spec) && !readWorkerResult(files)) await sleep(pollMs);
            // The result is written just before the runner exits: give it a moment to exit.
            while (Date.now() < deadline && runnerAlive(pid, files.spec)) await sleep(pollMs);
            if (runnerAlive(pid, files.spec)) signalPid(pid, 'SIGKILL');
          }
          await killTree(readAgentPid(files));
          const result = readWorkerResult(files);
          await endRow({ ...row, pid }, result, result ? null : `cancelled: the worker process (pid ${pid}) was killed before it wrote a result`);
        }),
      );
      return { cancelled: rows.length };
    },

    async reconcile() {
      const adopted: string[] = [];
      const reaped: string[] = [];
      const rows = Object.values((await store.read()).workers).filter(isLiveState);
      for (const row of rows) {
        const files = workerFiles(row.stateDir ?? join(stateRoot, row.id));
        const pid = row.pid || readRunnerPid(files);
        if (runnerAlive(pid, files.spec)) {
          await patchRow(row.id, { pid, pgid: pid, supervisor: process.pid, state: 'running' }, { kind: 'worker.adopted', data: { workerId: row.id, taskId: row.taskId, pid } });
          adopted.push(row.id);
          continue;
        }
        await killTree(readAgentPid(files));
        const result = readWorkerResult(files);
        const cause = result ? null : (lostResult({ ...row, pid }, files, createEventTail(files.events).read(), Date.now()).message ?? null);
        await endRow({ ...row, pid }, result, cause);
        reaped.push(row.id);
      }
      return { adopted, reaped };
    },

    prewarm() {
      spawnStandby(options.runnerPath ?? defaultRunnerPath());
    },

    stop() {
      stopping = true;
      // An idle standby holds no task: end it now rather than when this process's pipe closes.
      for (const s of standbys.splice(0)) {
        s.child.stdin?.destroy();
        signalPid(s.child.pid, 'SIGTERM');
      }
    },

    async live() {
      return Object.values((await store.read()).workers).filter((w) => {
        if (!isLiveState(w)) return false;
        const files = workerFiles(w.stateDir ?? join(stateRoot, w.id));
        return runnerAlive(w.pid || readRunnerPid(files), files.spec);
      });
    },
  };
}
