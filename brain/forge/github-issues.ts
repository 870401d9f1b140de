/**
 * GitHub's issues as an {@link IssueTracker} (issue 30), on the Octokit client the forge and the
 * PR watcher share (`github-client.ts`: `@octokit/plugin-throttling` waits out rate limits and
 * `@octokit/plugin-retry` retries server errors).
 *
 * Reads are conditional: the last ETag of each list is sent as `If-None-Match`, and an unchanged
 * list answers `304 Not Modified`, which does not count against the primary rate limit
 * (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api).
 * Endpoints (https://docs.github.com/en/rest/issues):
 * - `GET /repos/{owner}/{repo}/issues?labels=L&state=open` (issues and PRs; PRs carry `pull_request` and are left out),
 * - `GET /repos/{owner}/{repo}/issues/{n}`, `GET …/issues/{n}/events` (`labeled` events name their `actor`),
 * - `GET …/issues/{n}/comments`, `POST …/issues/{n}/comments`, `PATCH …/issues/comments/{id}`,
 * - the collaborator permission endpoint, through the shared {@link PermissionCheck}.
 * Every comment Polly posts carries {@link POLLY_MARKER}. Nothing here closes an issue or merges.
 */
import { PollyError } from '../core/errors.js';
import type { PermissionCheck } from './github-permissions.js';
import { markedBody } from './github-forge.js';
import type { PullWatchClient } from './github-watch.js';
import type { IssueTracker, TrackerComment, TrackerIssue, TrackerStats } from './issue-tracker.js';

interface RawIssue {
  number: number;
  title: string;
  body?: string | null;
  html_url: string;
  state: string;
  user: { login?: string } | null;
  labels: Array<string | { name?: string }>;
  pull_request?: unknown;
}
interface RawComment {
  id: number;
  user: { login?: string } | null;
  body?: string;
  created_at: string;
  updated_at: string;
  author_association?: string;
}
interface RawEvent {
  event: string;
  actor: { login?: string } | null;
  label?: { name?: string };
}

/** Map a REST issue. Pure. */
export function trackerIssueFromRest(raw: RawIssue): TrackerIssue {
  return {
    number: raw.number,
    title: raw.title,
    body: raw.body ?? '',
    url: raw.html_url,
    author: raw.user?.login ?? null,
    state: raw.state === 'closed' ? 'closed' : 'open',
    labels: raw.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean),
  };
}

export interface GitHubIssueTrackerDeps {
  client: PullWatchClient;
  owner: string;
  repo: string;
  permissions: PermissionCheck;
}

/** Create the tracker for `owner/repo` (see the module comment). ETags are kept for the tracker's life. */
export function createGitHubIssueTracker(deps: GitHubIssueTrackerDeps): IssueTracker {
  const { client, owner, repo } = deps;
  const stats: TrackerStats = { requests: 0, notModified: 0 };
  const etags = new Map<string, string>();

  const failure = (what: string, error: unknown): PollyError => {
    const e = error as { status?: number; message?: string };
    if (e.status === 404) return new PollyError('not_found', `GitHub ${what} in ${owner}/${repo}: not found (404). Check the number and that the token can see the repository.`);
    return new PollyError('forge_failed', `GitHub ${what} in ${owner}/${repo} failed${e.status ? ` (${e.status})` : ''}: ${e.message ?? String(error)}`, {
      cause: error,
      details: { status: e.status ?? null },
    });
  };
  /** One request; a conditional GET (`key`) answers null on 304. */
  const send = async <T>(what: string, route: string, params: Record<string, unknown>, key?: string): Promise<T | null> => {
    stats.requests += 1;
    const etag = key ? etags.get(key) : undefined;
    try {
      const r = await client.request(route, { owner, repo, ...params, ...(etag ? { headers: { 'if-none-match': etag } } : {}) });
      if (key && r.headers.etag !== undefined) etags.set(key, String(r.headers.etag));
      return r.data as T;
    } catch (error) {
      if ((error as { status?: number }).status === 304 && etag) {
        stats.notModified += 1;
        return null;
      }
      throw failure(what, error);
    }
  };
  /** Every page of a list (100 a page; only the first is conditional, and only with a `key`). */
  const list = async <T>(what: string, route: string, params: Record<string, unknown>, key: string): Promise<T[] | null> => {
    const first = await send<T[]>(what, route, { ...params, per_page: 100, page: 1 }, key || undefined);
    if (first === null) return null;
    const all = [...first];
    for (let page = 2, last = first; last.length === 100 && page <= 50; page++) {
      last = (await send<T[]>(what, route, { ...params, per_page: 100, page }))!;
      all.push(...last);
    }
    return all;
  };

  return {
    kind: 'github',
    async listLabelled(label) {
      const raw = await list<RawIssue>(`GET issues?labels=${label}`, 'GET /repos/{owner}/{repo}/issues', { labels: label, state: 'open' }, `labelled:${label}`);
      return raw === null ? null : raw.filter((i) => i.pull_request === undefined || i.pull_request === null).map(trackerIssueFromRest);
    },
    async getIssue(number) {
      const raw = (await send<RawIssue>(`GET issues/${number}`, 'GET /repos/{owner}/{repo}/issues/{issue_number}', { issue_number: number }))!;
      if (raw.pull_request) throw new PollyError('not_found', `#${number} in ${owner}/${repo} is a pull request, not an issue. Name an issue's number.`, { details: { number } });
      return trackerIssueFromRest(raw);
    },
    async labelledBy(number, label) {
      // Read only when the labelled list changed and the issue is not decided yet: not conditional (the answer is needed whole).
      const events = (await list<RawEvent>(`GET issues/${number}/events`, 'GET /repos/{owner}/{repo}/issues/{issue_number}/events', { issue_number: number }, ''))!;
      return events.filter((e) => e.event === 'labeled' && e.label?.name === label && e.actor?.login).map((e) => e.actor!.login!);
    },
    async listComments(number, options) {
      if (options?.fresh) etags.delete(`comments:${number}`);
      const raw = await list<RawComment>(
        `GET issues/${number}/comments`,
        'GET /repos/{owner}/{repo}/issues/{issue_number}/comments',
        { issue_number: number },
        `comments:${number}`,
      );
      if (raw === null) return null;
      return raw.map(
        (c): TrackerComment => ({
          id: c.id,
          author: c.user?.login ?? null,
          body: c.body ?? '',
          createdAt: c.created_at,
          updatedAt: c.updated_at,
          ...(c.author_association ? { association: c.author_association } : {}),
        }),
      );
    },
    async comment(number, body) {
      const r = (await send<{ id: number }>(`POST issues/${number}/comments`, 'POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        issue_number: number,
        body: markedBody(body),
      }))!;
      return { id: r.id };
    },
    async editComment(id, body) {
      await send(`PATCH issues/comments/${id}`, 'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', { comment_id: id, body: markedBody(body) });
    },
    async trustOf(login) {
      const t = await deps.permissions.trustOf(login);
      if (t.requested) stats.requests += 1;
      return { trusted: t.trusted, permission: t.permission };
    },
    stats: () => ({ ...stats }),
  };
}
