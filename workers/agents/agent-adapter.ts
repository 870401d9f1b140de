/**
 * The contract every agent adapter (Claude Code, Codex, pi) implements: start the real CLI
 * headless through its structured event stream, with the gate installed, and normalise what it
 * emits into {@link AgentEvent}s. Worker state comes from these streams, never from screen text.
 */
import type { MeterBudget, MeteredRequest, RefusedRequest } from '../metering/metering-proxy.js';
import type { GoalMeterSpec } from '../metering/goal-ledger.js';
import type { Harness } from '../../brain/core/vocabulary.js';
import type { SandboxMount, SandboxSpec } from '../sandbox/sandbox-spec.js';

/** Polly's OS sandbox for one run: the bwrap executable (from a successful probe) and what the run may see. */
export interface AgentSandbox {
  bwrap: string;
  spec: SandboxSpec;
}

/** The options every harness shares (`.polly/config.yaml` `workers.<harness>`). */
export interface AgentCliOptions {
  /** The CLI to run (a name on PATH or an absolute path). */
  command: string;
  /** Model name passed to the CLI; null lets the CLI choose. */
  model: string | null;
}

/**
 * Token usage and cost as an agent CLI reports it (tokens are counts, cost in USD).
 * - `scope`: `call` = one model call (pi's `message_end`, claude's `assistant` message usage, which
 *   arrives while the turn runs); `turn` = the whole turn (claude's `result`, codex's
 *   `turn.completed`). A turn's usage is the sum of its `turn` events when it has any (they are
 *   authoritative), else the sum of its `call` events (brain/registry/cost-ledger.ts `turnUsage`).
 * - `callId`: the model message id of a `call` event, when the CLI gives one (claude repeats a
 *   message's usage on each of its content blocks: the last event of an id counts).
 * - `inputTokens`: every input token, cache reads and writes included; `cacheReadTokens` /
 *   `cacheWriteTokens`: the cached part where the CLI reports it, else null.
 * - `costUsd`: null when the CLI reports no cost (codex never does; claude only on `result`).
 */
export interface UsageEvent {
  type: 'usage';
  scope: 'call' | 'turn';
  callId?: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  costUsd: number | null;
}

/** Normalised events. Unknown event types from a newer CLI become `unknown` (never a crash). */
export type AgentEvent =
  | { type: 'session'; sessionId: string }
  | { type: 'tool_call'; id: string | null; tool: string; input: unknown }
  | { type: 'tool_result'; id: string | null; isError: boolean; output: string }
  | { type: 'text'; text: string }
  | UsageEvent
  | { type: 'result'; ok: boolean; text: string }
  | { type: 'error'; message: string }
  | MeteringEvent
  | { type: 'unknown'; raw: unknown };

/**
 * What the run's metering proxy saw (workers/metering/metering-proxy.ts). Written by the worker
 * runner, outside the sandbox, never parsed from an agent's stream: `metering` once when the proxy
 * starts (the turn is metered: its usage comes from these events only), `metered` per model
 * request, `metering_refused` per request refused for the budget.
 */
export type MeteringEvent =
  | { type: 'metering'; upstreams: string[]; budget: MeterBudget | null; goal?: GoalMeterSpec }
  | { type: 'metered'; request: MeteredRequest }
  | { type: 'metering_refused'; refused: RefusedRequest };

/**
 * How a run ended.
 * - `ok`: the CLI finished its turn and exited 0.
 * - `agent_missing`: the CLI is not installed / not executable (spawn ENOENT/EACCES, or exit 127).
 * - `agent_exited`: the CLI exited non-zero (or before producing a result); `stderr` says why.
 * - `agent_refused`: the CLI refused the configuration (e.g. bypassPermissions as root without IS_SANDBOX).
 * - `blocked_on_prompt`: the CLI asked for interactive input (trust/login/first-run prompt).
 * - `bound_exceeded`: the turn hit a resource bound of its sandbox (`workers.limits`,
 *   workers/sandbox/resource-bounds.ts): its output line or total, processes, memory, /tmp, file
 *   size; the message names the bound, its limit and the key that raises it.
 * - `timed_out`, `cancelled`.
 */
export type AgentRunStatus = 'ok' | 'agent_missing' | 'agent_exited' | 'agent_refused' | 'blocked_on_prompt' | 'timed_out' | 'cancelled' | 'bound_exceeded';

export interface AgentRunOptions {
  /** The worktree (implement) or scratch directory (review) the agent works in. */
  cwd: string;
  /** The user prompt for this turn (the task, red-check feedback, or review findings). */
  prompt: string;
  /** Resume this session (follow-ups go to the same session); null starts a new one. */
  resumeSessionId: string | null;
  model: string | null;
  /** Read-only purposes (review, explore, search) get read-only tools where the CLI supports it. */
  readOnly: boolean;
  /** From gate/harness-gate.ts `prepareGate`: extra CLI args and env that install the gate. */
  gate: { args: string[]; env: Record<string, string> };
  /**
   * Extra environment (base URLs, API keys, PORT, `workers.env_passthrough` values). Merged over
   * the allowlisted process env (workers/sandbox/worker-env.ts): nothing else reaches the CLI.
   */
  env: Record<string, string>;
  /** A private directory for this worker's config/home files (never inside the worktree); `<stateDir>/home` is its HOME. */
  stateDir: string;
  /**
   * Polly's OS sandbox around the CLI (workers/sandbox/). Null or absent: unconfined
   * (`workers.allow_unconfined`); then the CLI's own sandbox is the only OS layer (Codex
   * `workspace-write`, Claude Code's `sandbox` settings where they can start).
   */
  sandbox?: AgentSandbox | null;
  /** Kill the run after this many ms (default: no limit). */
  timeoutMs?: number;
  /** Called for every normalised event, in order. */
  onEvent?: (event: AgentEvent) => void;
  signal?: AbortSignal;
}

export interface AgentRunResult {
  status: AgentRunStatus;
  /** For a status other than `ok`: what happened and what to do next (empty when ok). */
  message?: string;
  exitCode: number | null;
  signal: string | null;
  sessionId: string | null;
  /** The agent's final text for this turn (its report). */
  finalText: string;
  events: AgentEvent[];
  /** The last few KiB of stderr (secrets redacted). */
  stderr: string;
  durationMs: number;
  /** The command line run (argv; secrets redacted). */
  command: string[];
  /**
   * Set when the turn ran without Polly's sandbox (`workers.allow_unconfined: true` and the sandbox
   * could not start): the warning the worker runner printed. Absent or null when it ran confined.
   */
  unconfined?: string | null;
  /**
   * The mounts the agent ran with in Polly's sandbox (workers/sandbox/sandbox-spec.ts
   * `appliedMounts`): what it could write on the host. The ref guard counts only a change it could
   * have made (brain/task-tools/ref-guard-step.ts). Absent or null: no sandbox (unconfined), or
   * the runner failed before it decided; then anything may be the agent's.
   */
  sandboxMounts?: SandboxMount[] | null;
  /**
   * The remote host (a `workers.hosts` name) the turn ran on (workers/hosts/remote-turn.ts);
   * absent or null: this machine. A remote turn's {@link sandboxMounts} is `[]`: its sandbox could
   * write nothing on this machine (the host's own mounts are in `hostSandboxMounts`).
   */
  host?: string | null;
  /** The mounts of the sandbox the turn ran in on its host (paths there). */
  hostSandboxMounts?: SandboxMount[] | null;
  /**
   * Set when the turn's host was lost or never took it (workers/hosts/remote-turn.ts): `started`
   * false means no worker ran there (unreachable before the turn, or `busy`: every slot of the host
   * taken), so the turn may be placed again at once; true means a worker ran and the host dropped:
   * this machine waited out `workers.host_lease_seconds` (the host stops its worker by then) and the
   * turn's work there is not used.
   */
  hostLost?: { host: string; reason: string; started: boolean; busy?: boolean } | null;
}

/** A started agent process. */
export interface AgentRun {
  pid: number;
  /** Resolves when the process has exited and the stream is drained. Never rejects. */
  result: Promise<AgentRunResult>;
  /** Stop the whole process group (SIGTERM, then SIGKILL after a grace period). */
  cancel(): Promise<void>;
}

export interface AgentAdapter {
  harness: Harness;
  /** The vendor, for cross-review pairing (`anthropic`, `openai`, `pi`). */
  vendor: string;
  /** Start one turn of the agent. */
  start(options: AgentRunOptions): AgentRun;
}
