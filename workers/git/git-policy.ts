/**
 * The sandbox's git policy: Polly is the only writer of git metadata.
 *
 * A linked worktree shares refs and objects with the user's repository, and none of it can be
 * split per worker (measured: binding one ref file read-write breaks git's `.lock` + rename;
 * binding `refs/heads/polly/` exposes sibling tasks; a writable `objects/` lets a worker delete
 * `main`'s objects; `packed-refs` and reftable are one file for every ref). So inside the sandbox
 * the common git dir — refs, objects, `packed-refs`, config, hooks, and the worktree's own admin
 * dir `worktrees/<id>/` (index, HEAD) — is read-only, and so is the worktree's `.git` file (it
 * sits in the writable worktree; pointed elsewhere, Polly's own `git add` would run another
 * repository's config). Measured with bubblewrap on a linked worktree: `git status`, `git diff`
 * and `git log` work (git refreshes the index only opportunistically); `git add`, `git commit`,
 * `git stash`, `git update-ref`, `git gc` and writing `.git/hooks/*` fail with "Read-only file
 * system". The agent's prompt says "Polly commits your changes; do not run git commit/push"
 * (brain/task-tools/dispatch.ts), and Polly commits what the agent leaves (`commitAll`).
 *
 * What the sandbox shows at the common git dir's path is not the repository's git dir but the
 * task's private read view (workers/sandbox/git-read-view.ts, docs/read-view.md: a sanitized
 * config, the task's branch as the only ref, only the objects its base and its commits reach),
 * read-only too. Nothing is fetched back from it: a private git dir the worker could commit in
 * would buy nothing Polly needs (Polly commits anyway, in the real repository, so the user's
 * `.worktrees/<id>` keeps pointing at it).
 *
 * The user keeps `.worktrees/<id>` on `polly/<id>` as before. Where no sandbox runs
 * (`workers.allow_unconfined`), the ref guard (./ref-guard.ts) detects and undoes what a worker
 * changed instead.
 */
import { join } from 'node:path';

export interface GitPolicyInput {
  /** The repository's common git dir (absolute; `git rev-parse --git-common-dir`). */
  commonDir: string;
  /** The worker's worktree (absolute), or null for a process outside any worktree (a reviewer). */
  worktree: string | null;
}

/** What the sandbox must mount read-only for git, on top of a writable worktree. */
export interface GitMountPolicy {
  /** Paths bound read-only (they win over a writable parent). */
  readOnly: string[];
}

/**
 * The read-only mounts of the git policy: the common git dir (refs, objects, config, hooks, the
 * worktree admin dirs) and the worktree's `.git` file. Pure.
 */
export function gitMountPolicy(input: GitPolicyInput): GitMountPolicy {
  const readOnly = [input.commonDir];
  if (input.worktree) readOnly.push(join(input.worktree, '.git'));
  return { readOnly };
}

/** The line every implementer prompt carries (the scripted model and the tests match on it). */
export const POLLY_COMMITS_LINE =
  'Polly commits your changes; do not run git commit or git push, and do not open a pull request (the git metadata is read-only for you; moving any ref fails the task).';
