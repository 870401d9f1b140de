/**
 * The contract between the task executor (which claims the work orders of a `polly-task` run on
 * the runtime) and the tools that perform them. One tool per effect tool name of
 * workflows/polly-task/workflow.yaml: `dispatch`, `send_followup`, `run_acceptance`, `push`,
 * `open_draft_pr`, `dispatch_review`, `mark_ready`, and after ready `integrate_base`, `reply_pr`.
 *
 * Every tool is idempotent per work order id: a Brain killed mid-tool restarts, the runtime
 * re-offers the same order, and the tool first looks for what an earlier attempt already did
 * (a worker started for this order, a pushed commit, an opened PR) before doing anything.
 */
import type { PollyConfig } from '../config/config-schema.js';
import type { Forge } from '../forge/forge.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { TaskRecord } from '../registry/registry-schema.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';
import type { WorkerSupervisor } from '../../workers/worker-turn.js';

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
  /** The clock every time a tool writes comes from (the Brain's, so a test can move it): never a bare `new Date()`. */
  clock: () => Date;
}

export interface TaskToolOutcome {
  outcome: 'ok' | 'failure';
  /** A failure that must not be retried (takes the on_failure branch at once). */
  permanent?: boolean;
  /** Completion action data, e.g. `{reviewer: 'pi'}` for open_draft_pr. */
  data?: Record<string, string | number | boolean>;
  /** Why, in one line (journaled). */
  note: string;
  /**
   * Instead of reporting the order, deliver this action to the run (the Brain's order executor):
   * `HOST_LOST`, when the turn's remote host was lost: the run re-offers the turn as a new order
   * within its checked bound (workflows/polly-task/workflow.yaml). Refused by the run (the bound is
   * spent, or the state has moved on), the order is reported as this failure, permanent.
   */
  signal?: 'HOST_LOST';
}

export type TaskTool = (ctx: TaskToolContext) => Promise<TaskToolOutcome>;

/**
 * The reason of a task whose worker changed nothing: its dispatch fails with it (./dispatch.ts),
 * push refuses a branch still at its base with it (./push.ts), and the Brain's end-of-run reason
 * keeps it (brain/process/order-executor.ts).
 */
export const NO_CHANGE = 'the worker made no change';
