/**
 * The environment agent processes get from the Brain's (brain/process/agent-env.ts): model
 * endpoints and keys only, and every key the plan gate counts as making a worker meterable.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { agentEnvFrom } from '../../../brain/process/agent-env.js';
import { unmeteredReason } from '../../../workers/metering/turn-meter.js';

describe('agentEnvFrom', () => {
  it('passes the model endpoints and keys, and the key variables the config names; nothing else', () => {
    const config = structuredClone(DEFAULT_CONFIG);
    config.workers.pi.api_key_env = 'MY_PI_KEY';
    const env = {
      ANTHROPIC_API_KEY: 'a',
      OPENAI_API_KEY: 'o',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      CODEX_API_KEY: 'c',
      MY_PI_KEY: 'p',
      POLLY_MODEL_X: 'x',
      GITHUB_TOKEN: 'g',
      AWS_SECRET_ACCESS_KEY: 's',
      HOME: '/home/dev',
    };
    expect(agentEnvFrom(env, config)).toEqual({
      ANTHROPIC_API_KEY: 'a',
      OPENAI_API_KEY: 'o',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      CODEX_API_KEY: 'c',
      MY_PI_KEY: 'p',
      POLLY_MODEL_X: 'x',
    });
  });

  it('the plan gate and the worker agree: a codex worker the gate counts as metered by a key gets that key', () => {
    const workers = DEFAULT_CONFIG.workers;
    for (const env of [{ OPENAI_API_KEY: 'o' }, { CODEX_API_KEY: 'c' }, {}]) {
      // The gate judges by the Brain's environment; the worker runs with what agentEnvFrom passes on.
      expect(unmeteredReason('codex', workers, agentEnvFrom(env, DEFAULT_CONFIG))).toBe(unmeteredReason('codex', workers, env));
    }
  });
});
