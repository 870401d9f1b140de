/**
 * The public contract of `workers/`: one agent turn as a request, its result, and the
 * {@link WorkerSupervisor} port the Brain's task tools call (implemented by
 * workers/supervisor/worker-supervisor.ts; a recording twin lives in test/helpers/recording-supervisor.ts).
 */
import type { Harness, Purpose } from '../brain/core/vocabulary.js';
import type { GateContext, GateRole } from '../gate/types.js';
import type { AgentEvent, AgentRunResult } from './agents/agent-adapter.js';
import type { WorkerRecord } from './supervisor/worker-record-store.js';
import type { TurnMeterSpec } from './metering/turn-meter.js';

/** One agent turn to run for a task. */
export interface WorkerTurnRequest {
  taskId: string;
  /** The work order this turn performs: starting the same order twice adopts the first run. */
  orderId: string;
  harness: Harness;
  purpose: Purpose;
  /** The gate role (implement, review, explore, search). */
  role: GateRole;
  /**
   * The agent may change nothing (its CLI's read-only tool set / sandbox). Decided once by the
   * Brain from the purpose and the config's `purpose_guard.read_only`
   * (brain/task-tools/dispatch.ts `workerTurnRequest`); the worker runner does not recompute it.
   */
  readOnly: boolean;
  /** Worktree (implement) or scratch directory (review). */
  cwd: string;
  /** First line carries `[polly task=<id> role=<purpose>]`. */
  prompt: string;
  resumeSessionId: string | null;
  model: string | null;
  /** The gate's context for this worker. */
  gateContext: GateContext;
  /** Extra env for the agent process (model endpoint, PORT…). */
  env: Record<string, string>;
  timeoutMs?: number;
  /**
   * The metering of this turn (workers/metering/): what remains of the task's and goal's budget,
   * which the run's metering proxy enforces, and the config's prices. Absent: no limit, the
   * prices of the runner's config.
   */
  meter?: TurnMeterSpec | null;
  /**
   * The remote host that holds the task's worktree and agent session (`task.host`), tried first
   * when the turn is placed (workers/hosts/placement.ts); null or absent: none yet.
   */
  host?: string | null;
  /** The task's base (its branch and commit), for a remote host's mirror (workers/hosts/host-turn.ts). */
  base?: { branch: string | null; commit: string | null } | null;
}

/** What the supervisor returns when a turn has ended (`host` set when it ran on a remote host). */
export type WorkerTurnResult = AgentRunResult & {
  workerId: string;
  /** True when this call adopted a run started earlier (e.g. by a Brain that was killed). */
  adopted: boolean;
};

/**
 * Starts agent turns as supervised processes that survive a Brain crash (their events go to a
 * file, not to a pipe of the Brain), records them in the registry's `workers`, and adopts or reaps
 * them after a restart.
 */
export interface WorkerSupervisor {
  /** Run (or adopt, same orderId) one agent turn; resolves when it has ended. Never rejects for agent failures: they are statuses. */
  runTurn(request: WorkerTurnRequest, options?: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void }): Promise<WorkerTurnResult>;
  /** Stop every live worker of a task (the whole process group). */
  cancelTask(taskId: string): Promise<{ cancelled: number }>;
  /** After a restart: adopt live workers, mark dead ones; no registry row stays running without a live process. */
  reconcile(): Promise<{ adopted: string[]; reaped: string[] }>;
  /** Live worker rows. */
  live(): Promise<WorkerRecord[]>;
  /**
   * The Brain stops: from now on no new worker process starts (a turn whose order has no worker
   * yet rejects with PollyError `stopping`; a turn already started is still followed or adopted),
   * and runners started ahead of need (standby) end. Live task workers keep running for the next
   * Brain. Idempotent. Optional: a supervisor without standby runners may leave it out.
   */
  stop?(): void;
  /**
   * A turn is coming (a dispatch has begun; its worktree and checks run first): boot the runners
   * kept ahead of need now, so that the turn does not wait on node's start and the sandbox probes.
   * No-op when they are up, when none are kept, or after `stop()`. Optional, like `stop`.
   */
  prewarm?(): void;
}
