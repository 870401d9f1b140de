/**
 * One line of truth about an open PR's life after "ready" (issue 16): its review state, its check
 * state and whether it still merges. Pure: computed from the local forge's record and the task's
 * acceptance results, or from what the GitHub PR watcher last saw (`github-watch.ts`), for
 * `polly pr list` and `polly status`.
 */
import type { CommandResult, GitHubPullWatch, LocalPullRequest } from '../registry/registry-schema.js';

/**
 * - `review`: the latest decisive review wins (`changes_requested` or `approved`); with none, a
 *   comment makes it `commented`; else `none`.
 * - `checks`: local forge: the task's acceptance commands as Polly last ran them: `passing` (all
 *   exit 0), `failing`, or `none` (never run / no task). GitHub: the head commit's check runs and
 *   commit statuses, which may also be `pending`.
 * - `conflicts`: Polly's last merge check against the base's tip: `clean`, `conflicts`, or
 *   `unknown` (not checked yet); for a PR that is no longer open, its end: `merged` or `closed`
 *   (nothing is left to merge, so there is no conflict state).
 */
export interface PullRequestStatus {
  review: 'changes_requested' | 'approved' | 'commented' | 'none';
  checks: 'passing' | 'failing' | 'pending' | 'none';
  conflicts: 'clean' | 'conflicts' | 'unknown' | 'merged' | 'closed';
  /** Conflicted paths (empty unless `conflicts`). */
  conflictFiles: string[];
}

/**
 * The status of `pr`; `checks` are the task's last acceptance results (empty: none run). Polly's
 * own check of the head merged with the moved base (`pr.localCheck`, brain/forge/local-pr-checks.ts)
 * wins while it is about the current head: a failure there is `failing` even though the task's
 * own run was green; so does a check run reported red with `polly pr check` on the current head
 * (the latest run per check name counts).
 */
export function pullRequestStatus(
  pr: Pick<LocalPullRequest, 'reviews' | 'mergeability' | 'state' | 'localCheck' | 'checkRuns'> & { headCommit?: string },
  checks: readonly CommandResult[],
): PullRequestStatus {
  let review: PullRequestStatus['review'] = 'none';
  for (const r of pr.reviews) {
    if (r.event === 'REQUEST_CHANGES') review = 'changes_requested';
    else if (r.event === 'APPROVE') review = 'approved';
    else if (review === 'none') review = 'commented';
  }
  const open = pr.state === 'draft' || pr.state === 'open' || pr.state === 'ready';
  const m = open ? pr.mergeability : undefined;
  return {
    review,
    checks:
      (pr.localCheck !== undefined && pr.localCheck.headCommit === pr.headCommit && pr.localCheck.conclusion === 'failure') || reportedRunFails(pr)
        ? 'failing'
        : checks.length === 0
          ? 'none'
          : checks.every((c) => c.exitCode === 0 && !c.timedOut)
            ? 'passing'
            : 'failing',
    conflicts: ended(pr.state) ?? (m ? m.state : 'unknown'),
    conflictFiles: m?.state === 'conflicts' ? m.files : [],
  };
}

/** The findings of one cross-review round (a subset of ReviewRecord, brain/registry/registry-schema.ts). */
export interface CrossReviewCounts {
  reviewer: string;
  blocking: readonly unknown[];
  nonBlocking: readonly unknown[];
}

/**
 * The review state in words for people (`polly pr list/show`, `polly status`). Polly posts its
 * cross-review as a COMMENT review (an author cannot approve its own PR on GitHub), so `commented`
 * alone hides what the review found: with the task's cross-review rounds it says that instead, from
 * the latest round: `no findings (pi)`, `no blocking findings, 1 non-blocking (pi)`, `2 blocking (pi)`.
 * JSON output keeps the state word (`commented`).
 */
export function reviewText(review: PullRequestStatus['review'], crossReviews: readonly CrossReviewCounts[] = []): string {
  const last = crossReviews.at(-1);
  if (review === 'commented' && last) {
    const who = `(${last.reviewer})`;
    if (last.blocking.length > 0) return `${last.blocking.length} blocking ${who}`;
    return last.nonBlocking.length > 0 ? `no blocking findings, ${last.nonBlocking.length} non-blocking ${who}` : `no findings ${who}`;
  }
  return review;
}

/** True when the latest reported run of some check name (`polly pr check`) on the current head did not succeed. */
function reportedRunFails(pr: Pick<LocalPullRequest, 'checkRuns'> & { headCommit?: string }): boolean {
  const latest = new Map<string, string>();
  for (const r of pr.checkRuns ?? []) if (r.headCommit === pr.headCommit) latest.set(r.name, r.conclusion);
  return [...latest.values()].some((c) => c !== 'success');
}

/**
 * The status of a GitHub PR from the watcher's record (`TaskRecord.pr.watch`; absent before the
 * watcher's first pass: all unknown). GitHub does not name conflicting files: `conflictFiles` is
 * empty. `state` is the PR's state in the task record (a merged/closed PR's `conflicts` is that end).
 */
export function githubPullRequestStatus(watch: GitHubPullWatch | undefined, state: LocalPullRequest['state']): PullRequestStatus {
  const end = ended(state);
  if (!watch) return { review: 'none', checks: 'none', conflicts: end ?? 'unknown', conflictFiles: [] };
  return { review: watch.review, checks: watch.checks, conflicts: end ?? watch.conflicts, conflictFiles: [] };
}

/** `merged`/`closed` for a PR that is no longer open, else null. */
function ended(state: LocalPullRequest['state']): 'merged' | 'closed' | null {
  return state === 'merged' || state === 'closed' ? state : null;
}

/**
 * The merge part of a PR's one-line status, as `polly status` and `polly pr` print it:
 * `conflicts: a.ts,b.ts`, `merged`, `closed`, or `merge clean` / `merge unknown`.
 */
export function mergeText(status: Pick<PullRequestStatus, 'conflicts' | 'conflictFiles'>): string {
  if (status.conflicts === 'conflicts') return `conflicts${status.conflictFiles.length > 0 ? `: ${status.conflictFiles.join(',')}` : ''}`;
  if (status.conflicts === 'merged' || status.conflicts === 'closed') return status.conflicts;
  return `merge ${status.conflicts}`;
}
