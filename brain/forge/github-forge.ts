/**
 * The GitHub forge: {@link Forge} over the GitHub REST API with `@octokit/rest`, and GraphQL only
 * where REST has no endpoint (ready-for-review: `markPullRequestReadyForReview`, see
 * docs.github.com/graphql/reference/mutations#markpullrequestreadyforreview).
 *
 * Rate-limit aware, following docs.github.com "Rate limits for the REST API" and "Best practices":
 * - GETs are conditional: the last ETag of each resource is sent as `If-None-Match`; a `304 Not
 *   Modified` does not count against the primary rate limit and the cached body is used.
 * - When a response says `x-ratelimit-remaining: 0`, the next request waits until
 *   `x-ratelimit-reset` instead of being sent to fail.
 * - A 403/429 with `retry-after` waits that many seconds; with `x-ratelimit-remaining: 0` it waits
 *   until `x-ratelimit-reset`; a 429 (or a 403 saying "secondary rate limit") without either header
 *   waits one minute. Then the request is retried, at most `maxAttempts` times in all.
 * Waiting uses an injected {@link ForgeClock}, so tests simulate hours in milliseconds.
 *
 * Every body Polly posts carries {@link POLLY_MARKER}, so the PR watcher never takes Polly's own
 * words for a human's feedback.
 *
 * No merge method exists here or anywhere in the forge (Polly never merges).
 */
import { Octokit } from '@octokit/rest';
import { PollyError } from '../core/errors.js';
import type { Forge, ListPullRequestsOptions, NoMergeKeys, OpenPullRequestInput, OpenedPullRequest, PullRequestInfo, ReviewInput } from './forge.js';
import { redactToken } from './github-token.js';

/**
 * An HTML comment Polly appends to every review, line comment and comment it posts on GitHub
 * (invisible when rendered). The PR watcher (`github-watch.ts`) skips anything carrying it: Polly
 * often posts with the human's own account (`gh auth token`), so the author cannot tell them apart.
 */
export const POLLY_MARKER = '<!-- polly -->';

/** `body` with {@link POLLY_MARKER} appended. Pure. */
export function markedBody(body: string): string {
  return body.includes(POLLY_MARKER) ? body : `${body}\n\n${POLLY_MARKER}`;
}

/** Time for rate-limit waits: ms since the epoch and a sleep (simulated in tests). */
export interface ForgeClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** The real clock. */
export const systemForgeClock: ForgeClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

export interface GitHubForgeOptions {
  owner: string;
  repo: string;
  /** Token for `Authorization` (see `github-token.ts`). Required unless `octokit` is given. */
  token?: string;
  /** API root: `https://api.github.com` (default) or `https://HOST/api/v3` for GitHub Enterprise. */
  baseUrl?: string;
  /** A prebuilt client (its baseUrl and auth are used as they are). */
  octokit?: Octokit;
  clock?: ForgeClock;
  /** Attempts per call when rate-limited (default 3). */
  maxAttempts?: number;
  /** Refuse to wait longer than this for one rate-limit reset (ms, default 65 minutes). */
  maxWaitMs?: number;
  /** Told about every rate-limit wait (for stderr diagnostics). */
  onWait?: (wait: { ms: number; reason: string; request: string }) => void;
}

/** Request accounting of one forge instance. */
export interface GitHubForgeStats {
  /** HTTP requests sent (REST and GraphQL). */
  requests: number;
  /** Of those, answered `304 Not Modified` (free against the rate limit). */
  notModified: number;
  /** Rate-limit waits taken, and their total length in ms. */
  waits: number;
  waitedMs: number;
}

export interface GitHubForge extends Forge {
  readonly kind: 'github';
  /** A snapshot of the request accounting. */
  stats(): GitHubForgeStats;
}

type Headers = Record<string, string | number | undefined>;
interface OctokitLikeError {
  status?: number;
  message?: string;
  response?: { headers?: Headers; data?: unknown };
  errors?: Array<{ message?: string }>;
}

/** The raw REST PR fields the forge reads (a subset of `pull-request` / `pull-request-simple`). */
interface RawPull {
  number: number;
  node_id: string;
  html_url: string;
  title: string;
  state: string;
  draft?: boolean;
  merged?: boolean;
  merged_at: string | null;
  merge_commit_sha: string | null;
  head: { ref: string; sha: string };
  base: { ref: string };
}

/** Map a REST pull request to {@link PullRequestInfo}. Pure. */
export function pullRequestInfoFromRest(raw: RawPull): PullRequestInfo {
  const merged = raw.merged === true || raw.merged_at !== null;
  const state = merged ? 'merged' : raw.state === 'closed' ? 'closed' : raw.draft ? 'draft' : 'ready';
  return {
    forge: 'github',
    number: raw.number,
    url: raw.html_url,
    title: raw.title,
    state,
    merged,
    // GitHub fills merge_commit_sha with a test-merge commit while the PR is open; only a merged one is real.
    mergeCommitSha: merged ? raw.merge_commit_sha : null,
    headSha: raw.head.sha,
    base: raw.base.ref,
    head: raw.head.ref,
  };
}

function header(headers: Headers | undefined, name: string): string | undefined {
  const v = headers?.[name];
  return v === undefined ? undefined : String(v);
}

/**
 * How long to wait before retrying a failed request, or null when the failure is not a rate limit.
 * Pure; `nowMs` is the current time. Source: docs.github.com "Rate limits for the REST API"
 * ("Exceeding the rate limit": retry-after, x-ratelimit-reset, otherwise at least one minute).
 */
export function rateLimitWaitMs(status: number | undefined, headers: Headers | undefined, message: string, nowMs: number): number | null {
  if (status !== 403 && status !== 429) return null;
  const retryAfter = header(headers, 'retry-after');
  if (retryAfter !== undefined && /^\d+$/.test(retryAfter)) return Number(retryAfter) * 1000;
  if (header(headers, 'x-ratelimit-remaining') === '0') {
    const reset = Number(header(headers, 'x-ratelimit-reset'));
    if (Number.isFinite(reset)) return Math.max(0, reset * 1000 - nowMs) + 1000;
    return 60_000;
  }
  if (status === 429 || /secondary rate limit/i.test(message)) return 60_000;
  return null;
}

/**
 * Create the GitHub forge for `owner/repo`.
 * @throws PollyError `bad_input` when neither `token` nor `octokit` is given.
 */
export function createGitHubForge(options: GitHubForgeOptions): GitHubForge {
  const { owner, repo } = options;
  const clock = options.clock ?? systemForgeClock;
  const maxAttempts = options.maxAttempts ?? 3;
  const maxWaitMs = options.maxWaitMs ?? 65 * 60_000;
  if (!options.octokit && !options.token) {
    throw new PollyError('bad_input', `createGitHubForge(${owner}/${repo}): no token and no octokit. Set GITHUB_TOKEN or run \`gh auth login\`.`);
  }
  const silent = () => undefined;
  const octokit =
    options.octokit ??
    new Octokit({
      auth: options.token,
      baseUrl: options.baseUrl ?? 'https://api.github.com',
      userAgent: 'polly-forge',
      log: { debug: silent, info: silent, warn: silent, error: silent },
    });
  const stats: GitHubForgeStats = { requests: 0, notModified: 0, waits: 0, waitedMs: 0 };
  /** Known primary-limit state from the last response. */
  let limitState: { remaining: number; resetMs: number } | null = null;
  /** ETag cache: request key → last ETag and body. */
  const cache = new Map<string, { etag: string; data: unknown }>();

  const note = (headers: Headers | undefined) => {
    const remaining = header(headers, 'x-ratelimit-remaining');
    const reset = header(headers, 'x-ratelimit-reset');
    if (remaining !== undefined && reset !== undefined) limitState = { remaining: Number(remaining), resetMs: Number(reset) * 1000 };
  };

  const wait = async (ms: number, reason: string, request: string) => {
    if (ms > maxWaitMs) {
      throw new PollyError(
        'forge_failed',
        `GitHub ${request}: rate limited (${reason}) and the reset is ${Math.ceil(ms / 1000)} s away, longer than the ${Math.ceil(maxWaitMs / 1000)} s Polly waits. Try again later.`,
      );
    }
    stats.waits += 1;
    stats.waitedMs += ms;
    options.onWait?.({ ms, reason, request });
    await clock.sleep(ms);
  };

  const forgeError = (request: string, error: unknown): PollyError => {
    if (error instanceof PollyError) return error;
    const e = error as OctokitLikeError;
    const detail = redactToken([e.message ?? String(error), ...(e.errors ?? []).map((x) => x.message ?? '')].filter(Boolean).join('; '), options.token);
    if (e.status === 404) {
      return new PollyError('not_found', `GitHub ${request} in ${owner}/${repo}: not found (404). Check the PR number and that the token can see the repository.`, {
        details: { status: 404 },
      });
    }
    return new PollyError('forge_failed', `GitHub ${request} in ${owner}/${repo} failed${e.status ? ` (${e.status})` : ''}: ${detail}`, {
      cause: error,
      details: { status: e.status ?? null },
    });
  };

  /**
   * Send one request with rate-limit handling. `send` gets the extra headers to add. A 304 is
   * returned as `{notModified: true}`; other results as `{notModified: false, data, headers}`.
   */
  async function send<T>(
    request: string,
    fn: (headers: Record<string, string>) => Promise<{ data: T; headers: Headers }>,
    conditional?: { key: string },
  ): Promise<{ notModified: true } | { notModified: false; data: T; headers: Headers }> {
    for (let attempt = 1; ; attempt++) {
      if (limitState && limitState.remaining <= 0 && limitState.resetMs + 1000 > clock.now()) {
        await wait(limitState.resetMs + 1000 - clock.now(), 'x-ratelimit-remaining: 0', request);
        limitState = null;
      }
      const extra: Record<string, string> = {};
      const cached = conditional ? cache.get(conditional.key) : undefined;
      if (cached) extra['if-none-match'] = cached.etag;
      stats.requests += 1;
      try {
        const r = await fn(extra);
        note(r.headers);
        const etag = header(r.headers, 'etag');
        if (conditional && etag) cache.set(conditional.key, { etag, data: r.data });
        return { notModified: false, data: r.data, headers: r.headers };
      } catch (error) {
        const e = error as OctokitLikeError;
        note(e.response?.headers);
        if (e.status === 304 && cached) {
          stats.notModified += 1;
          return { notModified: true };
        }
        const ms = rateLimitWaitMs(e.status, e.response?.headers, e.message ?? '', clock.now());
        if (ms === null || attempt >= maxAttempts) throw forgeError(request, error);
        limitState = null;
        await wait(ms, header(e.response?.headers, 'retry-after') ? `retry-after ${header(e.response?.headers, 'retry-after')} s` : `${e.status} rate limit`, request);
      }
    }
  }

  /** A conditional GET: the fresh body, or the cached one on 304. */
  async function getCached<T>(request: string, key: string, fn: (headers: Record<string, string>) => Promise<{ data: T; headers: Headers }>): Promise<T> {
    const r = await send(request, fn, { key });
    if (r.notModified) return cache.get(key)!.data as T;
    return r.data;
  }

  const rawPull = (number: number) =>
    getCached<RawPull>(
      `GET pulls/${number}`,
      `pull:${number}`,
      (headers) => octokit.rest.pulls.get({ owner, repo, pull_number: number, headers }) as unknown as Promise<{ data: RawPull; headers: Headers }>,
    );

  const forge: GitHubForge = {
    kind: 'github',

    async openDraftPullRequest(input: OpenPullRequestInput): Promise<OpenedPullRequest> {
      const r = await send(
        'POST pulls (create draft)',
        () =>
          octokit.rest.pulls.create({ owner, repo, head: input.head, base: input.base, title: input.title, body: input.body, draft: true }) as unknown as Promise<{
            data: RawPull;
            headers: Headers;
          }>,
      );
      if (r.notModified) throw new PollyError('internal', 'POST answered 304');
      const info = pullRequestInfoFromRest(r.data);
      return { forge: 'github', number: info.number, url: info.url, state: info.state, headSha: info.headSha };
    },

    async markReady(number: number): Promise<void> {
      const raw = await rawPull(number);
      if (raw.state !== 'open') {
        throw new PollyError('conflict', `GitHub PR #${number} in ${owner}/${repo} is ${raw.merged_at ? 'merged' : 'closed'}; only an open PR can be marked ready.`);
      }
      if (!raw.draft) return;
      const mutation = 'mutation PollyMarkReady($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }';
      await send('GraphQL markPullRequestReadyForReview', async () => {
        const data = await octokit.graphql<{ markPullRequestReadyForReview: { pullRequest: { number: number; isDraft: boolean } } }>(mutation, { id: raw.node_id });
        return { data, headers: {} };
      });
    },

    async postReview(number: number, review: ReviewInput): Promise<{ id: number }> {
      const r = await send(
        `POST pulls/${number}/reviews`,
        () =>
          octokit.rest.pulls.createReview({
            owner,
            repo,
            pull_number: number,
            event: review.event,
            body: markedBody(review.body),
            comments: review.comments.map((c) => ({ path: c.path, line: c.line, side: 'RIGHT', body: markedBody(c.body) })),
          }) as unknown as Promise<{ data: { id: number }; headers: Headers }>,
      );
      if (r.notModified) throw new PollyError('internal', 'POST answered 304');
      return { id: r.data.id };
    },

    async comment(number: number, body: string): Promise<{ id: number }> {
      const r = await send(
        `POST issues/${number}/comments`,
        () => octokit.rest.issues.createComment({ owner, repo, issue_number: number, body: markedBody(body) }) as unknown as Promise<{ data: { id: number }; headers: Headers }>,
      );
      if (r.notModified) throw new PollyError('internal', 'POST answered 304');
      return { id: r.data.id };
    },

    async getPullRequest(number: number): Promise<PullRequestInfo> {
      return pullRequestInfoFromRest(await rawPull(number));
    },

    async listPullRequests(opts: ListPullRequestsOptions = {}): Promise<PullRequestInfo[]> {
      const state = opts.state ?? 'open';
      const out: PullRequestInfo[] = [];
      for (let page = 1; page <= 50; page++) {
        const data = await getCached<RawPull[]>(
          `GET pulls?state=${state}&page=${page}`,
          `list:${state}:${page}`,
          (headers) => octokit.rest.pulls.list({ owner, repo, state, per_page: 100, page, headers }) as unknown as Promise<{ data: RawPull[]; headers: Headers }>,
        );
        out.push(...data.map(pullRequestInfoFromRest));
        if (data.length < 100) break;
      }
      return out;
    },

    stats: () => ({ ...stats }),
  };
  const noMerge: NoMergeKeys<typeof forge> = true;
  void noMerge;
  return forge;
}

/**
 * Parse `owner/repo` from a GitHub remote URL (`https://github.com/o/r(.git)`,
 * `git@github.com:o/r.git`, `ssh://git@github.com/o/r.git`), or null when it is not one.
 * `host` allows a GitHub Enterprise host instead of github.com.
 */
export function parseGitHubRemote(url: string, host = 'github.com'): { owner: string; repo: string } | null {
  const h = host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m =
    new RegExp(`^(?:https?|git|ssh)://(?:[^@/]+@)?${h}(?::\\d+)?/([^/]+)/([^/]+?)(?:\\.git)?/?$`, 'i').exec(url.trim()) ??
    new RegExp(`^(?:[^@/]+@)?${h}:([^/]+)/([^/]+?)(?:\\.git)?/?$`, 'i').exec(url.trim());
  if (!m?.[1] || !m[2]) return null;
  return { owner: m[1], repo: m[2] };
}
