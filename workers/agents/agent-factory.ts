/**
 * Build the {@link AgentAdapter} for a harness from `.polly/config.yaml` (`workers.<harness>`).
 *
 * - `claude-code`: {@link createClaudeCodeAdapter} with `command`, `model` and
 *   `allow_root_sandbox` (as root, IS_SANDBOX=1 only when that is true; otherwise `agent_refused`).
 * - `codex`: {@link createCodexAdapter} with `command`, `model` and the custom `provider`
 *   (`model_providers.<id>` with a Responses-API `base_url` and the NAME of its key variable).
 * - `pi`: {@link createPiAdapter} with `command`, `model`, `provider`, and — when
 *   `workers.pi.base_url` is set — a custom provider written into the worker's own models.json
 *   (`api` default `openai-completions`, key read from `$api_key_env` at request time; its model
 *   list is the turn's model, else `workers.pi.model`, else `default`).
 */
import type { Harness } from '../../brain/core/vocabulary.js';
import { PollyError } from '../../brain/core/errors.js';
import type { AgentAdapter } from './agent-adapter.js';
import { createClaudeCodeAdapter, type ClaudeCodeOptions } from './claude-code-adapter.js';
import { createCodexAdapter, type CodexOptions } from './codex-adapter.js';
import { createPiAdapter, type PiCustomProvider, type PiOptions } from './pi-adapter.js';

/** Each harness's options (`.polly/config.yaml` `workers`; the config schema composes this). */
export interface AgentOptionsByHarness {
  'claude-code': ClaudeCodeOptions;
  codex: CodexOptions;
  pi: PiOptions;
}

export interface AgentFactoryOptions {
  /** The model of this turn (task model), if any: pi's custom provider must list it. */
  model?: string | null;
}

/** pi's custom provider from `workers.pi` (null when `base_url` is not set). */
export function piCustomProvider(pi: PiOptions, model: string | null = null): PiCustomProvider | null {
  if (!pi.base_url) return null;
  if (!/^https?:\/\//.test(pi.base_url)) {
    throw new PollyError(
      'config_invalid',
      `workers.pi.base_url "${pi.base_url}" is not an http(s) URL: set the endpoint including its version prefix, e.g. http://127.0.0.1:8080/v1`,
    );
  }
  const models = [...new Set([model, pi.model].filter((m): m is string => typeof m === 'string' && m !== ''))];
  return { baseUrl: pi.base_url, api: pi.api ?? 'openai-completions', apiKeyEnv: pi.api_key_env ?? 'OPENAI_API_KEY', models: models.length > 0 ? models : ['default'] };
}

/**
 * The adapter for `harness` configured from `config`.
 * @throws PollyError `config_invalid` for a codex provider or pi base URL the CLI cannot take;
 *         `bad_input` for an unknown harness.
 */
export function createAgentAdapter(harness: Harness, config: { workers: AgentOptionsByHarness }, options: AgentFactoryOptions = {}): AgentAdapter {
  switch (harness) {
    case 'claude-code':
      return createClaudeCodeAdapter({ ...config.workers['claude-code'] });
    case 'codex':
      return createCodexAdapter({ ...config.workers.codex });
    case 'pi':
      return createPiAdapter({ ...config.workers.pi, customProvider: piCustomProvider(config.workers.pi, options.model ?? null) });
    default:
      throw new PollyError('bad_input', `unknown harness ${JSON.stringify(harness)}: use claude-code, codex or pi`);
  }
}
