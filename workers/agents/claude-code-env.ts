/**
 * The environment of a `claude` process, shared by the Claude Code worker adapter
 * (claude-code-adapter.ts) and the LLM Brain (brain/llm/llm-brain.ts), and the two facts both read
 * from it: which values are secrets (to redact from logs) and whether claude refused to run as root.
 *
 * Variables: `CLAUDE_CONFIG_DIR` (claude's private state), `DISABLE_AUTOUPDATER`, `DISABLE_TELEMETRY`,
 * `DISABLE_ERROR_REPORTING`, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` (Claude Code's settings
 * documentation, https://docs.anthropic.com/en/docs/claude-code/settings#environment-variables),
 * and `IS_SANDBOX=1` only as root with `allow_root_sandbox` (claude refuses
 * `--permission-mode bypassPermissions` as root otherwise).
 */
import { workerEnv } from '../sandbox/worker-env.js';
import { scrubbedProcessEnv } from './agent-process.js';

/** claude's stderr when it refuses bypassPermissions as root without IS_SANDBOX. */
const ROOT_REFUSAL = /cannot be used with root\/sudo privileges/i;

/** True when `stderr` is claude's refusal to run bypassPermissions as root. */
export function isRootRefusal(stderr: string): boolean {
  return ROOT_REFUSAL.test(stderr);
}

export interface ClaudeCodeEnvInput {
  /** claude's private state directory (`CLAUDE_CONFIG_DIR`). */
  configDir: string;
  /** Whether this process runs as root (uid 0). */
  isRoot: boolean;
  /** `workers.claude-code.allow_root_sandbox`. */
  allowRootSandbox: boolean;
  /** Extra fixed settings after the defaults (e.g. `MCP_CONNECTION_NONBLOCKING`). */
  settings?: Record<string, string>;
  /** Caller env layers (model endpoint, gate env), later ones win; they may not set IS_SANDBOX. */
  layers: Array<Record<string, string>>;
  /**
   * A worker's private HOME: the base is then the allowlisted environment (workers/sandbox/worker-env.ts),
   * not the caller's whole one. Absent for the Brain, which is Polly's own process.
   */
  home?: string;
}

/**
 * The env for a `claude` child: for a worker (`home` set) the allowlisted environment with that
 * private HOME, for the Brain the caller's environment without `GIT_*` (scrubbedProcessEnv);
 * then the settings above, then `layers`. `IS_SANDBOX` is Polly's decision alone: set to `1` as root
 * with `allowRootSandbox`, otherwise removed even when inherited or given in a layer.
 */
export function claudeCodeEnv(input: ClaudeCodeEnvInput): Record<string, string> {
  const sandbox = input.isRoot && input.allowRootSandbox;
  const vars: Record<string, string> = {
    CLAUDE_CONFIG_DIR: input.configDir,
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...input.settings,
    ...(sandbox ? { IS_SANDBOX: '1' } : {}),
    ...Object.assign({}, ...input.layers),
  };
  const env = input.home ? workerEnv(vars, { home: input.home }) : scrubbedProcessEnv(vars);
  if (sandbox) env.IS_SANDBOX = '1';
  else delete env.IS_SANDBOX;
  return env;
}

/** The values of `env` whose NAME looks secret (KEY, TOKEN, SECRET, PASSWORD, AUTH) and that are ≥ 4 characters: what to redact. */
export function secretsIn(env: Record<string, string>): string[] {
  return Object.entries(env)
    .filter(([k]) => /KEY|TOKEN|SECRET|PASSWORD|AUTH/i.test(k))
    .map(([, v]) => v)
    .filter((v) => v.length >= 4);
}
