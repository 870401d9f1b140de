/**
 * Noticing that a human merged a pull request.
 *
 * - {@link detectMerge}: git-level detection for the local forge, by commit (the PR's recorded head
 *   commit), against one or more base refs (the remote's base and the local base). It recognises a
 *   merge commit, a fast-forward, a squash merge (also after the base moved on) and a rebase merge,
 *   and names the commit on the base that carries the work.
 * - {@link watchForMerges}: a polling loop over any {@link Forge} (GitHub or local) with an
 *   injected clock. Against GitHub every poll is a conditional GET (ETag), so an unchanged PR
 *   costs a `304` that does not count against the rate limit (test/brain/forge/github-forge.test.ts: 20 PRs watched for an hour).
 *
 * This is Polly's one merge detection. It works from a commit (the head branch may be deleted
 * after the merge), uses three tests (ancestor, `merge-tree` tree equality, `git cherry`), and also
 * finds the merge commit, which the PR record keeps.
 */
import type { Forge, PullRequestInfo } from './forge.js';
import type { GitRunner } from '../../workers/git/git.js';
import { firstLine } from '../../workers/git/git.js';

export interface MergeDetection {
  merged: boolean;
  /**
   * How: `ancestor` (merge commit or fast-forward: the head commit is in the base), `tree` (the
   * head's changes are all in the base: squash merge), `patch` (every head commit has a
   * patch-equal commit in the base: rebase merge). null when not merged.
   */
  how: 'ancestor' | 'tree' | 'patch' | null;
  /** The base ref in which the merge was found. */
  baseRef: string | null;
  /** The commit on the base's first-parent line that brought the work in (the head itself for a fast-forward); null when unknown. */
  mergeCommitSha: string | null;
}

/** The answer for work not (yet) merged. */
export const NOT_MERGED: MergeDetection = Object.freeze({ merged: false, how: null, baseRef: null, mergeCommitSha: null });

async function resolve(git: GitRunner, cwd: string, ref: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd, okExitCodes: [1, 128] });
  return r.exitCode === 0 ? firstLine(r) : null;
}

async function isAncestor(git: GitRunner, cwd: string, a: string, b: string): Promise<boolean> {
  const r = await git.run(['merge-base', '--is-ancestor', a, b], { cwd, okExitCodes: [1] });
  return r.exitCode === 0;
}

/** Tree of merging `head` into `commit`, or null on conflict. */
async function mergedTree(git: GitRunner, cwd: string, commit: string, head: string): Promise<string | null> {
  const r = await git.run(['merge-tree', '--write-tree', '--no-messages', commit, head], { cwd, okExitCodes: [1] });
  return r.exitCode === 0 ? firstLine(r) : null;
}

async function treeOf(git: GitRunner, cwd: string, commit: string): Promise<string> {
  return firstLine(await git.run(['rev-parse', `${commit}^{tree}`], { cwd }));
}

/** True when merging `head` into `commit` changes nothing: `commit` already holds all of head's changes. */
async function contains(git: GitRunner, cwd: string, commit: string, head: string): Promise<boolean> {
  const t = await mergedTree(git, cwd, commit, head);
  return t !== null && t === (await treeOf(git, cwd, commit));
}

/** Oldest commit in `chain` (oldest first) satisfying a monotone predicate (binary search), or null. */
async function firstSatisfying(chain: string[], pred: (c: string) => Promise<boolean>): Promise<string | null> {
  let lo = 0;
  let hi = chain.length - 1;
  let found: string | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (await pred(chain[mid]!)) {
      found = chain[mid]!;
      hi = mid - 1;
    } else lo = mid + 1;
  }
  return found;
}

async function firstParentChain(git: GitRunner, cwd: string, from: string, to: string): Promise<string[]> {
  const r = await git.run(['rev-list', '--first-parent', '--reverse', `${from}..${to}`], { cwd });
  return r.stdout.split('\n').filter(Boolean);
}

/** patch-id (stable) → commit, for the commits of `range` (`git log -p` piped through `git patch-id`). */
async function patchIds(git: GitRunner, cwd: string, range: string[]): Promise<Map<string, string>> {
  const log = await git.run(['log', '--no-color', '--no-merges', '-p', '--format=commit %H', ...range], { cwd });
  const ids = await git.run(['patch-id', '--stable'], { cwd, input: log.stdout });
  const out = new Map<string, string>();
  for (const line of ids.stdout.split('\n')) {
    const [pid, commit] = line.trim().split(/\s+/);
    if (pid && commit && !out.has(pid)) out.set(pid, commit);
  }
  return out;
}

/** How many commits {@link containedEarlier} examines at most (newest first), per base ref. */
export const MAX_HISTORY_CANDIDATES = 200;

/**
 * A squash merge that the base changed again afterwards (the human, or a later PR, edited the same
 * lines): the base's tip no longer contains the head's changes, but a commit on the base's
 * first-parent line since the merge base did. Only commits that touch a file of the head's diff
 * (`git diff --name-only <merge-base> <head>`) can change whether the head is contained (for every
 * other file a three-way merge keeps the base's side), so those are the candidates, examined with
 * the same test as the tip ({@link contains}: merging head into the commit changes nothing). The
 * oldest commit that contained the work is where it landed.
 *
 * Bounded: at most {@link MAX_HISTORY_CANDIDATES} candidates, newest first (a squash is found
 * when it is among the last 200 commits of the base that touched the task's files).
 * @returns the commit where the work landed, or null when none of the candidates contained it.
 */
async function containedEarlier(git: GitRunner, cwd: string, mergeBase: string, base: string, head: string): Promise<string | null> {
  const files = (await git.run(['diff', '--name-only', '--no-renames', '-z', mergeBase, head], { cwd })).stdout.split('\0').filter(Boolean);
  if (files.length === 0) return null;
  const listed = await git.run(['rev-list', '--first-parent', `--max-count=${MAX_HISTORY_CANDIDATES}`, `${mergeBase}..${base}`, '--', ...files], { cwd });
  const candidates = listed.stdout.split('\n').filter(Boolean);
  let landed: string | null = null;
  // Newest first; keep going to find the oldest that contained it (where the work came in).
  for (const c of candidates) {
    if (await contains(git, cwd, c, head)) landed = c;
    else if (landed !== null) break;
  }
  return landed;
}

/**
 * Has the work of `head` (a commit sha) been merged into any of `baseRefs` (e.g.
 * `refs/remotes/origin/main`, `refs/heads/main`)? Missing refs are skipped. Read-only: runs only
 * `rev-parse`, `merge-base`, `merge-tree --write-tree` (writes objects, no refs), `rev-list`,
 * `cherry`, `log` and `patch-id`. Needs git >= 2.38 (`merge-tree --write-tree`).
 *
 * A squash merge whose lines the base later changed again is recognised too: some commit of the
 * base since the merge base contained the head's changes ({@link containedEarlier}).
 * @throws PollyError `git_failed` when git fails other than by the expected exit codes.
 */
export async function detectMerge(git: GitRunner, cwd: string, input: { head: string; baseRefs: string[] }): Promise<MergeDetection> {
  const head = await resolve(git, cwd, input.head);
  if (head === null) return NOT_MERGED;
  for (const baseRef of input.baseRefs) {
    const base = await resolve(git, cwd, baseRef);
    if (base === null) continue;
    if (await isAncestor(git, cwd, head, base)) {
      const chain = await firstParentChain(git, cwd, head, base);
      const first = await firstSatisfying(chain, (c) => isAncestor(git, cwd, head, c));
      let mergeCommitSha = head;
      if (first !== null) {
        // The first commit after head on the base's first-parent line has head as its first parent
        // after a fast-forward (head itself is on the base); otherwise it is the merge commit.
        mergeCommitSha = (await resolve(git, cwd, `${first}^1`)) === head ? head : first;
      }
      return { merged: true, how: 'ancestor', baseRef, mergeCommitSha };
    }
    const mergeBaseR = await git.run(['merge-base', base, head], { cwd, okExitCodes: [1] });
    const mergeBase = mergeBaseR.exitCode === 0 ? firstLine(mergeBaseR) : null;
    if (mergeBase === null) continue;
    if (await contains(git, cwd, base, head)) {
      const chain = await firstParentChain(git, cwd, mergeBase, base);
      const first = await firstSatisfying(chain, (c) => contains(git, cwd, c, head));
      return { merged: true, how: 'tree', baseRef, mergeCommitSha: first };
    }
    const landed = await containedEarlier(git, cwd, mergeBase, base, head);
    if (landed !== null) return { merged: true, how: 'tree', baseRef, mergeCommitSha: landed };
    const cherry = await git.run(['cherry', base, head], { cwd });
    const lines = cherry.stdout.split('\n').filter((l) => l.trim() !== '');
    if (lines.length > 0 && lines.every((l) => l.startsWith('-'))) {
      const onBase = await patchIds(git, cwd, [`${mergeBase}..${base}`]);
      const tip = await patchIds(git, cwd, ['-1', head]);
      const tipId = [...tip.keys()][0];
      return { merged: true, how: 'patch', baseRef, mergeCommitSha: (tipId && onBase.get(tipId)) || null };
    }
  }
  return NOT_MERGED;
}

export interface WatchOptions {
  clock: { now(): number; sleep(ms: number): Promise<void> };
  /** Time between polls of the same PR, ms (default 60 000). */
  intervalMs?: number;
  /** Stop after this long (ms); default: until every watched PR is merged or closed. */
  durationMs?: number;
  signal?: AbortSignal;
  /** Called when a PR's state (or head) changes, and once when it is merged or closed. */
  onChange?: (info: PullRequestInfo, previous: PullRequestInfo | null) => void | Promise<void>;
}

/**
 * Poll `numbers` on `forge` until each is merged or closed, or until `durationMs` passes. One
 * `getPullRequest` per open PR per round (conditional on GitHub, so unchanged PRs cost nothing
 * against the rate limit). Returns the last state seen of every PR.
 */
export async function watchForMerges(forge: Pick<Forge, 'getPullRequest'>, numbers: number[], options: WatchOptions): Promise<Map<number, PullRequestInfo>> {
  const interval = options.intervalMs ?? 60_000;
  const start = options.clock.now();
  const last = new Map<number, PullRequestInfo>();
  const open = new Set(numbers);
  for (;;) {
    for (const n of [...open]) {
      if (options.signal?.aborted) return last;
      const info = await forge.getPullRequest(n);
      const prev = last.get(n) ?? null;
      last.set(n, info);
      if (!prev || prev.state !== info.state || prev.headSha !== info.headSha) await options.onChange?.(info, prev);
      if (info.state === 'merged' || info.state === 'closed') open.delete(n);
    }
    if (open.size === 0 || options.signal?.aborted) return last;
    if (options.durationMs !== undefined && options.clock.now() + interval - start > options.durationMs) return last;
    await options.clock.sleep(interval);
  }
}
