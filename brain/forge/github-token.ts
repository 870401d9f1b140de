/**
 * The GitHub token: `GITHUB_TOKEN` from the environment, else `gh auth token` when the GitHub CLI
 * is installed and logged in. The token is never printed: use {@link redactToken} on any text that
 * might carry it before it reaches a stream, a log or an error message.
 */
import { execFile } from 'node:child_process';
import { PollyError } from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';

export interface GitHubTokenSource {
  token: string;
  /** Where it came from, for diagnostics (never the token itself). */
  source: 'GITHUB_TOKEN' | 'gh auth token';
}

export interface ResolveTokenOptions {
  env?: NodeJS.ProcessEnv;
  /** The gh executable (default `gh` on PATH). */
  ghBinary?: string;
  /** GitHub host for `gh auth token --hostname` (GitHub Enterprise); default github.com. */
  hostname?: string;
  /** ms before `gh` is given up (default 10 000). */
  timeoutMs?: number;
}

/** Run `gh auth token` and return its trimmed stdout, or null when gh is missing or not logged in. */
function ghAuthToken(options: ResolveTokenOptions): Promise<string | null> {
  const args = ['auth', 'token'];
  if (options.hostname && options.hostname !== 'github.com') args.push('--hostname', options.hostname);
  return new Promise((resolve) => {
    execFile(
      options.ghBinary ?? 'gh',
      args,
      { env: { ...(options.env ?? process.env), GH_PROMPT_DISABLED: '1', NO_COLOR: '1' }, timeout: options.timeoutMs ?? 10_000, encoding: 'utf8' },
      (error, stdout) => {
        if (error) return resolve(null);
        const token = stdout.trim();
        resolve(token.length > 0 ? token : null);
      },
    );
  });
}

/**
 * Resolve the token: `GITHUB_TOKEN` (non-empty) wins; otherwise `gh auth token`.
 * @throws PollyError `forge_failed` when neither gives a token; the message says how to provide one
 *   and never contains a token.
 */
export async function resolveGitHubToken(options: ResolveTokenOptions = {}): Promise<GitHubTokenSource> {
  const env = options.env ?? process.env;
  const fromEnv = env.GITHUB_TOKEN?.trim();
  if (fromEnv) return { token: fromEnv, source: 'GITHUB_TOKEN' };
  const fromGh = await ghAuthToken(options);
  if (fromGh) return { token: fromGh, source: 'gh auth token' };
  throw new PollyError(
    'forge_failed',
    'no GitHub token: GITHUB_TOKEN is not set and `gh auth token` gave none (gh missing or not logged in). ' +
      'Set GITHUB_TOKEN, run `gh auth login`, or use the local forge (forge.kind: local in .polly/config.yaml).',
  );
}

/**
 * Replace every known secret in `text` with `[REDACTED]`: the given tokens verbatim (any length
 * ≥ 4) and anything shaped like a GitHub token (`ghp_…`, `gho_…`, `ghu_…`, `ghs_…`, `ghr_…`,
 * `github_pat_…`), plus `Authorization`/`token` header values (brain/core/redact.ts).
 */
export function redactToken(text: string, ...tokens: Array<string | null | undefined>): string {
  return redactSecrets(text, { values: tokens, marker: '[REDACTED]' });
}
