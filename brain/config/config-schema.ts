/**
 * The shape of `.polly/config.yaml` and its defaults (the gate's policy defaults come from gate/policy-types.ts).
 *
 * YAML keys are snake_case as written by users; this module's types mirror them exactly so that
 * a config file and its typed value read the same. `brain/config.ts` loads, validates (with
 * file:line:column on errors) and merges a file over {@link DEFAULT_CONFIG}.
 */
import type { ModelPrice } from '../../workers/metering/api-usage.js';
import { DEFAULT_PROTECTED_PATHS } from '../../workers/git/protected-paths.js';
import type { Harness } from '../core/vocabulary.js';
import { DEFAULT_GATE_POLICY, type GatePolicy } from '../../gate/policy-types.js';
import type { AgentOptionsByHarness } from '../../workers/agents/agent-factory.js';
import type { WorkerSandboxOptions } from '../../workers/sandbox/sandbox-spec.js';
import { DEFAULT_HOST_LEASE_SECONDS, type WorkerHostsOptions } from '../../workers/hosts/host-config.js';
import { DEFAULT_RESOURCE_LIMITS } from '../../workers/sandbox/resource-bounds.js';

/** The gate's policies (owned by `gate/policy-types.ts`), as config `policies`. */
export type Policies = GatePolicy;
export type { BlastRadiusPolicy, GatePolicy, PurposeGuardPolicy, SpawnBoundsPolicy } from '../../gate/policy-types.js';

export interface PollyConfig {
  version: 1;
  policies: Policies;
  /**
   * Each harness's options, owned by its adapter (workers/agents/*-adapter.ts); the sandbox's
   * (workers/sandbox/sandbox-spec.ts); the remote hosts' (workers/hosts/host-config.ts).
   */
  workers: AgentOptionsByHarness & WorkerSandboxOptions & WorkerHostsOptions;
  /** Who may review whom; never the same vendor. */
  review: { pairs: Record<Harness, Harness[]>; max_rounds: number };
  acceptance: {
    /** Default acceptance commands for implement tasks that name none. */
    commands: string[];
    /** Seconds each command may run. */
    timeout: number;
    /** Worker attempts (the first plus fix rounds) before a task fails. */
    max_attempts: number;
    /** Give acceptance commands the network (default false: loopback only, inside the sandbox). */
    network?: boolean;
    /**
     * Acceptance commands known to be red on the base (exact command text, as in `commands` or a
     * task's `acceptance.commands`). Before the first agent turn Polly runs each task's commands that
     * are in `commands` (the project's checks) on its base (brain/task-tools/base-check.ts); one red there makes the task wait as `base_red`,
     * unless it is listed here. After the agent a listed command is still required green, like any
     * other: list one when the task is meant to make it pass. Default `[]`.
     */
    known_red?: string[];
  };
  worktrees: {
    /**
     * Where task worktrees go (`<dir>/<task id>`), relative to the repository root or absolute
     * (workers/git/worktrees-dir.ts). Default `.worktrees`, inside the repository; a directory
     * beside it (`../<repo>.polly-worktrees`) keeps them out of tools that crawl the repository.
     * Optional for configs written before it existed.
     */
    dir?: string;
    /** Command run in a new worktree after files from .worktreeinclude are copied (e.g. `npm ci`). */
    setup: string | null;
    /** Give the setup command the network (e.g. `npm ci`); default false. */
    setup_network?: boolean;
    /**
     * Git glob pathspecs a task's commit may change only when its plan task declares them in
     * `protected_paths` (workers/git/protected-paths.ts). Default {@link DEFAULT_PROTECTED_PATHS};
     * optional for configs written before it existed.
     */
    protected_paths?: string[];
  };
  forge: {
    /** `auto`: GitHub when `origin` is a GitHub URL, otherwise the local forge. */
    kind: 'auto' | 'local' | 'github';
    github: {
      base_url: string | null;
      /** Seconds between two passes of the Brain's GitHub PR watcher (brain/forge/github-watch.ts; default 60, 1-3600). */
      watch_seconds: number;
      /**
       * Logins whose reviews and comments may steer a worker besides the repository's accounts with
       * write, maintain or admin permission (brain/forge/github-watch.ts; default none).
       */
      trusted_authors: string[];
    };
  };
  /**
   * Issues in (issue 30, brain/forge/issue-intake.ts): an open issue that an account with write,
   * maintain or admin permission labels `label` becomes a goal (`polly watch`, and the Brain's loop
   * when `in_brain`). Optional for configs written before it existed (the defaults apply).
   */
  intake?: {
    /** The label that takes an issue in (default `polly`). */
    label: string;
    /** true: the Brain's loop takes labelled issues in too, besides `polly watch` (default false). */
    in_brain: boolean;
    /** Seconds between two intake passes of `polly watch` and of the Brain (1-3600, default 60). */
    watch_seconds: number;
  };
  brain: {
    /** The Brain's own model (Claude). */
    model: string | null;
    /**
     * Approving a plan while no Brain runs (`polly ui`, `polly plan approve`) starts one, as
     * `polly resume --detach` does (brain/process/daemon.ts `ensureBrain`). Default false: the
     * approval says that nothing runs until `polly resume`. Optional for configs written before it.
     * @default false
     */
    start_on_approve?: boolean;
  };
  /**
   * Hard budgets (brain/plan/budgets.ts): a worker that reaches one is stopped between tool calls,
   * its work backed up, its task parked. A plan may override both (`budgets`), a plan task its own
   * (`budget`). null: no limit.
   */
  budgets: { per_task: Budget | null; per_goal: Budget | null };
  /**
   * Prices by model id (as the API names it in its responses), USD per million tokens: the
   * metering proxy prices every model request with them (workers/metering/). A model without a
   * price has an unknown cost, and a USD budget for a worker on it is refused at the plan gate.
   * Absent: none.
   */
  prices?: Record<string, ModelPrice>;
  /** Where Polly tells a human that something needs them or closed (brain/notify/). */
  notifications: {
    /** Slack-compatible incoming webhook: `{text, blocks}` is POSTed here; null for none. */
    webhook_url: string | null;
    /** Desktop notifications (notify-send on Linux, osascript on macOS) where available. */
    desktop: boolean;
    /** Milliseconds one webhook attempt may take (3 attempts in all). */
    timeout_ms: number;
    /** The `polly ui` dashboard's URL (e.g. http://127.0.0.1:8080 for `polly ui --port 8080`): notifications link to its pages; null: no links. */
    dashboard_url: string | null;
  };
  /** A pull request's life after ready (issue 16): its feedback goes back to the same worker session. */
  pr: {
    /**
     * Fix rounds after the PR is ready: every send-back to the worker (a change request, a failing
     * check, a conflict with the moved base, red re-tests, a blocking re-review) counts one; the
     * bound exhausted parks the task for a human (0-10, default 3; 0: every PR event parks).
     */
    max_fix_rounds: number;
  };
  /**
   * Where the durable runtime's runs live (docs/storage.md; brain/registry/run-storage.ts):
   * `lmdb`, the embedded store in `.polly/runs/` (default), or `postgres`, a PostgreSQL database
   * several Polly processes on several machines share. Optional for configs written before it.
   */
  runs?: {
    store: 'lmdb' | 'postgres';
    /** With `postgres`: the environment variable holding the connection URL (it may carry a password, so it never goes in this file). */
    url_env: string;
    /** With `postgres`: the schema (a lower-case SQL identifier) holding the tables, so several repositories can share a database. */
    schema: string;
  };
}

export type { ModelPrice };

/** A spending limit: USD (priced by Polly's metering proxy from config `prices`) and/or tokens (input incl. cache + output). */
export interface Budget {
  usd?: number | null;
  tokens?: number | null;
}

/** The defaults written by `polly init` (with comments) and used for any missing key. */
export const DEFAULT_CONFIG: PollyConfig = {
  version: 1,
  policies: structuredClone(DEFAULT_GATE_POLICY) as GatePolicy,
  workers: {
    'claude-code': { command: 'claude', model: 'claude-sonnet-4-5', allow_root_sandbox: false },
    codex: { command: 'codex', model: 'gpt-5-codex', provider: null },
    pi: { command: 'pi', model: null, provider: null, base_url: null, api: 'openai-completions', api_key_env: 'OPENAI_API_KEY' },
    allow_unconfined: false,
    env_passthrough: [],
    tool_paths: [],
    limits: { ...DEFAULT_RESOURCE_LIMITS },
    hosts: [],
    ssh_config: null,
    host_lease_seconds: DEFAULT_HOST_LEASE_SECONDS,
    local_fallback: false,
  },
  review: {
    pairs: {
      'claude-code': ['codex', 'pi'],
      codex: ['claude-code', 'pi'],
      pi: ['claude-code', 'codex'],
    },
    max_rounds: 2,
  },
  acceptance: { commands: ['npm test'], timeout: 600, max_attempts: 3, network: false, known_red: [] },
  worktrees: { dir: '.worktrees', setup: null, setup_network: false, protected_paths: [...DEFAULT_PROTECTED_PATHS] },
  forge: { kind: 'auto', github: { base_url: null, watch_seconds: 60, trusted_authors: [] } },
  intake: { label: 'polly', in_brain: false, watch_seconds: 60 },
  brain: { model: 'claude-sonnet-4-5', start_on_approve: false },
  budgets: { per_task: null, per_goal: null },
  prices: {},
  notifications: { webhook_url: null, desktop: true, timeout_ms: 5000, dashboard_url: null },
  pr: { max_fix_rounds: 3 },
  runs: { store: 'lmdb', url_env: 'POLLY_RUNS_URL', schema: 'polly' },
};
