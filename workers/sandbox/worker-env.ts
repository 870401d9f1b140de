/**
 * Environments by allowlist for everything Polly starts on a worker's behalf (agent CLIs,
 * acceptance and setup commands): nothing from Polly's own environment reaches a worker unless it
 * is named here or in `workers.env_passthrough`. `GITHUB_TOKEN`, `GH_TOKEN`, cloud credentials,
 * `SSH_AUTH_SOCK` and everything else stay with Polly.
 */

/** Exact names always passed through (when set). */
export const WORKER_ENV_NAMES: readonly string[] = ['PATH', 'LANG', 'LANGUAGE', 'TERM', 'TZ', 'NO_COLOR', 'COLORTERM'];

/**
 * Name patterns always passed through: the locale (`LC_*`) and the model variables
 * (`ANTHROPIC_*`, `OPENAI_*`, `CODEX_API_KEY`: the agents' model endpoints and keys).
 */
export const WORKER_ENV_PATTERNS: readonly RegExp[] = [/^LC_[A-Z_]+$/, /^ANTHROPIC_[A-Z0-9_]+$/, /^OPENAI_[A-Z0-9_]+$/, /^CODEX_API_KEY$/];

export interface WorkerEnvOptions {
  /** Where values come from (default `process.env`). */
  base?: NodeJS.ProcessEnv;
  /** More names to pass through (`workers.env_passthrough`, and the key variables config names). */
  passthrough?: readonly string[];
  /** The private HOME (always set; never the real one). */
  home: string;
  /** The private TMPDIR, when there is one. */
  tmpDir?: string | null;
}

/** True when `name` may reach a worker from Polly's environment. */
export function isWorkerEnvName(name: string, passthrough: readonly string[] = []): boolean {
  return WORKER_ENV_NAMES.includes(name) || passthrough.includes(name) || WORKER_ENV_PATTERNS.some((p) => p.test(name));
}

/**
 * The environment of a worker process: the allowlisted names from `base`, then `extra` (the
 * adapter's own variables and the values the caller hands over explicitly, which win), with HOME
 * (and TMPDIR) set to the private ones. Pure.
 */
export function workerEnv(extra: Record<string, string>, options: WorkerEnvOptions): Record<string, string> {
  const base = options.base ?? process.env;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && isWorkerEnvName(k, options.passthrough)) out[k] = v;
  Object.assign(out, extra);
  out.HOME = options.home;
  if (options.tmpDir) out.TMPDIR = options.tmpDir;
  return out;
}
