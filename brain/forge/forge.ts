/**
 * The forge: where Polly's pull requests live (GitHub, or the local forge recorded in the
 * registry). One narrow interface with two implementations (`github-forge.ts`, `local-forge.ts`).
 *
 * **Polly never merges.** The interface has no merge method of any kind, on purpose: a human merges
 * (on GitHub, or with git for the local forge) and Polly only notices it (`getPullRequest` reports
 * `merged`). {@link NoMergeKeys} makes that a compile-time property of every implementation.
 */

/**
 * A pull request's state as Polly sees it:
 * - `draft`: open and marked draft (how Polly opens every PR),
 * - `ready`: open and ready for review (after {@link Forge.markReady}, or opened non-draft by a human),
 * - `merged`: merged by a human (squash and fast-forward included),
 * - `closed`: closed without merging.
 * `open` is kept for registry compatibility (`PullRequestRef.state`); the forges here never report it.
 */
export type PullRequestState = 'draft' | 'open' | 'ready' | 'merged' | 'closed';

export interface OpenPullRequestInput {
  /** The branch with the work, e.g. `polly/t1` (already pushed). */
  head: string;
  /** The branch to merge into: the task's base branch. */
  base: string;
  title: string;
  /** Markdown (see `pr-body.ts`). */
  body: string;
}

/** What opening a PR returns; `forge` + `number` + `url` + `state` is the registry's `PullRequestRef`. */
export interface OpenedPullRequest {
  forge: 'local' | 'github';
  number: number;
  url: string;
  state: PullRequestState;
  /** The commit the PR head pointed at when it was opened. */
  headSha: string;
}

export type ReviewEvent = 'COMMENT' | 'REQUEST_CHANGES' | 'APPROVE';

/** A review comment on one line of the PR's diff (the new side). */
export interface ReviewCommentInput {
  /** Path relative to the repository root. */
  path: string;
  /** 1-based line number in the new version of the file. */
  line: number;
  body: string;
}

export interface ReviewInput {
  event: ReviewEvent;
  body: string;
  comments: ReviewCommentInput[];
}

/** A pull request read back from the forge. */
export interface PullRequestInfo {
  forge: 'local' | 'github';
  number: number;
  url: string;
  title: string;
  state: PullRequestState;
  merged: boolean;
  /** The commit on the base branch that carries the PR (merge, fast-forward or squash commit); null until merged or when unknown. */
  mergeCommitSha: string | null;
  headSha: string;
  base: string;
  head: string;
}

export interface ListPullRequestsOptions {
  /** `open` (draft or ready; the default), `closed` (merged or closed) or `all`. */
  state?: 'open' | 'closed' | 'all';
}

/**
 * The forge interface. Every method throws PollyError `forge_failed` when the forge rejects a
 * request (the message names the request and the forge's answer) and `not_found` for an unknown
 * PR number. There is no merge method, and there must never be one.
 */
export interface Forge {
  readonly kind: 'local' | 'github';
  /** Open a draft PR from `head` into `base`. The head branch must already be on the remote. */
  openDraftPullRequest(input: OpenPullRequestInput): Promise<OpenedPullRequest>;
  /** Mark a draft PR ready for review (a no-op when it already is). */
  markReady(number: number): Promise<void>;
  /** Post a review with line comments. Returns the review's id on the forge. */
  postReview(number: number, review: ReviewInput): Promise<{ id: number }>;
  /** Post a plain comment on the PR's conversation. */
  comment(number: number, body: string): Promise<{ id: number }>;
  /**
   * Replace the PR's description (markdown, see `pr-body.ts`), e.g. once the review is in. GitHub:
   * `PATCH /repos/{owner}/{repo}/pulls/{pull_number}` with `body`
   * (https://docs.github.com/en/rest/pulls/pulls#update-a-pull-request).
   * @throws PollyError `not_found` for an unknown PR.
   */
  updateBody(number: number, body: string): Promise<void>;
  /**
   * Change the branch an open PR targets: a stacked task's PR targets its parent task's branch, and
   * once the parent merged it is retargeted to the parent's base (brain/forge/after-merge.ts). A
   * no-op when the PR already targets `base`. GitHub: `PATCH /repos/{owner}/{repo}/pulls/{pull_number}`
   * with `base` (https://docs.github.com/en/rest/pulls/pulls#update-a-pull-request); local: the record's base.
   * @throws PollyError `not_found` for an unknown PR, `conflict` for a merged or closed one,
   *   `forge_failed` when `base` does not exist on the remote.
   */
  retarget(number: number, base: string): Promise<void>;
  /** Read one PR's current state (merged included). */
  getPullRequest(number: number): Promise<PullRequestInfo>;
  /** List PRs, newest first. */
  listPullRequests(options?: ListPullRequestsOptions): Promise<PullRequestInfo[]>;
  /**
   * The open PR (draft or ready) from branch `head` into `base`, newest first when several, or
   * null. How Polly finds the PR it opened before a crash or before its registry was lost, instead
   * of opening a second one. GitHub: `GET /repos/{owner}/{repo}/pulls?state=open&head={owner}:{head}&base={base}`
   * (https://docs.github.com/en/rest/pulls/pulls#list-pull-requests; `head` is `user:ref-name`, the
   * repository owner's since Polly pushes to that repository). Local: the registry's open records.
   */
  findOpenPullRequest(head: string, base: string): Promise<PullRequestInfo | null>;
}

/** Keys of `T` whose name contains "merge" in any letter case. `never` for a compliant forge. */
export type MergeKeys<T> = {
  [K in keyof T & string]: Lowercase<K> extends `${string}merge${string}` ? K : never;
}[keyof T & string];

/**
 * `true` when `T` has no merge-like key. Implementations assert it at compile time:
 * `const noMerge: NoMergeKeys<typeof forge> = true;` fails to compile if a merge method appears.
 */
export type NoMergeKeys<T> = [MergeKeys<T>] extends [never] ? true : false;

/** Compile-time: the interface itself has no merge-like member. */
const interfaceHasNoMerge: NoMergeKeys<Forge> = true;
void interfaceHasNoMerge;

/**
 * Runtime check of the same rule, for objects built at run time (and tests): the names of all
 * properties (own and inherited, except Object.prototype's) matching /merge/i. Empty for a forge.
 */
export function mergeLikeMethodNames(forge: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = forge; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (/merge/i.test(name)) names.add(name);
    }
  }
  return [...names];
}
