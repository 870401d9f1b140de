/**
 * The GitHub PR watcher (issue 16): one pass reads every open PR Polly opened on GitHub and turns
 * what is new into the journal events the local forge emits too, each exactly once:
 * - `pr.feedback` {forge, number, taskId, event: COMMENT|REQUEST_CHANGES, body, file?, line?,
 *   comments?, author, id}: a human's review (with its line comments), a line comment added on its
 *   own, or a comment on the conversation. Approvals change the review state but are not feedback.
 * - `pr.checks_failed` {forge, number, taskId, headCommit, checks: [{name, conclusion, summary,
 *   logExcerpt?, url?}]}: check runs (conclusion failure / timed_out) and commit statuses
 *   (failure / error) of the head commit that failed since the last report. `logExcerpt` is the
 *   tail of the check run's `output.text`, the details the API gives with the run.
 * - `pr.conflicts` {forge, number, taskId, base, baseCommit, headCommit, files: []} when GitHub's
 *   `mergeable` turns false, and `pr.conflicts_resolved` when it turns true again. GitHub's REST API
 *   does not name the conflicting files, so `files` is empty. `mergeable: null` means GitHub is
 *   still computing it (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request): the state
 *   is kept as it was and the next pass reads it again.
 * - `pr.merged` / `pr.closed` once, when the PR is found merged or closed (the task's own
 *   transition stays with `after-merge.ts`).
 *
 * Who may steer a worker (issue 26): only accounts with write, maintain or admin permission on the
 * repository (GitHub's collaborator permission endpoint, asked per login and cached
 * {@link PERMISSION_TTL_MS}; `author_association` is a hint, journaled, never the answer) and the
 * logins in `trustedAuthors` (config `forge.github.trusted_authors`). Everyone else's review or
 * comment becomes `pr.untrusted_feedback` {author, association, permission, source, id, state?,
 * body}, never `pr.feedback`: it starts no fix round (brain/process/pr-events.ts routes only
 * `pr.feedback`), spends no bound and makes no review verdict. A lookup that fails leaves the item
 * unseen (untrusted now, asked again next pass).
 *
 * Polly's own reviews and comments carry {@link POLLY_MARKER} (added by `github-forge.ts`) and are
 * never feedback: Polly often posts with the human's own account (`gh auth token`), so the author
 * cannot tell them apart.
 *
 * Requests: per open PR and pass, six conditional GETs (the PR, its reviews, review comments, issue
 * comments, the head's check runs and combined status), each with the resource's last ETag as
 * `If-None-Match`; an unchanged resource answers `304 Not Modified`, which does not count against
 * the primary rate limit (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api).
 * Rate limits and retries are the client's plugins (`github-client.ts`). What was seen is kept in
 * the task's PR record (`TaskRecord.pr.watch`, {@link GitHubPullWatch}), written with the events in
 * one registry update. Nothing here writes to GitHub.
 */
import { isPollyError } from '../core/errors.js';
import type { GitHubPullWatch, Registry } from '../registry/registry-schema.js';
import { POLLY_MARKER } from './github-forge.js';
import { DEFAULT_CONFIG } from '../config/config-schema.js';
import { createPermissionCheck, type PermissionCheck } from './github-permissions.js';

/** The part of the registry store the watcher uses (`brain/registry/registry-store.ts`). */
export interface PullWatchStore {
  read(): Promise<Registry>;
  update<T>(fn: (draft: Registry, tx: { emit(kind: string, data: Record<string, unknown>): void }) => T | Promise<T>): Promise<T>;
}

/** The part of an Octokit client the watcher uses: `octokit.request(route, params)` (a {@link GitHubClient}). */
export interface PullWatchClient {
  request(route: string, params: Record<string, unknown>): Promise<{ status: number; headers: Record<string, string | number | undefined>; data: unknown }>;
}

export interface PullWatchDeps {
  store: PullWatchStore;
  client: PullWatchClient;
  owner: string;
  repo: string;
  now?: () => Date;
}

export { PERMISSION_TTL_MS, STEERING_PERMISSIONS } from './github-permissions.js';

export interface PullWatchOptions {
  /** Logins (accounts or apps, e.g. `renovate[bot]`) trusted without a permission lookup (config `forge.github.trusted_authors`). */
  trustedAuthors?: readonly string[];
  /** How long a permission answer is kept, ms (default {@link PERMISSION_TTL_MS}). */
  permissionTtlMs?: number;
  /** Longest `logExcerpt` / `summary` / feedback body kept in an event, in characters (default 4000). */
  maxTextChars?: number;
  /** A permission check shared with the issue watcher (brain/forge/github-permissions.ts); default: one of its own, from the options above. */
  permissions?: PermissionCheck;
}

/**
 * Seconds between two watcher passes in the Brain loop, by default (config
 * `forge.github.watch_seconds`). Measured with
 * `npm run bench -- prwatch` (see docs/pull-requests.md "Watching PRs on GitHub"): at 60 s an unchanged PR costs
 * 360 requests an hour, all 304s (free against the primary limit), and an active one ~20 charged
 * requests an hour: 20 active PRs use well under a tenth of GitHub's 5,000 requests an hour, and
 * feedback reaches the worker within a minute.
 */
export const PR_WATCH_DEFAULT_SECONDS: number = DEFAULT_CONFIG.forge.github.watch_seconds;

/** What one pass did. */
export interface PullWatchReport {
  /** PR numbers read. */
  watched: number[];
  /** Journal events emitted, by kind. */
  events: Record<string, number>;
  /** HTTP requests sent, and how many of them were answered 304. */
  requests: number;
  notModified: number;
  /** PRs that could not be read (retried on the next pass). */
  errors: Array<{ number: number; message: string }>;
}

/** The narrow interface the Brain loop calls: one pass per merge-watch interval. */
export interface PullRequestWatcher {
  pass(): Promise<PullWatchReport>;
}

type Json = Record<string, unknown>;
interface RawUser {
  login?: string;
}
interface RawReview {
  id: number;
  user: RawUser | null;
  body: string | null;
  state: string;
}
interface RawReviewComment {
  id: number;
  pull_request_review_id: number | null;
  user: RawUser | null;
  body: string;
  path: string;
  line?: number | null;
  original_line?: number | null;
}
interface RawIssueComment {
  id: number;
  user: RawUser | null;
  body?: string;
}
interface RawCheckRun {
  name: string;
  status: string;
  conclusion: string | null;
  html_url: string | null;
  details_url: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
}
interface RawStatus {
  context: string;
  state: string;
  description: string | null;
  target_url: string | null;
}

const OPEN = new Set(['draft', 'open', 'ready']);
/** Check-run conclusions that fail a PR (`cancelled`, `action_required`, `neutral`, `skipped` do not). */
const FAILING_CONCLUSIONS = new Set(['failure', 'timed_out', 'startup_failure']);
const FAILING_STATUSES = new Set(['failure', 'error']);

/** A fresh watch record. */
export function emptyPullWatch(at: string): GitHubPullWatch {
  return {
    etags: {},
    checksCommit: null,
    seen: { reviews: [], reviewComments: [], issueComments: [] },
    reportedChecks: null,
    review: 'none',
    checks: 'none',
    conflicts: 'unknown',
    headCommit: null,
    baseCommit: null,
    base: null,
    final: null,
    polledAt: at,
  };
}

/** Whether a body was posted by Polly (it carries {@link POLLY_MARKER}). Pure. */
export function isPollyAuthored(body: string | null | undefined): boolean {
  return typeof body === 'string' && body.includes(POLLY_MARKER);
}

/** The review verdict of a PR from its reviews, oldest first (humans' only). Pure. */
export function reviewVerdict(reviews: ReadonlyArray<{ state: string }>): GitHubPullWatch['review'] {
  let verdict: GitHubPullWatch['review'] = 'none';
  for (const r of reviews) {
    if (r.state === 'CHANGES_REQUESTED') verdict = 'changes_requested';
    else if (r.state === 'APPROVED') verdict = 'approved';
    else if (r.state === 'DISMISSED') verdict = verdict === 'none' ? 'none' : 'commented';
    else if (r.state === 'COMMENTED' && verdict === 'none') verdict = 'commented';
  }
  return verdict;
}

/** One failing check of `pr.checks_failed`. */
export interface FailedCheck {
  /** `run:NAME` or `status:CONTEXT`: what "reported once" is keyed by. */
  key: string;
  name: string;
  conclusion: string;
  summary: string;
  logExcerpt?: string;
  url?: string;
}

/**
 * The head commit's check state and its failing checks, from GitHub's check runs and commit
 * statuses (https://docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference,
 * https://docs.github.com/en/rest/commits/statuses#get-the-combined-status-for-a-specific-reference).
 * Pure. Texts are cut to `maxChars` (the log excerpt keeps its tail, where errors are).
 */
export function checkState(runs: readonly RawCheckRun[], statuses: readonly RawStatus[], maxChars: number): { state: GitHubPullWatch['checks']; failing: FailedCheck[] } {
  const failing: FailedCheck[] = [];
  let pending = false;
  for (const r of runs) {
    if (r.status !== 'completed') pending = true;
    else if (r.conclusion && FAILING_CONCLUSIONS.has(r.conclusion)) {
      const summary = [r.output.title, r.output.summary].filter((x): x is string => !!x).join('\n\n');
      const text = r.output.text ?? '';
      failing.push({
        key: `run:${r.name}`,
        name: r.name,
        conclusion: r.conclusion,
        summary: summary.slice(0, maxChars),
        ...(text ? { logExcerpt: text.length > maxChars ? `…${text.slice(-maxChars)}` : text } : {}),
        ...((r.html_url ?? r.details_url) ? { url: (r.html_url ?? r.details_url)! } : {}),
      });
    }
  }
  for (const s of statuses) {
    if (s.state === 'pending') pending = true;
    else if (FAILING_STATUSES.has(s.state)) {
      failing.push({
        key: `status:${s.context}`,
        name: s.context,
        conclusion: s.state,
        summary: (s.description ?? '').slice(0, maxChars),
        ...(s.target_url ? { url: s.target_url } : {}),
      });
    }
  }
  const state = failing.length > 0 ? 'failing' : pending ? 'pending' : runs.length + statuses.length > 0 ? 'passing' : 'none';
  return { state, failing };
}

/**
 * The `pr.untrusted_feedback` event of a review or comment by an account that may not steer a
 * worker: {forge, number, taskId, author, association (GitHub's `author_association`, a hint),
 * permission (`none`, `read`, …), source (`review` | `review_comment` | `issue_comment`), id,
 * state? (a review's), body}. Shown to the human, never routed to the worker. Pure.
 */
export function untrustedFeedback(
  base: Record<string, unknown>,
  item: { id: number; user?: { login?: string } | null; author_association?: string; state?: string },
  source: 'review' | 'review_comment' | 'issue_comment',
  permission: string,
  body: string,
  maxChars = 4000,
): { kind: string; data: Record<string, unknown> } {
  return {
    kind: 'pr.untrusted_feedback',
    data: {
      ...base,
      author: item.user?.login ?? null,
      association: item.author_association ?? null,
      permission,
      source,
      id: item.id,
      ...(item.state ? { state: item.state } : {}),
      body: body.slice(0, maxChars),
    },
  };
}

/** Create the watcher for `owner/repo` (see the module comment). */
export function createGitHubPullWatcher(deps: PullWatchDeps, options: PullWatchOptions = {}): PullRequestWatcher {
  const { owner, repo, client } = deps;
  const now = () => (deps.now ? deps.now() : new Date()).toISOString();
  const maxChars = options.maxTextChars ?? 4000;
  const permissions =
    options.permissions ??
    createPermissionCheck(
      { client, owner, repo },
      {
        trustedAuthors: options.trustedAuthors ?? [],
        ...(options.permissionTtlMs !== undefined ? { ttlMs: options.permissionTtlMs } : {}),
        now: () => (deps.now ? deps.now() : new Date()),
      },
    );
  let currentWatch: GitHubPullWatch | null = null;
  const untrusted = (base: Json, item: Parameters<typeof untrustedFeedback>[1], source: Parameters<typeof untrustedFeedback>[2], permission: string, body: string) => {
    if (currentWatch) currentWatch.untrusted = (currentWatch.untrusted ?? 0) + 1;
    return untrustedFeedback(base, item, source, permission, body, maxChars);
  };

  return {
    async pass(): Promise<PullWatchReport> {
      const report: PullWatchReport = { watched: [], events: {}, requests: 0, notModified: 0, errors: [] };
      /** One conditional GET: the body, or null when GitHub answered 304 (the resource is unchanged). */
      const get = async <T>(route: string, params: Json, etag: string | undefined): Promise<{ data: T; etag: string | undefined } | null> => {
        report.requests += 1;
        try {
          const r = await client.request(route, { owner, repo, ...params, headers: etag ? { 'if-none-match': etag } : {} });
          const e = r.headers.etag;
          return { data: r.data as T, etag: e === undefined ? undefined : String(e) };
        } catch (error) {
          if ((error as { status?: number }).status === 304) {
            report.notModified += 1;
            return null;
          }
          throw error;
        }
      };
      /** A list endpoint, every page (100 a page; only the first is conditional). */
      const list = async <T>(route: string, params: Json, etag: string | undefined): Promise<{ data: T[]; etag: string | undefined } | null> => {
        const first = await get<T[]>(route, { ...params, per_page: 100, page: 1 }, etag);
        if (!first) return null;
        const all = [...first.data];
        for (let page = 2, last = first.data; last.length === 100 && page <= 50; page++) {
          last = (await get<T[]>(route, { ...params, per_page: 100, page }, undefined))!.data;
          all.push(...last);
        }
        return { data: all, etag: first.etag };
      };

      /** Whether `login` may steer a worker (brain/forge/github-permissions.ts); a lookup sent is counted. */
      const trustOf = async (login: string | null | undefined): Promise<{ trusted: boolean; permission: string }> => {
        const t = await permissions.trustOf(login);
        if (t.requested) report.requests += 1;
        return { trusted: t.trusted, permission: t.permission };
      };

      const reg = await deps.store.read();
      const tasks = Object.values(reg.tasks).filter((t) => t.pr?.forge === 'github' && OPEN.has(t.pr.state) && !t.pr.watch?.final);
      for (const task of tasks) {
        const number = task.pr!.number;
        report.watched.push(number);
        const was = task.pr!.watch ?? emptyPullWatch(now());
        const w: GitHubPullWatch = structuredClone(was);
        currentWatch = w;
        const events: Array<{ kind: string; data: Json }> = [];
        const base = { forge: 'github', number, taskId: task.id };
        try {
          const pull = await get<Json>('GET /repos/{owner}/{repo}/pulls/{pull_number}', { pull_number: number }, w.etags.pull);
          if (pull) {
            if (pull.etag) w.etags.pull = pull.etag;
            const p = pull.data as {
              state: string;
              merged?: boolean;
              merged_at: string | null;
              merge_commit_sha: string | null;
              mergeable?: boolean | null;
              head: { sha: string };
              base: { ref: string; sha: string };
            };
            w.headCommit = p.head.sha;
            w.baseCommit = p.base.sha;
            w.base = p.base.ref;
            if (p.merged === true || p.merged_at !== null) {
              w.final = 'merged';
              events.push({ kind: 'pr.merged', data: { ...base, mergeCommit: p.merge_commit_sha, how: 'github' } });
            } else if (p.state === 'closed') {
              w.final = 'closed';
              events.push({ kind: 'pr.closed', data: { ...base, reason: 'closed on GitHub without merging' } });
            } else if (p.mergeable === false && w.conflicts !== 'conflicts') {
              w.conflicts = 'conflicts';
              events.push({ kind: 'pr.conflicts', data: { ...base, base: p.base.ref, baseCommit: p.base.sha, headCommit: p.head.sha, files: [] } });
            } else if (p.mergeable === true) {
              if (w.conflicts === 'conflicts') events.push({ kind: 'pr.conflicts_resolved', data: { ...base, baseCommit: p.base.sha, headCommit: p.head.sha } });
              w.conflicts = 'clean';
            }
            // mergeable null: GitHub is computing it; keep the last known state, the next pass reads it again.
          }
          if (!w.final) {
            await readFeedback(w, events, base);
            await readChecks(w, events, base);
          }
        } catch (error) {
          report.errors.push({ number, message: isPollyError(error) ? error.message : String((error as Error)?.message ?? error) });
          continue;
        }
        w.polledAt = now();
        await deps.store.update((draft, tx) => {
          const t = draft.tasks[task.id];
          if (t?.pr?.number !== number || t.pr.forge !== 'github') return;
          t.pr.watch = w;
          for (const e of events) tx.emit(e.kind, e.data);
        });
        for (const e of events) report.events[e.kind] = (report.events[e.kind] ?? 0) + 1;
      }
      return report;

      async function readFeedback(w: GitHubPullWatch, events: Array<{ kind: string; data: Json }>, base: Json): Promise<void> {
        const n = base.number;
        const reviews = await list<RawReview>('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', { pull_number: n }, w.etags.reviews);
        // A new review's line comments go with it: their list is read in full then (a 304 has no body),
        // also when it did not change since a comment of that review was put off (see below).
        const newReview = reviews?.data.some((r) => r.state !== 'PENDING' && !w.seen.reviews.includes(r.id)) ?? false;
        const comments = await list<RawReviewComment>(
          'GET /repos/{owner}/{repo}/pulls/{pull_number}/comments',
          { pull_number: n },
          newReview ? undefined : w.etags.review_comments,
        );
        const issueComments = await list<RawIssueComment>('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', { issue_number: n }, w.etags.issue_comments);
        const seenReviews = new Set(w.seen.reviews);
        const seenComments = new Set(w.seen.reviewComments);
        const lineComment = (c: RawReviewComment) => ({ file: c.path, line: c.line ?? c.original_line ?? 1, body: c.body.slice(0, maxChars) });
        if (reviews) {
          if (reviews.etag) w.etags.reviews = reviews.etag;
          const human = reviews.data.filter((r) => r.state !== 'PENDING' && !isPollyAuthored(r.body));
          const trust = new Map<number, { trusted: boolean; permission: string }>();
          for (const r of human) trust.set(r.id, await trustOf(r.user?.login));
          // Only the reviews of accounts that may steer the worker make the verdict.
          w.review = reviewVerdict(human.filter((r) => trust.get(r.id)?.trusted));
          for (const r of reviews.data) {
            if (seenReviews.has(r.id) || r.state === 'PENDING') continue;
            const t = trust.get(r.id);
            if (t?.permission === 'unknown') {
              // The lookup failed: untrusted for now, and read again next pass (the list in full).
              delete w.etags.reviews;
              continue;
            }
            w.seen.reviews.push(r.id);
            if (isPollyAuthored(r.body)) continue;
            if (t && !t.trusted) {
              for (const c of (comments?.data ?? []).filter((c) => c.pull_request_review_id === r.id && !seenComments.has(c.id))) {
                seenComments.add(c.id);
                w.seen.reviewComments.push(c.id);
              }
              events.push(untrusted(base, r, 'review', t.permission, r.body ?? ''));
              continue;
            }
            if (r.state === 'APPROVED' || r.state === 'DISMISSED') continue;
            // Its line comments go with it, in one event.
            const own = (comments?.data ?? []).filter((c) => c.pull_request_review_id === r.id && !seenComments.has(c.id) && !isPollyAuthored(c.body));
            for (const c of own) {
              seenComments.add(c.id);
              w.seen.reviewComments.push(c.id);
            }
            const body = (r.body ?? '').trim();
            if (body === '' && own.length === 0) continue;
            const first = own[0] ? lineComment(own[0]) : null;
            events.push({
              kind: 'pr.feedback',
              data: {
                ...base,
                event: r.state === 'CHANGES_REQUESTED' ? 'REQUEST_CHANGES' : 'COMMENT',
                body: (body || first?.body || '').slice(0, maxChars),
                ...(first ? { file: first.file, line: first.line } : {}),
                ...(own.length > 0 ? { comments: own.map(lineComment) } : {}),
                author: r.user?.login ?? null,
                id: r.id,
                source: 'review',
              },
            });
          }
        }
        if (comments) {
          if (comments.etag) w.etags.review_comments = comments.etag;
          const knownReviews = new Set(w.seen.reviews);
          for (const c of comments.data) {
            if (seenComments.has(c.id)) continue;
            // Its review was not listed yet (submitted between the two reads): it comes with the review
            // next pass, which reads this list in full (its ETag is dropped: unchanged, it would answer 304).
            if (c.pull_request_review_id !== null && !knownReviews.has(c.pull_request_review_id)) {
              delete w.etags.review_comments;
              continue;
            }
            // Otherwise a line comment added to a review seen before (a reply, a later comment): on its own.
            const t = isPollyAuthored(c.body) ? { trusted: true, permission: 'polly' } : await trustOf(c.user?.login);
            if (t.permission === 'unknown') {
              delete w.etags.review_comments;
              continue;
            }
            seenComments.add(c.id);
            w.seen.reviewComments.push(c.id);
            if (isPollyAuthored(c.body)) continue;
            if (!t.trusted) {
              events.push(untrusted(base, c, 'review_comment', t.permission, c.body));
              continue;
            }
            const lc = lineComment(c);
            events.push({
              kind: 'pr.feedback',
              data: { ...base, event: 'COMMENT', body: lc.body, file: lc.file, line: lc.line, author: c.user?.login ?? null, id: c.id, source: 'review_comment' },
            });
          }
        }
        if (issueComments) {
          if (issueComments.etag) w.etags.issue_comments = issueComments.etag;
          const seen = new Set(w.seen.issueComments);
          for (const c of issueComments.data) {
            if (seen.has(c.id)) continue;
            if (isPollyAuthored(c.body) || !(c.body ?? '').trim()) {
              w.seen.issueComments.push(c.id);
              continue;
            }
            const t = await trustOf(c.user?.login);
            if (t.permission === 'unknown') {
              delete w.etags.issue_comments;
              continue;
            }
            w.seen.issueComments.push(c.id);
            if (!t.trusted) {
              events.push(untrusted(base, c, 'issue_comment', t.permission, c.body ?? ''));
              continue;
            }
            if (w.review === 'none') w.review = 'commented';
            events.push({
              kind: 'pr.feedback',
              data: { ...base, event: 'COMMENT', body: (c.body ?? '').slice(0, maxChars), author: c.user?.login ?? null, id: c.id, source: 'issue_comment' },
            });
          }
        }
      }

      async function readChecks(w: GitHubPullWatch, events: Array<{ kind: string; data: Json }>, base: Json): Promise<void> {
        const head = w.headCommit;
        if (!head) return;
        if (w.checksCommit !== head) {
          // ETags are per commit: a new head starts fresh.
          delete w.etags.check_runs;
          delete w.etags.status;
          w.checksCommit = head;
        }
        const runsRoute = 'GET /repos/{owner}/{repo}/commits/{ref}/check-runs';
        const statusRoute = 'GET /repos/{owner}/{repo}/commits/{ref}/status';
        const params = { ref: head, per_page: 100 };
        let runs = await get<{ check_runs: RawCheckRun[] }>(runsRoute, params, w.etags.check_runs);
        let status = await get<{ statuses: RawStatus[] }>(statusRoute, params, w.etags.status);
        if (!runs && !status) return;
        // One of the two changed: the other's body is needed too (a 304 has none, and the registry keeps no check output).
        runs ??= await get<{ check_runs: RawCheckRun[] }>(runsRoute, params, undefined);
        status ??= await get<{ statuses: RawStatus[] }>(statusRoute, params, undefined);
        if (runs?.etag) w.etags.check_runs = runs.etag;
        if (status?.etag) w.etags.status = status.etag;
        const { state, failing } = checkState(runs?.data.check_runs ?? [], status?.data.statuses ?? [], maxChars);
        w.checks = state;
        const reported = w.reportedChecks?.headCommit === head ? new Set(w.reportedChecks.keys) : new Set<string>();
        // A check that is no longer failing may fail again (a re-run): it is reported again then.
        const failingKeys = new Set(failing.map((f) => f.key));
        for (const k of [...reported]) if (!failingKeys.has(k)) reported.delete(k);
        const fresh = failing.filter((f) => !reported.has(f.key));
        for (const f of fresh) reported.add(f.key);
        w.reportedChecks = { headCommit: head, keys: [...reported].sort() };
        if (fresh.length > 0) {
          events.push({ kind: 'pr.checks_failed', data: { ...base, headCommit: head, checks: fresh.map(({ key: _key, ...c }) => c) } });
        }
      }
    },
  };
}
