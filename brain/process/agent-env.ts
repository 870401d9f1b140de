/**
 * The environment agent processes get from Polly's own: model endpoints and keys, nothing else of
 * the caller's environment (workers/sandbox/worker-env.ts then builds each worker's env by allowlist).
 */
import type { PollyConfig } from '../config/config-schema.js';

/**
 * Environment variables passed on to agent processes (model endpoints and keys; nothing else of the
 * caller's env). Every key the plan gate counts as making a worker meterable
 * (workers/metering/turn-meter.ts `unmeteredReason`: OPENAI_API_KEY, CODEX_API_KEY) is here, so a
 * budget the gate admits runs on the key it was admitted for.
 */
export const AGENT_ENV_KEYS = /^(ANTHROPIC_BASE_URL|ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN|OPENAI_API_KEY|OPENAI_BASE_URL|CODEX_API_KEY|POLLY_MODEL_[A-Z0-9_]+)$/;

/**
 * The subset of `env` agents get: {@link AGENT_ENV_KEYS} plus the key variables the config names
 * (`workers.codex.provider.env_key`, `workers.pi.api_key_env`).
 */
export function agentEnvFrom(env: NodeJS.ProcessEnv, config?: Pick<PollyConfig, 'workers'>): Record<string, string> {
  const named = new Set([config?.workers.codex.provider?.env_key, config?.workers.pi.api_key_env].filter((k): k is string => Boolean(k)));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && (AGENT_ENV_KEYS.test(k) || named.has(k))) out[k] = v;
  return out;
}
