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
 *   `unknown` (not checked yet, or the PR is merged/closed).
 */
export interface PullRequestStatus {
  review: 'changes_requested' | 'approved' | 'commented' | 'none';
  checks: 'passing' | 'failing' | 'pending' | 'none';
  conflicts: 'clean' | 'conflicts' | 'unknown';
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
    conflicts: m ? m.state : 'unknown',
    conflictFiles: m?.state === 'conflicts' ? m.files : [],
  };
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
 * empty. `state` is the PR's state in the task record (merged/closed PRs have no conflict state).
 */
export function githubPullRequestStatus(watch: GitHubPullWatch | undefined, state: LocalPullRequest['state']): PullRequestStatus {
  const open = state === 'draft' || state === 'open' || state === 'ready';
  if (!watch) return { review: 'none', checks: 'none', conflicts: 'unknown', conflictFiles: [] };
  return { review: watch.review, checks: watch.checks, conflicts: open ? watch.conflicts : 'unknown', conflictFiles: [] };
}
