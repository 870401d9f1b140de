/**
 * Adopting a task branch the registry does not know: `polly/<id>` already on the remote when the
 * task is dispatched, because its plan ran before and Polly's registry was lost since (deleted,
 * or restored from a backup older than the run). Plan ids count from 1 again in a fresh registry,
 * so the same plan file gets the same task ids and the same branch names.
 *
 * What a careful tool does with someone's commits it finds on a branch it is about to push:
 * keep them. Polly never force-pushes, so there are only two honest ways on — build on the
 * remote branch, or stop and say so — and which one depends on whose commits they are:
 * - **This task's** (a commit in `base..remote` carries `Polly-Task-Content: <key>` with this
 *   task's {@link taskContentKey}, written by run_acceptance): the work is adopted. The worktree
 *   starts at the remote tip instead of the base (a worktree left by the earlier run is moved
 *   forward to it, or kept when it already contains it), the agent is told that the branch holds
 *   an earlier run's work, Polly's checks, push (a fast-forward or nothing) and review run as
 *   usual, and open_draft_pr finds the branch's open PR and reuses it. Redoing the work on the
 *   base would push a second history that git refuses as a non-fast-forward, and opening a second
 *   PR would leave the reviewer two.
 * - **Not this task's** (no such trailer: another plan's task that had the same id, this task with
 *   another prompt or contract, or a branch a person made): nothing is moved or pushed; the task
 *   fails before any agent turn, naming the branch, its tip and how to free the name. Guessing
 *   here would either throw the commits away (a force-push) or ship them under this task's PR.
 * - A worktree left by the earlier run whose branch and the remote's have each moved (diverged) is
 *   the same refusal: Polly does not decide which history wins.
 */
import { isPollyError } from '../core/errors.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { recordPollyRefWrite } from '../../workers/git/ref-guard.js';
import { TASK_CONTENT_TRAILER, taskContentKey, type TaskContent } from '../registry/task-record.js';

/** What {@link adoptRemoteBranch} found and did. */
export type BranchAdoption =
  /** No such branch on the remote (or the remote cannot be read: the push says so later). */
  | { kind: 'none' }
  | {
      kind: 'adopted';
      /** The remote branch's tip, now in the worktree's history. */
      remoteTip: string;
      /** merge-base of the remote tip and the base: the task's `baseCommit` from now on. */
      baseCommit: string;
      /** Commits in `baseCommit..remoteTip`. */
      commits: number;
      /** `reset`: a worktree created now was moved to the remote tip; `fast_forward`: a kept one was; `contained`: a kept one had it already. */
      how: 'reset' | 'fast_forward' | 'contained';
    }
  /** Not this task's, or diverged from a kept worktree: `reason` says what and what to do. */
  | { kind: 'refused'; reason: string };

export interface AdoptRemoteBranchInput {
  repoRoot: string;
  task: TaskContent;
  /** The task's worktree (just created, or kept from an earlier run). */
  worktree: string;
  /** `polly/<id>`. */
  branch: string;
  /** True when the worktree was created by this dispatch (it holds the base and its setup, no work). */
  created: boolean;
  /** The base's commit (the remote's base branch as fetched now, or the local one). */
  baseTip: string;
  /** Remote name (default `origin`). */
  remote?: string;
  git?: GitRunner;
}

/** The tip of `refs/heads/<branch>` on `remote` (`git ls-remote`), null when absent or the remote cannot be read. */
export async function remoteBranchTip(git: GitRunner, cwd: string, remote: string, branch: string): Promise<string | null> {
  try {
    const ls = await git.run(['ls-remote', '--heads', remote, `refs/heads/${branch}`], { cwd, timeoutMs: 60_000, okExitCodes: [2, 128] });
    if (ls.exitCode !== 0) return null;
    return (
      ls.stdout
        .split('\n')
        .map((l) => l.split('\t'))
        .find((p) => p[1] === `refs/heads/${branch}`)?.[0] ?? null
    );
  } catch (error) {
    if (isPollyError(error)) return null;
    throw error;
  }
}

/**
 * The base branch's tip for a task whose registry record has none: `branch` (else the remote's
 * default branch, else the main checkout's current branch) fetched fresh from `remote`, else the
 * local branch. Null when none resolves.
 */
export async function resolveBaseTip(git: GitRunner, repoRoot: string, branch: string | null, remote = 'origin'): Promise<{ branch: string; commit: string } | null> {
  let name = branch;
  if (!name) {
    const r = await git.run(['ls-remote', '--symref', remote, 'HEAD'], { cwd: repoRoot, okExitCodes: [2, 128], timeoutMs: 60_000 });
    name = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(r.stdout)?.[1] ?? null;
  }
  if (!name) {
    const r = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: repoRoot, okExitCodes: [1, 128] });
    name = r.exitCode === 0 ? firstLine(r) : null;
  }
  if (!name) return null;
  await git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/${name}:refs/remotes/${remote}/${name}`], { cwd: repoRoot, okExitCodes: [1, 128], timeoutMs: 300_000 });
  const commit = (await revParse(git, repoRoot, `refs/remotes/${remote}/${name}`)) ?? (await revParse(git, repoRoot, `refs/heads/${name}`));
  return commit ? { branch: name, commit } : null;
}

async function revParse(git: GitRunner, cwd: string, ref: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd, okExitCodes: [1, 128] });
  return r.exitCode === 0 ? firstLine(r) : null;
}

async function isAncestor(git: GitRunner, cwd: string, a: string, b: string): Promise<boolean> {
  return (await git.run(['merge-base', '--is-ancestor', a, b], { cwd, okExitCodes: [1] })).exitCode === 0;
}

/**
 * Look for `input.branch` on the remote and adopt it or refuse it (see the module doc). Fetches
 * the branch into `refs/remotes/<remote>/<branch>`; when adopting, moves the worktree's branch to
 * the remote tip (recorded as Polly's own ref write for the ref guard). Never pushes.
 * @throws PollyError `git_failed` when git fails in a way that is not an answer (the fetch of a branch ls-remote just listed).
 */
export async function adoptRemoteBranch(input: AdoptRemoteBranchInput): Promise<BranchAdoption> {
  const git = input.git ?? createGitRunner();
  const remote = input.remote ?? 'origin';
  const { repoRoot, branch, worktree, task } = input;
  const remoteTip = await remoteBranchTip(git, repoRoot, remote, branch);
  if (!remoteTip) return { kind: 'none' };
  const tracking = `refs/remotes/${remote}/${branch}`;
  await git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/${branch}:${tracking}`], { cwd: repoRoot, timeoutMs: 300_000 });
  const mergeBase = await git.run(['merge-base', remoteTip, input.baseTip], { cwd: repoRoot, okExitCodes: [1] });
  const baseCommit = mergeBase.exitCode === 0 ? firstLine(mergeBase) : null;
  const range = baseCommit ? `${baseCommit}..${remoteTip}` : remoteTip;
  const log = await git.run(['log', `--format=%(trailers:key=${TASK_CONTENT_TRAILER},valueonly,separator=%x2C)`, range], { cwd: repoRoot });
  const keys = new Set(
    log.stdout
      .split(/[\n,]/)
      .map((k) => k.trim())
      .filter(Boolean),
  );
  const key = taskContentKey(task);
  const commits = Number(firstLine(await git.run(['rev-list', '--count', range], { cwd: repoRoot })));
  const at = `${remote} has ${branch} at ${remoteTip.slice(0, 12)} (${commits} commit${commits === 1 ? '' : 's'} not on the base)`;
  if (!baseCommit || !keys.has(key)) {
    return {
      kind: 'refused',
      reason:
        `${at}, and none of them is this task's work: no commit carries "${TASK_CONTENT_TRAILER}: ${key}" (another plan's task that had the id ${task.id}, this task with another prompt or acceptance, or a branch someone made). ` +
        `Polly never force-pushes over commits it did not make for this task, so nothing was pushed and no agent started. ` +
        `Keep that work under another name and free the branch (git push ${remote} ${tracking}:refs/heads/${branch}-kept && git push ${remote} :refs/heads/${branch}), or delete it if it is not needed, then: polly retry ${task.id}`,
    };
  }
  const head = firstLine(await git.run(['rev-parse', 'HEAD'], { cwd: worktree }));
  if (await isAncestor(git, worktree, remoteTip, head)) return { kind: 'adopted', remoteTip, baseCommit, commits, how: 'contained' };
  const branchRef = `refs/heads/${branch}`;
  if (input.created) {
    // Made by this dispatch from the base a moment ago: nothing of an agent is in it.
    recordPollyRefWrite('local', branchRef, remoteTip, repoRoot);
    await git.run(['reset', '--hard', '--quiet', '--no-recurse-submodules', remoteTip], { cwd: worktree });
    return { kind: 'adopted', remoteTip, baseCommit, commits, how: 'reset' };
  }
  if (await isAncestor(git, worktree, head, remoteTip)) {
    recordPollyRefWrite('local', branchRef, remoteTip, repoRoot);
    const ff = await git.run(['merge', '--ff-only', '--quiet', remoteTip], { cwd: worktree, okExitCodes: [1, 128] });
    if (ff.exitCode === 0) return { kind: 'adopted', remoteTip, baseCommit, commits, how: 'fast_forward' };
    return {
      kind: 'refused',
      reason: `${at}, this task's earlier work, ahead of the worktree ${worktree} (at ${head.slice(0, 12)}), which cannot be fast-forwarded to it: ${(ff.stderr || ff.stdout).trim().split('\n').slice(-3).join(' | ')}. Commit or move the worktree's changes, then: polly retry ${task.id}`,
    };
  }
  return {
    kind: 'refused',
    reason:
      `${at}, this task's earlier work, and the worktree ${worktree} left by that run is on ${branch} at ${head.slice(0, 12)}: each has commits the other lacks. ` +
      `Polly never force-pushes and does not choose between them: merge ${tracking} into ${branch} in that worktree (or remove the worktree to build on ${remote}'s), then: polly retry ${task.id}`,
  };
}
