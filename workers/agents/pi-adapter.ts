/**
 * The pi adapter: runs the real `pi` CLI (@mariozechner/pi-coding-agent 0.73.1) headless in JSON
 * event-stream mode with the gate extension, and normalises its events into {@link AgentEvent}s.
 *
 * Command line (sources: `pi --help`, package docs/json.md, docs/models.md, docs/sessions.md):
 *
 *   pi --mode json --no-extensions <gate args: -e <gate extension>> --session-dir <state>/pi/sessions
 *      [--session <state>/pi/sessions/<ts>_<id>.jsonl] [--provider <p>] [--model <m>]
 *      [--tools read,ls(,grep,find)]         # read-only purposes (grep/find when rg/fd exist)
 *   stdin: the prompt                       # never argv: a prompt starting with "@" or "-" would be
 *                                           # read by pi as a file argument or a flag
 *
 * - `--mode json` prints the session header line first (`{"type":"session","id":…}`), then every
 *   agent event as one JSON line, and exits when the prompt is done. It exits 0 even when the model
 *   call failed, so the adapter classifies the run from the final assistant message instead.
 * - `--no-extensions` turns off extension discovery (global, project `.pi/extensions`, packages);
 *   explicit `-e` paths still load, and a missing `-e` file makes pi exit 1 before any model call
 *   (fail closed: no run without its gate).
 * - Sessions live in the worker's state dir; a follow-up resumes by the session file's absolute
 *   path (pi silently starts a NEW session for a path that does not exist, so the adapter checks
 *   first and refuses with a clear message instead).
 * - Isolation: `PI_CODING_AGENT_DIR=<stateDir>/pi` (models.json, settings.json, auth.json live
 *   there, never in the developer's ~/.pi), `PI_OFFLINE=1` (no update checks, telemetry or tool
 *   downloads at start-up).
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensureDirBelow, readFileBelow, writeFileBelow } from './state-dir-files.js';
import type { AgentAdapter, AgentCliOptions, AgentEvent, AgentRun, AgentRunOptions } from './agent-adapter.js';
import { findOnPath, resolveAgentBinary } from './agent-binary.js';
import { workerEnv } from '../sandbox/worker-env.js';
import { refusedRun, spawnAgentProcess, type AgentOutcome } from './agent-process.js';

/** pi's built-in read-only tools (`pi --help`: "Read-only mode … --tools read,grep,find,ls"). */
export const PI_READ_ONLY_TOOLS = ['read', 'grep', 'find', 'ls'] as const;

/**
 * The read-only tools that work here. pi's `grep` runs ripgrep (`rg`) and `find` runs `fd`
 * (`fd`/`fdfind`), looked up in `<agentDir>/bin` then on PATH (dist/utils/tools-manager.js); with
 * `PI_OFFLINE=1` pi does not download them, so a tool whose binary is missing would only ever
 * answer "not available": it is left out and the model is offered `read` and `ls` instead.
 */
export function piReadOnlyTools(agentDir: string, pathVar: string | undefined): string[] {
  const has = (...names: string[]) => names.some((n) => existsSync(join(agentDir, 'bin', n)) || findOnPath(n, pathVar) !== null);
  return PI_READ_ONLY_TOOLS.filter((t) => (t === 'grep' ? has('rg') : t === 'find' ? has('fd', 'fdfind') : true));
}

/**
 * A custom model provider written to `<PI_CODING_AGENT_DIR>/models.json` as
 * `providers[<provider id>]` (schema: pi docs/models.md "Provider Configuration").
 */
export interface PiCustomProvider {
  /** API endpoint including the version prefix, e.g. `http://127.0.0.1:41234/v1`. */
  baseUrl: string;
  /** pi API type; default `openai-completions` (OpenAI chat completions). */
  api?: 'openai-completions' | 'openai-responses' | 'anthropic-messages';
  /** NAME of the environment variable holding the API key (pi resolves it at request time). */
  apiKeyEnv: string;
  /** Model ids served by the provider; the first is the default model. */
  models: string[];
}

/** `.polly/config.yaml` `workers.pi` (composed into the config schema by brain/config/config-schema.ts). */
export interface PiOptions extends AgentCliOptions {
  /** Provider name in pi's models.json (e.g. `anthropic`, or a custom gateway). */
  provider: string | null;
  /**
   * A custom endpoint: when set, Polly writes a provider (named `provider`, default `polly`) with
   * this `baseUrl` into the worker's own models.json (e.g. `http://127.0.0.1:8080/v1`). Optional
   * for configs written before it existed; null: pi's built-in providers.
   */
  base_url?: string | null;
  /** The custom endpoint's API (pi's `api` type). Default `openai-completions`. */
  api?: 'openai-completions' | 'openai-responses' | 'anthropic-messages';
  /** NAME of the environment variable holding the custom endpoint's API key. Default `OPENAI_API_KEY`. */
  api_key_env?: string;
}

/** Adapter configuration: `.polly/config.yaml` `workers.pi` plus wiring only code can supply. */
export interface PiAdapterConfig extends PiOptions {
  /** The executable to run; default {@link resolveAgentBinary}`('pi', config)`. */
  binary?: string;
  /** Define `provider` (default id `polly`) in the worker's models.json. */
  customProvider?: PiCustomProvider | null;
}

/** Where one worker's pi files live under its state dir. */
export function piWorkerPaths(stateDir: string): { agentDir: string; sessionsDir: string } {
  const agentDir = join(stateDir, 'pi');
  return { agentDir, sessionsDir: join(agentDir, 'sessions') };
}

/**
 * The session file of session `id` in `sessionsDir` (pi names them `<timestamp>_<id>.jsonl`,
 * source: dist/core/session-manager.js `newSession`), or null when there is none.
 */
export function findPiSessionFile(sessionsDir: string, id: string): string | null {
  if (!/^[\w-]+$/.test(id) || !existsSync(sessionsDir)) return null;
  const name = readdirSync(sessionsDir).find((f) => f.endsWith(`_${id}.jsonl`));
  return name ? join(sessionsDir, name) : null;
}

/** Written outside the sandbox in a dir the worker writes: never through a symlink (state-dir-files.ts). */
function writeJsonAtomic(root: string, path: string, value: unknown): void {
  writeFileBelow(root, path, `${JSON.stringify(value, null, 2)}\n`);
}

function readJsonObject(root: string, path: string): Record<string, unknown> {
  try {
    const value = JSON.parse(readFileBelow(root, path) ?? '{}') as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Write the worker's pi config: models.json with the custom provider (when configured) and
 * settings.json with a quiet start-up and no install telemetry (keys pi or a user added are kept).
 */
export function writePiAgentConfig(agentDir: string, provider: string, custom: PiCustomProvider | null): void {
  // The worker's state dir (a bind mount the worker cannot replace); everything below it is the worker's to plant.
  const root = dirname(agentDir);
  ensureDirBelow(root, agentDir);
  const settingsPath = join(agentDir, 'settings.json');
  writeJsonAtomic(root, settingsPath, { ...readJsonObject(root, settingsPath), quietStartup: true, enableInstallTelemetry: false });
  if (!custom) return;
  const modelsPath = join(agentDir, 'models.json');
  const current = readJsonObject(root, modelsPath);
  const providers = (current.providers && typeof current.providers === 'object' ? current.providers : {}) as Record<string, unknown>;
  providers[provider] = {
    baseUrl: custom.baseUrl,
    api: custom.api ?? 'openai-completions',
    apiKey: custom.apiKeyEnv,
    models: custom.models.map((id) => ({ id, name: id, reasoning: false, input: ['text'], contextWindow: 128000, maxTokens: 16384 })),
  };
  writeJsonAtomic(root, modelsPath, { ...current, providers });
}

interface PiContentBlock {
  type?: string;
  text?: string;
}

interface PiMessage {
  role?: string;
  content?: PiContentBlock[] | string;
  stopReason?: string;
  errorMessage?: string;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; cost?: { total?: number } };
}

function textOf(content: PiMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b) => b && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('');
}

function failed(message: PiMessage): boolean {
  return message.stopReason === 'error' || message.stopReason === 'aborted';
}

/** pi event types that carry nothing the normalised stream needs (their content arrives elsewhere). */
const QUIET_TYPES = new Set([
  'agent_start',
  'turn_start',
  'turn_end',
  'message_start',
  'message_update',
  'tool_execution_update',
  'queue_update',
  'compaction_start',
  'compaction_end',
  'auto_retry_end',
]);

/**
 * The events with every usage cost set to null (unknown). For a custom provider Polly writes into
 * models.json without `cost`, whose prices pi then takes as zero (pi docs/models.md: `cost` defaults
 * to all zeros): pi's reported 0 is no cost figure at all.
 */
export function withoutCost(events: AgentEvent[]): AgentEvent[] {
  return events.map((e) => (e.type === 'usage' ? { ...e, costUsd: null } : e));
}

/**
 * Normalise one line of `pi --mode json` output (pure; event shapes: pi docs/json.md and
 * pi-agent-core `AgentEvent`, confirmed against pi 0.73.1 runs):
 *
 * - `{"type":"session","id"}` (the header line) → `session`
 * - `message_end` of an `assistant` message → `text` (its text blocks, if any), a `call`-scoped `usage`
 *   (`input + cacheRead + cacheWrite` tokens in, `output` out, `cost.total` USD), and `error`
 *   when `stopReason` is `error`/`aborted` (`errorMessage`)
 * - `tool_execution_start {toolCallId, toolName, args}` → `tool_call`
 * - `tool_execution_end {toolCallId, result: {content}, isError}` → `tool_result` (a gate block
 *   arrives here: `isError: true`, the reason as the text)
 * - `agent_end {messages}` → `result` from the last assistant message (ok unless it failed). pi
 *   retries failed model calls (`auto_retry_start`, then a new `agent_start` … `agent_end`), so a
 *   run may hold several results: the last one counts.
 * - `auto_retry_start` → `error` (what failed, which attempt)
 * - lifecycle and streaming events (`agent_start`, `turn_*`, `message_start/update`, …) → nothing
 * - anything else → `unknown`
 */
export function parsePiEvent(json: unknown): AgentEvent[] {
  if (!json || typeof json !== 'object') return [{ type: 'unknown', raw: json }];
  const e = json as Record<string, unknown>;
  const type = e.type;
  if (type === 'session' && typeof e.id === 'string') return [{ type: 'session', sessionId: e.id }];
  if (typeof type === 'string' && QUIET_TYPES.has(type)) return [];
  if (type === 'message_end') {
    const m = (e.message ?? {}) as PiMessage;
    if (m.role !== 'assistant') return [];
    const out: AgentEvent[] = [];
    const text = textOf(m.content);
    if (text) out.push({ type: 'text', text });
    if (m.usage) {
      const u = m.usage;
      const inputTokens = (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0);
      out.push({
        type: 'usage',
        scope: 'call',
        inputTokens,
        outputTokens: u.output ?? 0,
        cacheReadTokens: typeof u.cacheRead === 'number' ? u.cacheRead : null,
        cacheWriteTokens: typeof u.cacheWrite === 'number' ? u.cacheWrite : null,
        costUsd: typeof u.cost?.total === 'number' ? u.cost.total : null,
      });
    }
    if (failed(m)) out.push({ type: 'error', message: m.errorMessage ?? `the model call ended with stopReason "${m.stopReason}"` });
    return out;
  }
  if (type === 'tool_execution_start') {
    return [{ type: 'tool_call', id: typeof e.toolCallId === 'string' ? e.toolCallId : null, tool: String(e.toolName ?? ''), input: e.args }];
  }
  if (type === 'tool_execution_end') {
    const result = (e.result ?? {}) as PiMessage;
    return [{ type: 'tool_result', id: typeof e.toolCallId === 'string' ? e.toolCallId : null, isError: e.isError === true, output: textOf(result.content) }];
  }
  if (type === 'agent_end') {
    const messages = Array.isArray(e.messages) ? (e.messages as PiMessage[]) : [];
    const last = [...messages].reverse().find((m) => m && m.role === 'assistant');
    if (!last) return [{ type: 'result', ok: false, text: 'pi ended the turn without an assistant message' }];
    if (failed(last)) return [{ type: 'result', ok: false, text: last.errorMessage ?? `stopReason ${last.stopReason}` }];
    return [{ type: 'result', ok: true, text: textOf(last.content) }];
  }
  if (type === 'auto_retry_start') {
    return [{ type: 'error', message: `pi retries the model call (attempt ${String(e.attempt)} of ${String(e.maxAttempts)}): ${String(e.errorMessage ?? '')}` }];
  }
  return [{ type: 'unknown', raw: json }];
}

/**
 * Refine the process runner's classification: pi exits 0 after a failed model call, so an exit 0
 * is `ok` only when the LAST `result` is ok (earlier ones may be attempts pi retried).
 */
function classifyPi(outcome: AgentOutcome, agentDir: string): { status: 'ok' | 'agent_exited'; message: string } | null {
  if (outcome.exitCode !== 0 || outcome.signal !== null) return null;
  if (outcome.status !== 'ok' && outcome.status !== 'agent_exited') return null;
  const results = outcome.events.filter((e): e is Extract<AgentEvent, { type: 'result' }> => e.type === 'result');
  const last = results[results.length - 1];
  if (!last) return null;
  if (last.ok) return { status: 'ok', message: '' };
  return {
    status: 'agent_exited',
    message:
      `pi finished without a usable answer: ${last.text.slice(0, 500)}. ` +
      `Check the model provider (baseUrl and API key in ${join(agentDir, 'models.json')}, or the provider's key in the environment).`,
  };
}

/**
 * Keys of a project `.pi/settings.json` (read by pi from `<cwd>/.pi/settings.json`, project over
 * global: pi docs/settings.md) that change what runs for every bash call outside the gate's view:
 * the gate extension sees the model's command, not a prefix or another shell.
 */
export const PI_UNSAFE_PROJECT_SETTINGS = ['shellPath', 'shellCommandPrefix', 'npmCommand'] as const;

/** The unsafe keys `<cwd>/.pi/settings.json` sets (empty when there is no such file or it is not JSON). */
export function unsafePiProjectSettings(cwd: string): string[] {
  const settings = readJsonObject(cwd, join(cwd, '.pi', 'settings.json'));
  return PI_UNSAFE_PROJECT_SETTINGS.filter((k) => settings[k] !== undefined);
}

const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|AUTH/i;

/**
 * Create the pi adapter.
 *
 * `start(options)` runs one turn: the prompt on stdin, `options.gate.args` (e.g. `-e <gate
 * extension>`) and `options.gate.env` added, `options.readOnly` → `--tools` {@link piReadOnlyTools},
 * `options.resumeSessionId` → `--session <that session's file>`. The model is `options.model`,
 * else `config.model`, else the custom provider's first model; the provider is `config.provider`
 * (default `polly` when a custom provider is configured). Resuming a session this worker's state
 * dir does not hold ends at once as `agent_exited` with a message naming the session and the dir;
 * a worktree whose `.pi/settings.json` sets a key of {@link PI_UNSAFE_PROJECT_SETTINGS} ends at
 * once as `agent_refused`, and so does a custom provider whose `apiKeyEnv` is not in the
 * worker's environment.
 */
export function createPiAdapter(config: PiAdapterConfig): AgentAdapter {
  return {
    harness: 'pi',
    vendor: 'pi',
    start(options: AgentRunOptions): AgentRun {
      const binary = config.binary ?? resolveAgentBinary('pi', config);
      const { agentDir, sessionsDir } = piWorkerPaths(options.stateDir);
      const custom = config.customProvider ?? null;
      const provider = config.provider ?? (custom ? 'polly' : null);
      const model = options.model ?? config.model ?? custom?.models[0] ?? null;

      const args = ['--mode', 'json', '--no-extensions', ...options.gate.args, '--session-dir', sessionsDir];
      const unsafe = unsafePiProjectSettings(options.cwd);
      if (unsafe.length > 0) {
        return refusedRun(
          'agent_refused',
          `${join(options.cwd, '.pi', 'settings.json')} sets ${unsafe.join(', ')}, which pi applies to every bash command outside the gate's view: ` +
            'remove those keys from the project settings (commit the change), then dispatch again.',
          [binary, ...args],
          options.onEvent,
        );
      }
      if (options.resumeSessionId) {
        const file = findPiSessionFile(sessionsDir, options.resumeSessionId);
        if (!file) {
          return refusedRun(
            'agent_exited',
            `pi session "${options.resumeSessionId}" is not in ${sessionsDir}: a follow-up must resume the session the worker started there ` +
              '(its id is the first "session" event of that run). Start a new session (resumeSessionId: null) if it was lost.',
            [binary, ...args],
            options.onEvent,
          );
        }
        args.push('--session', file);
      }
      if (provider) args.push('--provider', provider);
      if (model) args.push('--model', model);

      try {
        mkdirSync(sessionsDir, { recursive: true });
        writePiAgentConfig(agentDir, provider ?? 'polly', custom);
      } catch (error) {
        return refusedRun('agent_exited', `could not write pi's config in ${agentDir}: ${(error as Error).message}`, [binary, ...args], options.onEvent);
      }

      const extra: Record<string, string> = { ...options.env, ...options.gate.env };
      const home = join(options.stateDir, 'home');
      mkdirSync(home, { recursive: true });
      const env = workerEnv(
        {
          ...extra,
          PI_CODING_AGENT_DIR: agentDir,
          PI_OFFLINE: '1',
          PI_SKIP_VERSION_CHECK: '1',
          PI_TELEMETRY: '0',
        },
        { home, passthrough: custom ? [custom.apiKeyEnv] : [] },
      );
      delete env.PI_CODING_AGENT_SESSION_DIR;
      if (options.readOnly) args.push('--tools', piReadOnlyTools(agentDir, env.PATH).join(','));
      if (custom && !env[custom.apiKeyEnv]) {
        // pi would send the variable's NAME as the key (models.json falls back to the literal).
        return refusedRun(
          'agent_refused',
          `the worker environment has no ${custom.apiKeyEnv}, the API key of pi's provider "${provider}" (${custom.baseUrl}): set it in the worker's env, then dispatch again.`,
          [binary, ...args],
          options.onEvent,
        );
      }
      const redact = Object.entries(extra)
        .filter(([k, v]) => SECRET_NAME.test(k) && v.length >= 4)
        .map(([, v]) => v);
      if (custom && env[custom.apiKeyEnv]) redact.push(env[custom.apiKeyEnv]!);

      return spawnAgentProcess({
        command: binary,
        args,
        cwd: options.cwd,
        env,
        stdin: options.prompt,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        // A provider Polly writes has no prices, so pi reports a cost of 0 for it: that is not a cost, it is unknown.
        parseLine: (json) => (custom ? withoutCost(parsePiEvent(json)) : parsePiEvent(json)),
        redact,
        onEvent: options.onEvent,
        classify: (outcome) => classifyPi(outcome, agentDir),
        sandbox: options.sandbox ?? null,
      });
    },
  };
}
