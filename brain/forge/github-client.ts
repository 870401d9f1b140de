/**
 * The Octokit client Polly reads GitHub with: `@octokit/rest` with GitHub's own rate-limit and
 * retry plugins, so no wait is hand-written here.
 *
 * - `@octokit/plugin-throttling` (https://github.com/octokit/plugin-throttling.js): queues requests
 *   (at most 10 at once, writes one a second, writes that notify people — a PR, a comment, a review
 *   — one every 3 s, GitHub's advice for mutations) and, on a 403/429 that is a rate limit, waits as
 *   GitHub says — `retry-after` for a secondary limit (60 s when absent), until `x-ratelimit-reset`
 *   for an exhausted primary limit — then retries (docs.github.com "Rate limits for the REST API",
 *   https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
 * - `@octokit/plugin-retry` (https://github.com/octokit/plugin-retry.js): retries server errors
 *   (5xx, and 429 without rate-limit headers) with a growing pause (1, 4, 9 s).
 * Conditional requests (`If-None-Match` → `304 Not Modified`, free against the primary limit:
 * https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api) are the
 * caller's (see `github-watch.ts`).
 */
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import Bottleneck from 'bottleneck';
import { PollyError } from '../core/errors.js';

const PollyOctokit = Octokit.plugin(throttling, retry);

/** The client type: Octokit REST with the throttling and retry plugins. */
export type GitHubClient = InstanceType<typeof PollyOctokit>;

/** One rate-limit wait the throttling plugin takes (told to `onRateLimit`). */
export interface RateLimitWait {
  /** `primary`: the hourly quota is used up; `secondary`: GitHub's abuse limit (403/429 with retry-after). */
  kind: 'primary' | 'secondary';
  /** Seconds the plugin waits before the retry. */
  retryAfterSeconds: number;
  /** `METHOD url` of the request. */
  request: string;
  /** Retries of this request so far (0 on the first limit). */
  retryCount: number;
  /** Whether it is retried (false once `maxRetries` is reached or the wait is longer than `maxWaitSeconds`: the request then fails). */
  retried: boolean;
}

export interface GitHubClientOptions {
  /** Token for `Authorization` (see `github-token.ts`); never logged. */
  token: string;
  /** API root: `https://api.github.com` (default) or `https://HOST/api/v3` for GitHub Enterprise. */
  baseUrl?: string;
  /** Retries per request after a rate limit or a server error (default 3). */
  maxRetries?: number;
  /**
   * Milliseconds per second of GitHub's waits: `retry-after` and backoff (both plugins'
   * `retryAfterBaseValue`) and the spacing of writes (1 s, 3 s for writes that notify); default
   * 1000. Tests against the GitHub simulator shrink it to run GitHub's waits in milliseconds.
   */
  retryAfterBaseValue?: number;
  /** The longest rate-limit wait taken, in seconds (default 3900, 65 minutes: one primary-limit window and a margin); a longer one fails the request. */
  maxWaitSeconds?: number;
  /** Told about every rate-limit wait (for stderr diagnostics); when it returns a promise, the retry waits for it. */
  onRateLimit?: (wait: RateLimitWait) => void | Promise<void>;
}

/**
 * The throttling plugin's write queues for `base` ms per GitHub second: none (the plugin's own,
 * shared by every client of the process: writes 1 s apart, notifying writes 3 s apart) at the
 * default 1000, else queues of this client with those spacings scaled. The plugin's queues are
 * Bottleneck groups (https://github.com/octokit/plugin-throttling.js, `throttle.write` and
 * `throttle.notifications`, as its source builds them: one job at a time, `minTime` apart).
 */
function writeSpacing(base: number): { write?: Bottleneck.Group; notifications?: Bottleneck.Group } {
  if (base === 1000) return {};
  return {
    write: new Bottleneck.Group({ maxConcurrent: 1, minTime: base }),
    notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime: 3 * base }),
  };
}

/**
 * Build the client. Reads only: nothing here merges (the forge and the watcher have no merge call).
 * @throws PollyError `bad_input` when `token` is empty.
 */
export function createGitHubClient(options: GitHubClientOptions): GitHubClient {
  if (!options.token) throw new PollyError('bad_input', 'createGitHubClient: the token is empty. Set GITHUB_TOKEN or run `gh auth login`.');
  const maxRetries = options.maxRetries ?? 3;
  const maxWaitSeconds = options.maxWaitSeconds ?? 3900;
  const base = options.retryAfterBaseValue ?? 1000;
  const silent = () => undefined;
  const limited =
    (kind: RateLimitWait['kind']) =>
    async (retryAfter: number, request: { method?: string; url?: string }, _octokit: unknown, retryCount: number): Promise<boolean> => {
      const retried = retryCount < maxRetries && retryAfter <= maxWaitSeconds;
      await options.onRateLimit?.({ kind, retryAfterSeconds: retryAfter, request: `${request.method ?? ''} ${request.url ?? ''}`.trim(), retryCount, retried });
      return retried;
    };
  return new PollyOctokit({
    auth: options.token,
    baseUrl: options.baseUrl ?? 'https://api.github.com',
    userAgent: 'polly',
    log: { debug: silent, info: silent, warn: silent, error: silent },
    throttle: { onRateLimit: limited('primary'), onSecondaryRateLimit: limited('secondary'), retryAfterBaseValue: base, ...writeSpacing(base) },
    retry: { retries: maxRetries, retryAfterBaseValue: base },
  });
}
