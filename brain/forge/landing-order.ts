/**
 * Conflict prediction and landing order for a set of open pull requests (issue 29 item 3, first
 * part): which pairs of PR heads conflict with each other, and the order that lands them with the
 * fewest PRs meeting a conflict.
 *
 * Pairwise conflicts are git's own: `git merge-tree --write-tree --name-only --no-messages A B`
 * (git ≥ 2.38, git-merge-tree(1)) merges two heads in memory over their merge base; exit 1 means
 * they conflict, and the conflicted paths follow the tree id. Nothing is checked out, no ref moves.
 *
 * The order: a PR lands clean when it conflicts with no PR landed before it, so the PRs that land
 * clean in any order are an independent set of the conflict graph, and the fewest conflicts is
 * `n − (largest independent set)`. {@link landingOrder} puts a largest independent set first
 * (exact for up to {@link EXACT_LIMIT} PRs, greedy by fewest conflicts above that), lowest numbers
 * first, then the rest, each after the PRs it conflicts with. Polly never merges: this is advice.
 */
import type { GitRunner } from '../../workers/git/git.js';
import { PollyError } from '../core/errors.js';

/** One open PR as the order sees it: its number and head commit. */
export interface OrderablePullRequest {
  number: number;
  headCommit: string;
}

/** Two PRs whose heads conflict, and the files (sorted). */
export interface PairConflict {
  a: number;
  b: number;
  files: string[];
}

/**
 * Every pair of `prs` whose heads conflict when merged with each other (git merge-tree over their
 * merge base), in (a, b) order of the input.
 * @throws PollyError `git_failed` when git cannot merge them (unknown commits, git < 2.38).
 */
export async function pairwiseConflicts(git: GitRunner, cwd: string, prs: readonly OrderablePullRequest[]): Promise<PairConflict[]> {
  const out: PairConflict[] = [];
  for (let i = 0; i < prs.length; i++) {
    for (let j = i + 1; j < prs.length; j++) {
      const [a, b] = [prs[i]!, prs[j]!];
      const r = await git.run(['merge-tree', '--write-tree', '--name-only', '--no-messages', a.headCommit, b.headCommit], { cwd, okExitCodes: [1] });
      const lines = r.stdout.split('\n').map((l) => l.trim());
      if (!/^[0-9a-f]{40,64}$/.test(lines[0] ?? '')) {
        throw new PollyError(
          'git_failed',
          `git merge-tree could not merge PR #${a.number} (${a.headCommit}) with PR #${b.number} (${b.headCommit}): ${(r.stderr || r.stdout).trim().slice(0, 300)}. Fetch both heads; Polly needs git 2.38 or newer.`,
        );
      }
      if (r.exitCode === 1) out.push({ a: a.number, b: b.number, files: [...new Set(lines.slice(1).filter((l) => l !== ''))].sort() });
    }
  }
  return out;
}

/** Above this many PRs the independent set is found greedily (the exact search is 2^n). */
export const EXACT_LIMIT = 16;

/** A proposed landing order. */
export interface LandingOrder {
  /** PR numbers, first to land first. */
  order: number[];
  /** Per PR: the PRs before it in the order that it conflicts with (empty: it lands clean after them). */
  after: Record<number, number[]>;
  /** How many PRs meet a conflict in this order (the minimum when `exact`). */
  conflicts: number;
  /** Whether the independent set is a largest one (n ≤ {@link EXACT_LIMIT}). */
  exact: boolean;
}

/**
 * The order that lands `numbers` with the fewest PRs meeting a conflict, from the pairwise
 * `conflicts` (see the module doc). Ties go to lower PR numbers. Pure.
 */
export function landingOrder(numbers: readonly number[], conflicts: readonly PairConflict[]): LandingOrder {
  const nums = [...new Set(numbers)].sort((x, y) => x - y);
  const idx = new Map(nums.map((n, i) => [n, i]));
  const adj = nums.map(() => 0n);
  const deg = nums.map(() => 0);
  for (const c of conflicts) {
    const [i, j] = [idx.get(c.a), idx.get(c.b)];
    if (i === undefined || j === undefined || i === j) continue;
    adj[i]! |= 1n << BigInt(j);
    adj[j]! |= 1n << BigInt(i);
    deg[i]!++;
    deg[j]!++;
  }
  const exact = nums.length <= EXACT_LIMIT;
  let best: number[] = [];
  if (exact) {
    // Largest independent set by branch and bound over the PRs in number order (the first found of the largest size wins ties).
    const search = (k: number, chosen: number[], blocked: bigint): void => {
      if (chosen.length + (nums.length - k) <= best.length) return;
      if (k === nums.length) {
        best = [...chosen];
        return;
      }
      if (!(blocked & (1n << BigInt(k)))) search(k + 1, [...chosen, k], blocked | adj[k]!);
      search(k + 1, chosen, blocked);
    };
    search(0, [], 0n);
  } else {
    let blocked = 0n;
    for (const k of nums.map((_n, i) => i).sort((x, y) => deg[x]! - deg[y]! || x - y)) {
      if (blocked & (1n << BigInt(k))) continue;
      best.push(k);
      blocked |= adj[k]!;
    }
    best.sort((x, y) => x - y);
  }
  const first = new Set(best);
  const rest = nums.map((_n, i) => i).filter((i) => !first.has(i));
  const order = [...best, ...rest];
  const after: Record<number, number[]> = {};
  order.forEach((i, pos) => {
    after[nums[i]!] = order
      .slice(0, pos)
      .filter((j) => adj[i]! & (1n << BigInt(j)))
      .map((j) => nums[j]!);
  });
  return { order: order.map((i) => nums[i]!), after, conflicts: rest.length, exact };
}
