/**
 * The Claude Code adapter: runs the real `claude` CLI headless through its stream-json output
 * and normalises what it emits into {@link AgentEvent}s.
 *
 * Command line (flags from `claude --help`, Claude Code 2.1.197):
 * `claude -p --output-format stream-json --verbose --input-format text
 *   --permission-mode bypassPermissions --strict-mcp-config --mcp-config <file>
 *   [--model M] [--resume <session>] [--tools Read,Grep,Glob,Bash --disallowedTools …] <gate args>`
 * with the prompt on stdin (never a TTY).
 *
 * Environment (by allowlist, workers/sandbox/worker-env.ts; never the developer's own Claude
 * config): `HOME=<stateDir>/home`, `CLAUDE_CONFIG_DIR=<stateDir>/claude`
 * (sessions live there, so a resume needs the same stateDir and cwd), `DISABLE_AUTOUPDATER=1`,
 * `DISABLE_TELEMETRY=1`, `DISABLE_ERROR_REPORTING=1`, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`,
 * then `options.env` (e.g. `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`), then the gate's env.
 *
 * Root: Claude Code refuses `bypassPermissions` as root ("--dangerously-skip-permissions cannot
 * be used with root/sudo privileges") unless `IS_SANDBOX=1`. The adapter sets it only when the
 * config says `allow_root_sandbox: true`; otherwise a run as root ends `agent_refused` before
 * anything is spawned, saying how to enable it.
 */
import { mkdirSync } from 'node:fs';
import { ensureDirBelow, isFileBelow, writeFileBelow } from './state-dir-files.js';
import { join } from 'node:path';
import type { AgentAdapter, AgentCliOptions, AgentEvent, AgentRun, AgentRunOptions, AgentRunStatus } from './agent-adapter.js';
import { resolveAgentBinary } from './agent-binary.js';
import { refusedRun, spawnAgentProcess, type AgentOutcome } from './agent-process.js';
import { claudeCodeEnv, isRootRefusal, secretsIn } from './claude-code-env.js';

/** `.polly/config.yaml` `workers.claude-code` (composed into the config schema by brain/config/config-schema.ts). */
export interface ClaudeCodeOptions extends AgentCliOptions {
  /**
   * Claude Code refuses `--permission-mode bypassPermissions` as root unless `IS_SANDBOX=1`.
   * Polly sets `IS_SANDBOX=1` for its workers only when this is true (you assert the machine is a
   * sandbox); otherwise a worker started as root fails with a clear `agent_refused` error.
   */
  allow_root_sandbox: boolean;
}

export interface ClaudeCodeAdapterConfig extends ClaudeCodeOptions {
  /** The executable to run; overrides `command` resolution (tests point it at fakes). */
  binary?: string;
  /** Path to an MCP config JSON (`{"mcpServers": {…}}`) for this worker; default: no MCP servers. */
  mcpConfig?: string;
}

/** Tools a read-only worker (review, explore, search) keeps; Bash stays, limited by the gate's read-only role. */
export const CLAUDE_READ_ONLY_TOOLS = ['Read', 'Grep', 'Glob', 'Bash'] as const;
/** Tools a read-only worker is denied outright (in case `--tools` is ignored by a future CLI). */
export const CLAUDE_WRITE_TOOLS = ['Write', 'Edit', 'MultiEdit', 'NotebookEdit'] as const;

const NOT_LOGGED_IN = /not logged in|please run \/login|invalid api key/i;

/** The message of a root run without `allow_root_sandbox`. */
export function rootRefusalMessage(): string {
  return (
    'Claude Code refuses --permission-mode bypassPermissions when run as root unless IS_SANDBOX=1 is set, ' +
    'and Polly sets IS_SANDBOX=1 only when you declare this machine a sandbox. ' +
    'Either run Polly as a non-root user, or set `workers: {claude-code: {allow_root_sandbox: true}}` in .polly/config.yaml ' +
    '(only on a disposable machine or container).'
  );
}

interface ClaudeBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | ClaudeBlock[];
  is_error?: boolean;
}

function blockText(content: string | ClaudeBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('');
}

/**
 * Normalise one line of `claude -p --output-format stream-json --verbose`:
 * `system/init` → session; `system/api_retry` → error (the run goes on); `assistant` text → text,
 * tool_use → tool_call, its `message.usage` → a `call`-scoped usage (tokens, no cost); `user` tool_result →
 * tool_result; `result` → a `turn`-scoped usage (tokens incl. cache, `total_cost_usd`) and result (ok unless
 * `is_error` or a non-success subtype). Anything else → `unknown`.
 */
export function parseClaudeStreamLine(json: unknown): AgentEvent[] {
  const j = json as Record<string, unknown> | null;
  if (!j || typeof j !== 'object') return [{ type: 'unknown', raw: json }];
  if (j.type === 'system' && j.subtype === 'init' && typeof j.session_id === 'string') {
    return [{ type: 'session', sessionId: j.session_id }];
  }
  if (j.type === 'system' && j.subtype === 'api_retry') {
    // The model API failed and claude retries with backoff (up to CLAUDE_CODE_MAX_RETRIES, default 10).
    const status = j.error_status === null || j.error_status === undefined ? '' : ` status ${String(j.error_status)}`;
    return [{ type: 'error', message: `model API error${status} (${String(j.error ?? 'unknown')}); claude retries: attempt ${String(j.attempt)} of ${String(j.max_retries)}` }];
  }
  if (j.type === 'assistant' || j.type === 'user') {
    const message = j.message as { content?: string | ClaudeBlock[] } | undefined;
    const content = message?.content;
    if (!Array.isArray(content)) return [];
    const out: AgentEvent[] = [];
    const callUsage = j.type === 'assistant' ? (j.message as { id?: unknown; usage?: Record<string, unknown> } | undefined) : undefined;
    if (callUsage?.usage && typeof callUsage.usage === 'object') {
      // Per model call, while the turn runs (no cost: claude prices the turn only in `result`). The
      // stream carries the message_start usage: input tokens are final, output_tokens is 1 (seen
      // with claude 2.1.x against the scripted model); the `result` figures supersede these.
      const u = callUsage.usage;
      const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
      out.push({
        type: 'usage',
        scope: 'call',
        callId: typeof callUsage.id === 'string' ? callUsage.id : null,
        inputTokens: num(u.input_tokens) + num(u.cache_read_input_tokens) + num(u.cache_creation_input_tokens),
        outputTokens: num(u.output_tokens),
        cacheReadTokens: typeof u.cache_read_input_tokens === 'number' ? u.cache_read_input_tokens : null,
        cacheWriteTokens: typeof u.cache_creation_input_tokens === 'number' ? u.cache_creation_input_tokens : null,
        costUsd: null,
      });
    }
    for (const b of content) {
      if (b.type === 'text' && j.type === 'assistant' && b.text) out.push({ type: 'text', text: b.text });
      else if (b.type === 'tool_use') out.push({ type: 'tool_call', id: b.id ?? null, tool: b.name ?? '', input: b.input ?? {} });
      else if (b.type === 'tool_result') {
        out.push({ type: 'tool_result', id: b.tool_use_id ?? null, isError: b.is_error === true, output: blockText(b.content) });
      }
    }
    return out;
  }
  if (j.type === 'result') {
    const usage = (j.usage ?? {}) as Record<string, unknown>;
    const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
    const errors = Array.isArray(j.errors) ? (j.errors as unknown[]).map(String).join('; ') : '';
    const text = typeof j.result === 'string' ? j.result : errors || String(j.subtype ?? '');
    return [
      {
        type: 'usage',
        scope: 'turn',
        inputTokens: n(usage.input_tokens) + n(usage.cache_read_input_tokens) + n(usage.cache_creation_input_tokens),
        outputTokens: n(usage.output_tokens),
        cacheReadTokens: typeof usage.cache_read_input_tokens === 'number' ? usage.cache_read_input_tokens : null,
        cacheWriteTokens: typeof usage.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : null,
        costUsd: typeof j.total_cost_usd === 'number' ? j.total_cost_usd : null,
      },
      { type: 'result', ok: j.is_error !== true && (j.subtype === undefined || j.subtype === 'success'), text },
    ];
  }
  return [{ type: 'unknown', raw: json }];
}

/** The argv (after the binary) for one run. */
export function claudeArgs(config: ClaudeCodeAdapterConfig, options: AgentRunOptions, mcpConfigPath: string): string[] {
  const args = [
    '-p',
    '--output-format',
    'stream-json',
    '--verbose',
    '--input-format',
    'text',
    '--permission-mode',
    'bypassPermissions',
    '--strict-mcp-config',
    '--mcp-config',
    config.mcpConfig ?? mcpConfigPath,
  ];
  const model = options.model ?? config.model;
  if (model) args.push('--model', model);
  if (options.resumeSessionId) args.push('--resume', options.resumeSessionId);
  if (options.readOnly) args.push('--tools', CLAUDE_READ_ONLY_TOOLS.join(','), '--disallowedTools', CLAUDE_WRITE_TOOLS.join(','));
  args.push(...options.gate.args);
  return args;
}

/**
 * Prepare `<stateDir>/claude` as CLAUDE_CONFIG_DIR: a minimal `.claude.json` marking onboarding
 * done (so no first-run screen can ever wait for input) and an empty MCP config. Idempotent;
 * never overwrites what Claude Code has written since.
 */
export function prepareClaudeConfigDir(stateDir: string): { configDir: string; emptyMcpConfig: string } {
  // Written outside the sandbox in a dir the worker writes between turns: never through a symlink it
  // planted (workers/agents/state-dir-files.ts); a symlink in place of a file reads as absent and is replaced.
  const configDir = join(stateDir, 'claude');
  ensureDirBelow(stateDir, configDir);
  const settings = join(configDir, '.claude.json');
  if (!isFileBelow(stateDir, settings)) {
    writeFileBelow(stateDir, settings, `${JSON.stringify({ hasCompletedOnboarding: true, bypassPermissionsModeAccepted: true, autoUpdates: false }, null, 2)}\n`);
  }
  const emptyMcpConfig = join(configDir, 'polly-empty-mcp.json');
  if (!isFileBelow(stateDir, emptyMcpConfig)) writeFileBelow(stateDir, emptyMcpConfig, '{"mcpServers": {}}\n');
  return { configDir, emptyMcpConfig };
}

/**
 * Claude-specific end states: its root refusal on stderr, and "Not logged in" (a result with
 * `is_error`), both `agent_refused` with what to do next.
 */
export function classifyClaudeOutcome(outcome: AgentOutcome): { status: AgentRunStatus; message: string } | null {
  if (outcome.status !== 'agent_exited') return null;
  if (isRootRefusal(outcome.stderr)) {
    return { status: 'agent_refused', message: `${rootRefusalMessage()} (claude said: ${outcome.stderr.trim().split('\n').at(-1)})` };
  }
  const result = outcome.events.find((e): e is Extract<AgentEvent, { type: 'result' }> => e.type === 'result');
  if (result && !result.ok && NOT_LOGGED_IN.test(result.text)) {
    return {
      status: 'agent_refused',
      message:
        `claude has no credentials ("${result.text}"). Workers use a private CLAUDE_CONFIG_DIR, so your own \`claude\` login is not visible to them: ` +
        'set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN / ANTHROPIC_BASE_URL for a gateway) in the environment Polly runs in.',
    };
  }
  return null;
}

/**
 * Create the Claude Code adapter.
 * @param config  the `workers.claude-code` config (`command`, `model`, `allow_root_sandbox`), plus
 *                optional `binary` (explicit executable) and `mcpConfig` (MCP config file path).
 */
export function createClaudeCodeAdapter(config: ClaudeCodeAdapterConfig): AgentAdapter {
  return {
    harness: 'claude-code',
    vendor: 'anthropic',
    start(options: AgentRunOptions): AgentRun {
      const binary = config.binary ?? resolveAgentBinary('claude-code', config, { ...process.env, ...options.env });
      const isRoot = process.getuid?.() === 0;
      if (isRoot && !config.allow_root_sandbox) {
        return refusedRun('agent_refused', rootRefusalMessage(), [binary], options.onEvent);
      }
      const { configDir, emptyMcpConfig } = prepareClaudeConfigDir(options.stateDir);
      const home = join(options.stateDir, 'home');
      mkdirSync(home, { recursive: true });
      const env = claudeCodeEnv({ configDir, isRoot, allowRootSandbox: config.allow_root_sandbox, layers: [options.env, options.gate.env], home });
      return spawnAgentProcess({
        command: binary,
        args: claudeArgs(config, options, emptyMcpConfig),
        cwd: options.cwd,
        env,
        stdin: options.prompt,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        parseLine: parseClaudeStreamLine,
        redact: [...secretsIn(options.env), ...secretsIn(options.gate.env)],
        onEvent: options.onEvent,
        classify: classifyClaudeOutcome,
        sandbox: options.sandbox ?? null,
      });
    },
  };
}
