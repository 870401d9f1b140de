/**
 * Can an agent CLI start here, before a worktree, a turn or a fix round is spent on it? Two things
 * that no retry can fix and that each CLI only reports after it started:
 *
 * - root: Claude Code refuses `--permission-mode bypassPermissions` as root unless `IS_SANDBOX=1`
 *   (its own check; see claude-code-adapter.ts {@link rootRefusalMessage}), which Polly sets only
 *   with `workers.claude-code.allow_root_sandbox: true`;
 * - credentials: the environment variables each harness reads its model key from, as the adapters
 *   read them (claude-code-adapter.ts `classifyClaudeOutcome`, codex-adapter.ts
 *   `credentialsProblem`, pi-adapter.ts's custom-provider check). Workers get a private
 *   CLAUDE_CONFIG_DIR / CODEX_HOME / PI_CODING_AGENT_DIR, so a `claude login` / `codex login` of
 *   the user is not visible to them: only the environment counts.
 *
 * Pure: the caller passes the environment the agents get (brain/process/brain-deps.ts
 * `agentEnvFrom`) and whether this process runs as root. Values are never returned, only names.
 */
import type { Harness } from '../../brain/core/vocabulary.js';
import type { AgentOptionsByHarness } from './agent-factory.js';
import { rootRefusalMessage } from './claude-code-adapter.js';

/** Which model key a harness reads, and whether the environment has it. */
export interface AgentCredentials {
  harness: Harness;
  /** `present`: one of `variables` is set; `missing`: none is; `unknown`: the CLI picks its own provider (pi without `workers.pi.base_url`). */
  status: 'present' | 'missing' | 'unknown';
  /** The variable NAMES the harness reads its key from (first the one in use when present). Never values. */
  variables: string[];
  /** Where to set it, for `missing` and `unknown`. */
  fix: string;
}

/** Why an agent cannot start here (one of the two checks in the module doc). */
export interface AgentStartProblem {
  harness: Harness;
  kind: 'root' | 'credentials';
  /** What is wrong and the whole instruction that fixes it (never cut). */
  message: string;
}

/**
 * The model key of `harness` in `env` (names only).
 * @param workers  config `workers` (codex's `provider.env_key`, pi's `base_url` / `api_key_env`).
 * @param env      the environment the agents get.
 */
export function agentCredentials(harness: Harness, workers: AgentOptionsByHarness, env: Readonly<Record<string, string | undefined>>): AgentCredentials {
  const has = (names: string[]): string[] => names.filter((n) => Boolean(env[n]));
  const result = (names: string[], fix: string): AgentCredentials => {
    const set = has(names);
    return { harness, status: set.length > 0 ? 'present' : 'missing', variables: set.length > 0 ? set : names, fix };
  };
  switch (harness) {
    case 'claude-code':
      return result(
        ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
        'export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway, with ANTHROPIC_BASE_URL) in the shell that runs polly; workers use a private CLAUDE_CONFIG_DIR, so your own "claude login" is not visible to them',
      );
    case 'codex': {
      const p = workers.codex.provider;
      if (p)
        return result(
          [p.env_key],
          `export ${p.env_key} (the key of workers.codex.provider "${p.id}", ${p.base_url}; a dummy value for a local server) in the shell that runs polly`,
        );
      return result(
        ['OPENAI_API_KEY'],
        'export OPENAI_API_KEY in the shell that runs polly (workers use a private CODEX_HOME, so your own "codex login" is not visible to them), or configure workers.codex.provider in .polly/config.yaml',
      );
    }
    case 'pi': {
      if (workers.pi.base_url) {
        const name = workers.pi.api_key_env ?? 'OPENAI_API_KEY';
        return result([name], `export ${name} (the key of workers.pi.base_url ${workers.pi.base_url}, named by workers.pi.api_key_env) in the shell that runs polly`);
      }
      return {
        harness,
        status: 'unknown',
        variables: [],
        fix: "pi uses its own default provider and reads that provider's key variable (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY): export it, or set workers.pi.base_url and workers.pi.api_key_env in .polly/config.yaml",
      };
    }
  }
}

/**
 * Claude Code's root refusal (see the module doc) for `harness`, or null: only claude-code, only
 * as root, only without `workers.claude-code.allow_root_sandbox`. The message holds the whole fix.
 * @param isRoot  whether Polly runs as root (default `process.getuid() === 0`).
 */
export function agentRootProblem(harness: Harness, workers: AgentOptionsByHarness, isRoot: boolean = process.getuid?.() === 0): AgentStartProblem | null {
  return harness === 'claude-code' && isRoot && !workers['claude-code'].allow_root_sandbox ? { harness, kind: 'root', message: rootRefusalMessage() } : null;
}

/**
 * Why `harness` would refuse to start here, or null. Root (claude-code only, without
 * `allow_root_sandbox`) is checked first, then a `missing` model key ({@link agentCredentials};
 * `unknown` is not a problem).
 * @param isRoot  whether Polly runs as root (default `process.getuid() === 0`).
 */
export function agentStartProblem(
  harness: Harness,
  workers: AgentOptionsByHarness,
  env: Readonly<Record<string, string | undefined>>,
  isRoot: boolean = process.getuid?.() === 0,
): AgentStartProblem | null {
  const root = agentRootProblem(harness, workers, isRoot);
  if (root) return root;
  const credentials = agentCredentials(harness, workers, env);
  if (credentials.status === 'missing') {
    return { harness, kind: 'credentials', message: `${harness} has no model key: none of ${credentials.variables.join(', ')} is set. Fix: ${credentials.fix}.` };
  }
  return null;
}
