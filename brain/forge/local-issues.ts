/**
 * The local forge's issues (issue 30): the twin of GitHub's issues for a repository without a
 * GitHub remote, kept in the registry (`issues`, {@link LocalIssue}) and numbered in the local
 * forge's PR sequence (as GitHub numbers issues and PRs in one sequence). `polly issue add` opens
 * one, `polly issue comment` answers on it (e.g. `/polly approve`), `polly goal --issue N` (or
 * `polly watch`, for the intake label) takes it in. The local forge has one kind of account: a
 * human at this machine (`local`), who may answer the plan gate as a maintainer may on GitHub;
 * Polly's own comments are `polly`. Journal: `issue.opened`, `issue.commented`.
 */
import { PollyError } from '../core/errors.js';
import type { LocalIssue, Registry } from '../registry/registry-schema.js';
import type { IssueTracker, TrackerIssue } from './issue-tracker.js';
import type { LocalForgeStore } from './local-forge.js';
import { markedBody } from './github-forge.js';

/** The URL shown for a local issue. */
export function localIssueUrl(number: number): string {
  return `polly-local:issue/${number}`;
}

/** The author of comments written at this machine (`polly issue comment`). */
export const LOCAL_HUMAN = 'local';

function toTracker(i: LocalIssue): TrackerIssue {
  return { number: i.number, title: i.title, body: i.body, url: localIssueUrl(i.number), author: LOCAL_HUMAN, state: i.state, labels: [...i.labels] };
}

function requireIssue(reg: Registry, number: number): LocalIssue {
  const issue = reg.issues?.[String(number)];
  if (!issue) {
    const known = Object.keys(reg.issues ?? {});
    throw new PollyError(
      'not_found',
      `no local issue #${number}${known.length ? `; known: ${known.map((n) => `#${n}`).join(', ')}` : ' (none yet)'}. Open one with polly issue add "TITLE".`,
      {
        details: { number },
      },
    );
  }
  return issue;
}

function nextCommentId(reg: Registry): number {
  let max = 0;
  for (const i of Object.values(reg.issues ?? {})) for (const c of i.comments) max = Math.max(max, c.id);
  return max + 1;
}

/**
 * Open a local issue (`polly issue add`). Labels default to none; `polly issue add --label polly`
 * (config `intake.label`) lets `polly watch` take it in.
 * @throws PollyError `bad_input` for an empty title.
 */
export async function addLocalIssue(store: LocalForgeStore, input: { title: string; body?: string; labels?: string[] }, now: Date = new Date()): Promise<LocalIssue> {
  const title = input.title.trim();
  if (!title) throw new PollyError('bad_input', 'polly issue add: the title is empty. Say what the issue is, e.g. polly issue add "median() of an empty list throws".');
  return store.update((draft, tx) => {
    draft.counters.pullRequest += 1;
    const at = now.toISOString();
    const issue: LocalIssue = {
      number: draft.counters.pullRequest,
      title,
      body: input.body ?? '',
      labels: [...new Set(input.labels ?? [])],
      state: 'open',
      comments: [],
      createdAt: at,
      updatedAt: at,
    };
    draft.issues ??= {};
    draft.issues[String(issue.number)] = issue;
    tx.emit('issue.opened', { forge: 'local', number: issue.number, title, labels: issue.labels });
    return structuredClone(issue);
  });
}

/**
 * Add a comment to a local issue as `author` (`local` for a human's `polly issue comment`).
 * @throws PollyError `not_found` (unknown issue), `bad_input` (empty body).
 */
export async function addLocalIssueComment(store: LocalForgeStore, number: number, body: string, author: string = LOCAL_HUMAN, now: Date = new Date()): Promise<{ id: number }> {
  if (!body.trim()) throw new PollyError('bad_input', `polly issue comment ${number}: the comment is empty. Write e.g. "/polly approve".`);
  return store.update((draft, tx) => {
    const issue = requireIssue(draft, number);
    const id = nextCommentId(draft);
    const at = now.toISOString();
    issue.comments.push({ id, author, body, createdAt: at, updatedAt: at });
    issue.updatedAt = at;
    tx.emit('issue.commented', { forge: 'local', number, id, author });
    return { id };
  });
}

/** The local issues, newest first. */
export async function listLocalIssues(store: LocalForgeStore): Promise<LocalIssue[]> {
  return Object.values((await store.read()).issues ?? {}).sort((a, b) => b.number - a.number);
}

/** One local issue. @throws PollyError `not_found`. */
export async function localIssue(store: LocalForgeStore, number: number): Promise<LocalIssue> {
  return requireIssue(await store.read(), number);
}

/** The local forge's issues as an {@link IssueTracker} (see the module comment). */
export function createLocalIssueTracker(deps: { store: LocalForgeStore; now?: () => Date }): IssueTracker {
  const now = () => (deps.now ? deps.now() : new Date());
  return {
    kind: 'local',
    async listLabelled(label) {
      return (await listLocalIssues(deps.store)).filter((i) => i.state === 'open' && i.labels.includes(label)).map(toTracker);
    },
    async getIssue(number) {
      return toTracker(await localIssue(deps.store, number));
    },
    async labelledBy(number, label) {
      // Labels on the local forge are set at this machine: by its human.
      return (await localIssue(deps.store, number)).labels.includes(label) ? [LOCAL_HUMAN] : [];
    },
    async listComments(number) {
      return (await localIssue(deps.store, number)).comments.map((c) => ({ id: c.id, author: c.author, body: c.body, createdAt: c.createdAt, updatedAt: c.updatedAt }));
    },
    async comment(number, body) {
      return addLocalIssueComment(deps.store, number, markedBody(body), 'polly', now());
    },
    async editComment(id, body) {
      await deps.store.update((draft) => {
        for (const i of Object.values(draft.issues ?? {})) {
          const c = i.comments.find((x) => x.id === id);
          if (!c) continue;
          c.body = markedBody(body);
          c.updatedAt = now().toISOString();
          return;
        }
        throw new PollyError('not_found', `no local issue comment ${id}.`, { details: { id } });
      });
    },
    async trustOf(login) {
      return login === LOCAL_HUMAN ? { trusted: true, permission: 'local' } : { trusted: false, permission: 'none' };
    },
    stats: () => ({ requests: 0, notModified: 0 }),
  };
}
