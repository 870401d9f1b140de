/**
 * The contract between the task executor (which claims the work orders of a `polly-task` run on
 * the runtime) and the tools that perform them. One tool per effect tool name of
 * workflows/polly-task/workflow.yaml: `dispatch`, `send_followup`, `run_acceptance`, `push`,
 * `open_draft_pr`, `dispatch_review`, `mark_ready`.
 *
 * Every tool is idempotent per work order id: a Brain killed mid-tool restarts, the runtime
 * re-offers the same order, and the tool first looks for what an earlier attempt already did
 * (a worker started for this order, a pushed commit, an opened PR) before doing anything.
 */
import type { PollyConfig } from '../config/config-schema.js';
import type { Forge } from '../forge/forge.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { TaskRecord, WorkerRecord } from '../registry/registry-schema.js';
import type { Harness, Purpose } from '../core/vocabulary.js';
import type { AgentEvent, AgentRunResult } from '../../workers/agents/agent-adapter.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';
import type { GateContext, GateRole } from '../../gate/types.js';

/** One agent turn to run for a task. */
export interface WorkerTurnRequest {
  taskId: string;
  /** The work order this turn performs: starting the same order twice adopts the first run. */
  orderId: string;
  harness: Harness;
  purpose: Purpose;
  /** The gate role (implement, review, explore, search). */
  role: GateRole;
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
}

/** What the supervisor returns when a turn has ended. */
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
}

export interface TaskToolContext {
  repoRoot: string;
  store: RegistryStore;
  config: PollyConfig;
  /** A fresh read of the task; change it through `store.update`. */
  task: TaskRecord;
  order: { id: string; kind: string; tool: string; attempt: number };
  worktrees: WorktreeManager;
  supervisor: WorkerSupervisor;
  forge: Forge;
  /** Env for agent processes (e.g. ANTHROPIC_BASE_URL of the scripted model). */
  agentEnv: Record<string, string>;
  /** One-line progress for the live view. */
  progress(line: string): void;
  signal: AbortSignal;
}

export interface TaskToolOutcome {
  outcome: 'ok' | 'failure';
  /** A failure that must not be retried (takes the on_failure branch at once). */
  permanent?: boolean;
  /** Completion action data, e.g. `{reviewer: 'pi'}` for open_draft_pr. */
  data?: Record<string, string | number | boolean>;
  /** Why, in one line (journaled). */
  note: string;
}

export type TaskTool = (ctx: TaskToolContext) => Promise<TaskToolOutcome>;
