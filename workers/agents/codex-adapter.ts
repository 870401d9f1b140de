/**
 * The Codex adapter: runs the real `codex` CLI (0.171.0) headless, one turn per run, and
 * normalises its `--json` event stream into {@link AgentEvent}s.
 *
 * Command line (flags confirmed with `codex exec --help` / `codex exec resume --help` of 0.171.0;
 * exec-level flags placed before `resume` apply to the resumed session too):
 *
 * ```
 * codex exec --json --skip-git-repo-check --sandbox workspace-write|read-only -C <cwd>
 *   -c approval_policy="never" [-m <model>]
 *   [-c model_providers.<id>={name="<id>", base_url="…", wire_api="responses", env_key="…"}
 *    -c model_provider="<id>"]
 *   <gate args…> [resume <session id>] -
 * ```
 *
 * The prompt goes on stdin (`-`), never in argv. `CODEX_HOME=<stateDir>/codex` keeps the
 * developer's own `~/.codex` untouched (sessions, config and logs of the worker live there).
 *
 * Sandbox: inside Polly's OS sandbox (workers/sandbox/) codex runs with `--sandbox
 * danger-full-access`: its own nested bubblewrap hangs inside an outer one, and the outer one
 * already confines it. Unconfined (`workers.allow_unconfined`), `workspace-write` lets codex's commands write the workspace (and /tmp) only; codex
 * mounts the workspace's `.git` (and a linked worktree's git dirs) read-only, so the agent cannot
 * commit (orchestration case 8 in test/workers/supervisor/orchestration-workers.test.ts: Polly commits afterwards) nor write `.git/hooks`; its apply_patch
 * refuses paths outside the writable roots ("patch rejected: writing outside of the project").
 * On Linux codex runs each command in its bundled bubblewrap (`codex-resources/bwrap`) under a
 * seccomp filter, with no network. Observed here, as root in a Firecracker VM (kernel 6.18): the
 * sandbox works — `/` read-only ("Read-only file system"), CapEff 0, NoNewPrivs 1, Seccomp 2,
 * loopback HTTP refused, /tmp writable. Where it cannot start, every command fails with a
 * bubblewrap error; the adapter then ends the run `agent_refused` with a message saying so (see
 * {@link sandboxFailure}) instead of reporting a puzzling red run.
 *
 * A tool call denied by a PreToolUse hook (the gate) produces no `item.*` event in codex's stream:
 * the model gets "Command blocked by PreToolUse hook: <reason>. Command: …" and the gate's journal
 * has the decision, but the adapter sees no `tool_call` for it. A call of a tool codex does not
 * declare produces none either (the model gets "unsupported call: <name>"): the adapter reads those
 * from codex's session file after the turn (./codex-rollout.ts) and adds them to the turn's events.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { readFileBelow } from './state-dir-files.js';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import type { AgentAdapter, AgentCliOptions, AgentEvent, AgentRun, AgentRunOptions } from './agent-adapter.js';
import { resolveAgentBinary } from './agent-binary.js';
import { findRolloutFile, undeclaredToolCalls } from './codex-rollout.js';
import { blockingSysctls } from '../sandbox/sandbox.js';
import { workerEnv } from '../sandbox/worker-env.js';
import { DEFAULT_PROMPT_PATTERNS, refusedRun, spawnAgentProcess, type AgentOutcome } from './agent-process.js';

/** `.polly/config.yaml` `workers.codex` (composed into the config schema by brain/config/config-schema.ts). */
export interface CodexOptions extends AgentCliOptions {
  /** Optional custom model provider: `model_providers.<id>` with a Responses-API base URL. */
  provider: { id: string; base_url: string; env_key: string } | null;
}

/** Options of {@link createCodexAdapter}: the worker config plus an explicit binary (tests). */
export type CodexAdapterConfig = CodexOptions & {
  /** The executable to run; default {@link resolveAgentBinary}`('codex', config)`. */
  binary?: string;
  /**
   * Retries of a failed model request/stream for the custom provider (codex's `request_max_retries`
   * and `stream_max_retries`; codex's default, about 25 s of retries, when absent).
   */
  maxRetries?: number;
};

const TOML_BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** A TOML basic string (JSON string escapes are valid TOML basic-string escapes for these values). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * Check a Codex worker config. Throws PollyError `config_invalid` naming the field and value when
 * the provider cannot be expressed as a `-c model_providers.<id>=…` override.
 */
export function validateCodexConfig(config: CodexOptions): void {
  const p = config.provider;
  if (!p) return;
  if (!TOML_BARE_KEY.test(p.id)) {
    throw new PollyError(
      'config_invalid',
      `workers.codex.provider.id "${p.id}" is not a valid provider id: use letters, digits, "_" or "-" (it becomes model_providers.<id> in codex's config)`,
    );
  }
  if (!/^https?:\/\//.test(p.base_url)) {
    throw new PollyError('config_invalid', `workers.codex.provider.base_url "${p.base_url}" is not an http(s) URL: set the Responses API base URL, e.g. http://127.0.0.1:8080/v1`);
  }
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(p.env_key)) {
    throw new PollyError('config_invalid', `workers.codex.provider.env_key "${p.env_key}" is not an environment variable name: name the variable that holds the API key`);
  }
}

/**
 * Codex's own `--sandbox` for a run: `danger-full-access` inside Polly's OS sandbox (codex's
 * nested bubblewrap hangs inside an outer one; Polly's sandbox already makes everything outside
 * the worktree read-only and hides the rest), else `workspace-write` (implement) or `read-only`,
 * where codex's sandbox is the only OS layer.
 */
export function codexSandboxMode(options: Pick<AgentRunOptions, 'readOnly' | 'sandbox'>): 'danger-full-access' | 'workspace-write' | 'read-only' {
  if (options.sandbox) return 'danger-full-access';
  return options.readOnly ? 'read-only' : 'workspace-write';
}

/**
 * The argv (after the binary) for one codex turn. Pure. `options.gate.args` go before the prompt
 * (and before `resume`), so they may be any `codex exec` flags (`-c hooks…`, `--dangerously-…`).
 */
export function codexArgs(
  options: Pick<AgentRunOptions, 'cwd' | 'model' | 'readOnly' | 'resumeSessionId' | 'gate' | 'sandbox'>,
  config: CodexOptions & { maxRetries?: number },
): string[] {
  const args = ['exec', '--json', '--skip-git-repo-check', '--sandbox', codexSandboxMode(options), '-C', options.cwd];
  // Never ask for approval (there is nobody to ask), and never wait forever for an unreachable
  // model endpoint: without this codex 0.171 retries "waiting for network" without end.
  args.push('-c', 'approval_policy="never"', '--disable', 'unbounded_connection_retries');
  const model = options.model ?? config.model;
  if (model) args.push('-m', model);
  const p = config.provider;
  if (p) {
    const n = config.maxRetries;
    const retries = n !== undefined && Number.isInteger(n) && n >= 0 ? `, request_max_retries=${n}, stream_max_retries=${n}` : '';
    args.push(
      '-c',
      `model_providers.${p.id}={name=${tomlString(p.id)}, base_url=${tomlString(p.base_url)}, wire_api="responses", env_key=${tomlString(p.env_key)}${retries}}`,
      '-c',
      `model_provider=${tomlString(p.id)}`,
    );
  }
  args.push(...options.gate.args);
  if (options.resumeSessionId) args.push('resume', options.resumeSessionId);
  args.push('-');
  return args;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function toolCallOf(item: Json): AgentEvent | null {
  const id = typeof item.id === 'string' ? item.id : null;
  switch (item.type) {
    case 'command_execution':
      return { type: 'tool_call', id, tool: 'shell', input: { command: str(item.command) } };
    case 'file_change':
      return { type: 'tool_call', id, tool: 'apply_patch', input: { changes: Array.isArray(item.changes) ? item.changes : [] } };
    case 'mcp_tool_call':
      return { type: 'tool_call', id, tool: `mcp__${str(item.server)}__${str(item.tool)}`, input: item.arguments ?? {} };
    case 'web_search':
      return { type: 'tool_call', id, tool: 'web_search', input: { query: str(item.query) } };
    default:
      return null;
  }
}

function toolResultOf(item: Json): AgentEvent | null {
  const id = typeof item.id === 'string' ? item.id : null;
  const status = str(item.status);
  switch (item.type) {
    case 'command_execution': {
      const exit = typeof item.exit_code === 'number' ? item.exit_code : null;
      return { type: 'tool_result', id, isError: status === 'failed' || status === 'declined' || (exit !== null && exit !== 0), output: str(item.aggregated_output) };
    }
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? item.changes : [];
      const summary = changes.map((c) => (isObject(c) ? `${str(c.kind)} ${str(c.path)}` : str(c))).join('\n');
      return { type: 'tool_result', id, isError: status !== 'completed', output: summary };
    }
    case 'mcp_tool_call': {
      const err = isObject(item.error) ? str(item.error.message) : str(item.error);
      return { type: 'tool_result', id, isError: status === 'failed' || err !== '', output: err || str(item.result) };
    }
    case 'web_search':
      return { type: 'tool_result', id, isError: false, output: '' };
    default:
      return null;
  }
}

/**
 * A parser for one run's `codex exec --json` lines (stateful: it remembers started items and the
 * last agent message). Event shapes (codex-rs `exec/src/exec_events.rs`, confirmed against 0.171.0
 * output captured by test/codex-adapter.test.ts):
 *
 * - `thread.started {thread_id}` → `session`
 * - `item.started {item}` of `command_execution {command}`, `file_change {changes:[{path, kind}]}`,
 *   `mcp_tool_call {server, tool, arguments}`, `web_search {query}` → `tool_call`
 * - `item.completed {item}`: the same types → `tool_result` (a `command_execution` is an error when
 *   `exit_code` ≠ 0 or `status` is `failed`/`declined`; a `file_change` when `status` ≠ `completed`),
 *   preceded by a `tool_call` if no `item.started` came; `agent_message {text}` → `text`;
 *   `error {message}` (codex's non-fatal notices, e.g. unknown model metadata) → `error`;
 *   `reasoning`, `todo_list` → nothing
 * - `turn.completed {usage: {input_tokens, cached_input_tokens, cache_write_input_tokens?, output_tokens, …}}` → a `turn`-scoped
 *   `usage` (input_tokens includes the cached ones; codex reports no cost, and usage only at turn end)
 *   (no cost: codex reports none) then `result {ok: true, text: last agent message}`
 * - `turn.failed {error: {message}}` → `error` then `result {ok: false}`; top-level `error {message}` → `error`
 * - anything else → `unknown`
 */
export function createCodexEventParser(): (json: unknown) => AgentEvent[] {
  const started = new Set<string>();
  let lastMessage = '';
  return (json) => {
    if (!isObject(json)) return [{ type: 'unknown', raw: json }];
    switch (json.type) {
      case 'thread.started':
        return typeof json.thread_id === 'string' ? [{ type: 'session', sessionId: json.thread_id }] : [{ type: 'unknown', raw: json }];
      case 'turn.started':
        lastMessage = '';
        return [];
      case 'item.started':
      case 'item.updated': {
        const item = isObject(json.item) ? json.item : null;
        if (!item) return [{ type: 'unknown', raw: json }];
        if (json.type === 'item.updated' || typeof item.id !== 'string' || started.has(item.id)) return [];
        const call = toolCallOf(item);
        if (!call) return item.type === 'todo_list' || item.type === 'reasoning' || item.type === 'agent_message' ? [] : [{ type: 'unknown', raw: json }];
        started.add(item.id);
        return [call];
      }
      case 'item.completed': {
        const item = isObject(json.item) ? json.item : null;
        if (!item) return [{ type: 'unknown', raw: json }];
        if (item.type === 'agent_message') {
          lastMessage = str(item.text);
          return [{ type: 'text', text: lastMessage }];
        }
        if (item.type === 'error') return [{ type: 'error', message: str(item.message) }];
        if (item.type === 'reasoning' || item.type === 'todo_list') return [];
        const result = toolResultOf(item);
        if (!result) return [{ type: 'unknown', raw: json }];
        const out: AgentEvent[] = [];
        if (typeof item.id !== 'string' || !started.has(item.id)) {
          const call = toolCallOf(item);
          if (call) out.push(call);
        }
        out.push(result);
        return out;
      }
      case 'turn.completed': {
        const usage = isObject(json.usage) ? json.usage : {};
        return [
          {
            type: 'usage',
            scope: 'turn',
            inputTokens: num(usage.input_tokens),
            outputTokens: num(usage.output_tokens),
            cacheReadTokens: typeof usage.cached_input_tokens === 'number' ? usage.cached_input_tokens : null,
            cacheWriteTokens: typeof usage.cache_write_input_tokens === 'number' ? usage.cache_write_input_tokens : null,
            costUsd: null,
          },
          { type: 'result', ok: true, text: lastMessage },
        ];
      }
      case 'turn.failed': {
        const message = isObject(json.error) ? str(json.error.message) : str(json.error);
        return [
          { type: 'error', message },
          { type: 'result', ok: false, text: message },
        ];
      }
      case 'error':
        return [{ type: 'error', message: str(json.message) }];
      default:
        return [{ type: 'unknown', raw: json }];
    }
  };
}

/** Output of a command whose sandbox could not be set up (bubblewrap, namespaces, landlock, seccomp). */
const SANDBOX_FAILURE =
  /bwrap: |bubblewrap is unavailable|error building bubblewrap command|No permissions to create new namespace|unprivileged_userns|Landlock (is )?not supported|failed to apply (landlock|seccomp)|sandbox (is )?unavailable|error (running|launching) (the )?(linux )?sandbox|codex-linux-sandbox/i;

/**
 * If codex's sandbox could not start here, a message saying so and what to do; otherwise null.
 * Looks at tool results: when every command failed and one of them carries a sandbox set-up error
 * (as printed by bubblewrap / codex's linux sandbox helper), the machine cannot run the sandbox.
 */
export function sandboxFailure(events: readonly AgentEvent[]): string | null {
  const results = events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
  const hit = results.find((r) => r.isError && SANDBOX_FAILURE.test(r.output));
  if (!hit) return null;
  if (results.some((r) => !r.isError && r.output !== '' && !SANDBOX_FAILURE.test(r.output))) return null;
  const line = hit.output.split('\n').find((l) => SANDBOX_FAILURE.test(l)) ?? hit.output.slice(0, 200);
  const sysctls = blockingSysctls();
  return (
    `codex's own sandbox cannot run here, so its commands fail: "${line.trim()}". ` +
    "Codex runs its own sandbox only where Polly's is off (workers.allow_unconfined). Install bubblewrap (`apt-get install bubblewrap`) so that Polly's sandbox runs codex, " +
    "and keep codex's state (CODEX_HOME) outside the OS temp dir (codex refuses to start its helper there; Polly keeps it under $XDG_STATE_HOME/polly/)" +
    (sysctls.length > 0 ? `; this kernel also blocks user namespaces: \`sysctl -w ${sysctls.join(' ')}\`.` : '.')
  );
}

/**
 * Why codex would have no credentials for its model, or null. Without credentials codex 0.171 does
 * not stop: it keeps sending unauthenticated requests, so the adapter refuses up front.
 */
export function credentialsProblem(config: CodexOptions, env: Record<string, string>, codexHome: string): string | null {
  const p = config.provider;
  if (p) {
    return env[p.env_key]
      ? null
      : `codex's provider "${p.id}" reads its API key from $${p.env_key}, which is not set for the worker: set ${p.env_key} in Polly's environment (a dummy value for a local server)`;
  }
  if (env.OPENAI_API_KEY || env.CODEX_API_KEY || existsSync(join(codexHome, 'auth.json'))) return null;
  return (
    `codex has no credentials: the worker's CODEX_HOME (${codexHome}) has no auth.json and neither OPENAI_API_KEY nor CODEX_API_KEY is set. ` +
    `Set one of them in Polly's environment, run \`CODEX_HOME=${codexHome} codex login\` once, or configure workers.codex.provider in .polly/config.yaml`
  );
}

/**
 * The runner's prompt patterns, except on codex's own log lines (`2026-…Z ERROR codex_core…`):
 * codex logs every command a hook blocked to stderr, and a command text such as "Do you want to"
 * must not make a busy run look like one waiting on a prompt.
 */
export const CODEX_PROMPT_PATTERNS: readonly RegExp[] = DEFAULT_PROMPT_PATTERNS.map(
  (p) => new RegExp(`^(?!\\d{4}-\\d\\d-\\d\\dT\\S+\\s+(?:ERROR|WARN|INFO|DEBUG|TRACE)\\b)[^\\n]*?(?:${p.source})`, p.flags.includes('m') ? p.flags : `${p.flags}m`),
);

/** Env var names whose values are secrets, redacted from everything a run reports. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|AUTH/i;

/**
 * Create the Codex adapter. `config` is `workers.codex` of `.polly/config.yaml` (plus `binary` to
 * force an executable). Throws PollyError `config_invalid` for a provider codex cannot take.
 *
 * `start(options)` runs one turn (a new session, or `resume` of `options.resumeSessionId`) in
 * `options.cwd` with `CODEX_HOME=<options.stateDir>/codex`, `options.gate.args` on the command line
 * and `options.env` then `options.gate.env` (the gate wins) over the scrubbed process env. The run ends `ok` when codex
 * completed its turn and exited 0; see {@link AgentRunStatus} for the rest.
 */
export function createCodexAdapter(config: CodexAdapterConfig): AgentAdapter {
  validateCodexConfig(config);
  return {
    harness: 'codex',
    vendor: 'openai',
    start(options: AgentRunOptions): AgentRun {
      // The gate's env (e.g. PATH with the git/gh shims first) wins over the caller's.
      const home = join(options.stateDir, 'home');
      const env = workerEnv({ ...options.env, ...options.gate.env }, { home, passthrough: config.provider ? [config.provider.env_key] : [] });
      const command = config.binary ?? resolveAgentBinary('codex', config, env);
      const args = codexArgs(options, config);
      const codexHome = join(options.stateDir, 'codex');
      try {
        mkdirSync(codexHome, { recursive: true });
        mkdirSync(home, { recursive: true });
      } catch (error) {
        return refusedRun('agent_exited', `cannot create the codex state directory ${codexHome}: ${(error as Error).message}`, [command, ...args], options.onEvent);
      }
      env.CODEX_HOME = codexHome;
      const missingCredentials = credentialsProblem(config, env, codexHome);
      if (missingCredentials) return refusedRun('agent_refused', missingCredentials, [command, ...args], options.onEvent);
      const redact = Object.entries({ ...options.env, ...options.gate.env })
        .filter(([k, v]) => SECRET_NAME.test(k) && v.length >= 4)
        .map(([, v]) => v);
      const parse = createCodexEventParser();
      const startedAt = new Date(Date.now() - 1000).toISOString();
      const run = spawnAgentProcess({
        command,
        args,
        cwd: options.cwd,
        env,
        stdin: options.prompt,
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
        parseLine: (json) => parse(json),
        redact,
        promptPatterns: CODEX_PROMPT_PATTERNS,
        sandbox: options.sandbox ?? null,
        classify: (outcome: AgentOutcome) => {
          if (outcome.status !== 'ok') return null;
          const sandbox = sandboxFailure(outcome.events);
          return sandbox ? { status: 'agent_refused', message: sandbox } : null;
        },
      });
      // Calls of tools codex does not declare are only in its session file (./codex-rollout.ts):
      // added to the turn's events (and its stream) once the process has exited.
      return {
        ...run,
        result: run.result.then((r) => {
          const file = r.sessionId ? findRolloutFile(codexHome, r.sessionId) : null;
          if (!file) return r;
          // CODEX_HOME is the worker's to write: its rollout may have become a symlink (to a
          // secret, /dev/zero) or a FIFO that would block this read forever. Read only a regular
          // file reached through real directories, never following a link (./state-dir-files.ts).
          const text = readFileBelow(codexHome, file);
          if (text === null) return r;
          const extra: AgentEvent[] = undeclaredToolCalls(text, startedAt);
          for (const e of extra) options.onEvent?.(e);
          return extra.length > 0 ? { ...r, events: [...r.events, ...extra] } : r;
        }),
      };
    },
  };
}
