/**
 * The GitHub forge: {@link Forge} over the GitHub REST API with `@octokit/rest`, and GraphQL only
 * where REST has no endpoint (ready-for-review: `markPullRequestReadyForReview`, see
 * docs.github.com/graphql/reference/mutations#markpullrequestreadyforreview).
 *
 * Rate limits and retries are the client's: the forge runs on the same Octokit as the PR watcher
 * (`github-client.ts`: `@octokit/plugin-throttling` waits out `retry-after` and `x-ratelimit-reset`
 * and retries, `@octokit/plugin-retry` retries server errors), so no wait is hand-written here.
 * GETs are conditional: the last ETag of each resource is sent as `If-None-Match`; a `304 Not
 * Modified` does not count against the primary rate limit and the cached body is used
 * (docs.github.com "Best practices for using the REST API").
 *
 * Every body Polly posts carries {@link POLLY_MARKER}, so the PR watcher never takes Polly's own
 * words for a human's feedback.
 *
 * No merge method exists here or anywhere in the forge (Polly never merges).
 */
import { PollyError } from '../core/errors.js';
import { createGitHubClient, type GitHubClient, type RateLimitWait } from './github-client.js';
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

export interface GitHubForgeOptions {
  owner: string;
  repo: string;
  /** Token for `Authorization` (see `github-token.ts`). Required unless `octokit` is given. */
  token?: string;
  /** API root: `https://api.github.com` (default) or `https://HOST/api/v3` for GitHub Enterprise. */
  baseUrl?: string;
  /**
   * A prebuilt client (`createGitHubClient`, e.g. the one the PR watcher uses): its baseUrl, auth
   * and rate-limit handling are used as they are, and the options below do not apply.
   */
  octokit?: GitHubClient;
  /** Retries per call after a rate limit or a server error (default 3). */
  maxRetries?: number;
  /** Refuse to wait longer than this for one rate-limit reset (ms, default 65 minutes): the call fails instead. */
  maxWaitMs?: number;
  /** Milliseconds per second of GitHub's waits: retry-after, backoff, write spacing (default 1000; tests shrink it). */
  retryAfterBaseValue?: number;
  /** Told about every rate-limit wait (for stderr diagnostics); may be async (the retry waits for it). */
  onWait?: (wait: RateLimitWait) => void | Promise<void>;
}

/** Request accounting of one forge instance. */
export interface GitHubForgeStats {
  /** HTTP requests sent (REST and GraphQL). */
  requests: number;
  /** Of those, answered `304 Not Modified` (free against the rate limit). */
  notModified: number;
  /** Rate-limit waits taken, and their total length in GitHub's seconds × 1000 (ms at the default base value). */
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
 * Create the GitHub forge for `owner/repo`.
 * @throws PollyError `bad_input` when neither `token` nor `octokit` is given.
 */
export function createGitHubForge(options: GitHubForgeOptions): GitHubForge {
  const { owner, repo } = options;
  const maxWaitMs = options.maxWaitMs ?? 65 * 60_000;
  if (!options.octokit && !options.token) {
    throw new PollyError('bad_input', `createGitHubForge(${owner}/${repo}): no token and no octokit. Set GITHUB_TOKEN or run \`gh auth login\`.`);
  }
  const stats: GitHubForgeStats = { requests: 0, notModified: 0, waits: 0, waitedMs: 0 };
  /** The last wait the client refused (longer than `maxWaitMs`), to say so in the error. */
  let refusedWait: RateLimitWait | null = null;
  const octokit =
    options.octokit ??
    createGitHubClient({
      token: options.token!,
      ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.retryAfterBaseValue !== undefined ? { retryAfterBaseValue: options.retryAfterBaseValue } : {}),
      maxWaitSeconds: Math.floor(maxWaitMs / 1000),
      onRateLimit: async (wait) => {
        if (!wait.retried) {
          refusedWait = wait;
          return;
        }
        stats.waits += 1;
        stats.waitedMs += wait.retryAfterSeconds * 1000;
        await options.onWait?.(wait);
      },
    });
  /** ETag cache: request key → last ETag and body. */
  const cache = new Map<string, { etag: string; data: unknown }>();

  const forgeError = (request: string, error: unknown): PollyError => {
    if (error instanceof PollyError) return error;
    const e = error as OctokitLikeError;
    const refused = refusedWait;
    refusedWait = null;
    if (refused && (e.status === 403 || e.status === 429) && refused.retryAfterSeconds * 1000 > maxWaitMs) {
      return new PollyError(
        'forge_failed',
        `GitHub ${request} in ${owner}/${repo}: rate limited (${refused.kind} limit) and the reset is ${refused.retryAfterSeconds} s away, longer than the ${Math.floor(maxWaitMs / 1000)} s Polly waits. Try again later.`,
        { cause: error, details: { status: e.status, retryAfterSeconds: refused.retryAfterSeconds } },
      );
    }
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
   * Send one call (the client's plugins wait out rate limits and retry). `fn` gets the extra
   * headers to add. A 304 is returned as `{notModified: true}`; other results as
   * `{notModified: false, data, headers}`.
   * @throws PollyError `not_found` (404), `forge_failed` (anything else, GitHub's reason quoted, the token redacted).
   */
  async function send<T>(
    request: string,
    fn: (headers: Record<string, string>) => Promise<{ data: T; headers: Headers }>,
    conditional?: { key: string },
  ): Promise<{ notModified: true } | { notModified: false; data: T; headers: Headers }> {
    const extra: Record<string, string> = {};
    const cached = conditional ? cache.get(conditional.key) : undefined;
    if (cached) extra['if-none-match'] = cached.etag;
    stats.requests += 1;
    try {
      const r = await fn(extra);
      const etag = header(r.headers, 'etag');
      if (conditional && etag) cache.set(conditional.key, { etag, data: r.data });
      return { notModified: false, data: r.data, headers: r.headers };
    } catch (error) {
      if ((error as OctokitLikeError).status === 304 && cached) {
        stats.notModified += 1;
        return { notModified: true };
      }
      throw forgeError(request, error);
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

    async updateBody(number: number, body: string): Promise<void> {
      const r = await send(
        `PATCH pulls/${number}`,
        () => octokit.rest.pulls.update({ owner, repo, pull_number: number, body: markedBody(body) }) as unknown as Promise<{ data: { number: number }; headers: Headers }>,
      );
      if (r.notModified) throw new PollyError('internal', 'PATCH answered 304');
    },

    async retarget(number: number, base: string): Promise<void> {
      const raw = await rawPull(number);
      if (raw.state !== 'open') {
        throw new PollyError('conflict', `GitHub PR #${number} in ${owner}/${repo} is ${raw.merged_at ? 'merged' : 'closed'}; only an open PR can be retargeted to ${base}.`, {
          details: { number, base },
        });
      }
      if (raw.base.ref === base) return;
      const r = await send(
        `PATCH pulls/${number} (base ${base})`,
        () => octokit.rest.pulls.update({ owner, repo, pull_number: number, base }) as unknown as Promise<{ data: RawPull; headers: Headers }>,
      );
      if (r.notModified) throw new PollyError('internal', 'PATCH answered 304');
      // The cached GET of this PR names the old base: the next read must not be answered from it.
      cache.delete(`pull:${number}`);
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

    async findOpenPullRequest(head: string, base: string): Promise<PullRequestInfo | null> {
      const data = await getCached<RawPull[]>(
        `GET pulls?state=open&head=${owner}:${head}&base=${base}`,
        `find:${head}:${base}`,
        (headers) =>
          octokit.rest.pulls.list({ owner, repo, state: 'open', head: `${owner}:${head}`, base, per_page: 100, headers }) as unknown as Promise<{
            data: RawPull[];
            headers: Headers;
          }>,
      );
      // GitHub filters already; the check keeps a server that ignores the filter from adopting another branch's PR.
      const found = data.map(pullRequestInfoFromRest).filter((p) => p.head === head && p.base === base && (p.state === 'draft' || p.state === 'ready'));
      return found.sort((a, b) => b.number - a.number)[0] ?? null;
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
