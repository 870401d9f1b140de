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

/** One open PR as the order sees it: its number and head commit (and, for {@link computeLanding}, its branches). */
export interface OrderablePullRequest {
  number: number;
  headCommit: string;
  /** The branch it merges into; PRs into different bases are never compared. */
  base?: string;
  /** Its head branch: a PR whose base is another open PR's head is stacked on that PR. */
  head?: string;
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

/** A landing order over PRs that may be stacked (see {@link computeLanding}). */
export interface LandingPlan extends LandingOrder {
  /** PR number → the open PR it is stacked on (its base is that PR's head branch). */
  stackedOn: Record<number, number>;
  /** The pairs whose heads conflict (same base only). */
  pairs: PairConflict[];
}

/**
 * The landing order of open PRs that may target each other (stacked tasks): the PRs into a branch
 * no open PR has as its head are ordered by {@link landingOrder} over their pairwise conflicts
 * ({@link pairwiseConflicts}, compared only within one base); a PR stacked on another (its base is
 * that PR's head) lands right after it, `after` naming the parent, since it cannot land on the
 * base before its parent does.
 * @throws PollyError `git_failed` as {@link pairwiseConflicts}.
 */
export async function computeLanding(git: GitRunner, cwd: string, prs: readonly OrderablePullRequest[]): Promise<LandingPlan> {
  const byHead = new Map(prs.filter((p) => p.head).map((p) => [p.head!, p.number]));
  const stackedOn: Record<number, number> = {};
  for (const p of prs) {
    const parent = p.base !== undefined ? byHead.get(p.base) : undefined;
    if (parent !== undefined && parent !== p.number) stackedOn[p.number] = parent;
  }
  const roots = prs.filter((p) => stackedOn[p.number] === undefined).sort((x, y) => x.number - y.number);
  const pairs: PairConflict[] = [];
  for (const base of [...new Set(roots.map((p) => p.base ?? ''))].sort())
    pairs.push(
      ...(await pairwiseConflicts(
        git,
        cwd,
        roots.filter((p) => (p.base ?? '') === base),
      )),
    );
  const plan = landingOrder(
    roots.map((p) => p.number),
    pairs,
  );
  const children = new Map<number, number[]>();
  for (const [child, parent] of Object.entries(stackedOn))
    children.set(
      parent,
      [...(children.get(parent) ?? []), Number(child)].sort((x, y) => x - y),
    );
  const order: number[] = [];
  const after: Record<number, number[]> = { ...plan.after };
  const place = (n: number, seen: Set<number>): void => {
    if (seen.has(n)) return;
    seen.add(n);
    order.push(n);
    for (const c of children.get(n) ?? []) {
      after[c] = [n];
      place(c, seen);
    }
  };
  const seen = new Set<number>();
  for (const n of plan.order) place(n, seen);
  // A cycle of PRs targeting each other's heads has no root: listed last, by number.
  for (const p of [...prs].sort((x, y) => x.number - y.number)) if (!seen.has(p.number)) place(p.number, seen);
  return { ...plan, order, after, stackedOn, pairs };
}

/** What one PR's body says about where it lands (see {@link landingSection}). */
export interface LandingNoteInput {
  number: number;
  plan: Pick<LandingPlan, 'order' | 'after' | 'stackedOn' | 'pairs'>;
  /** PR number → its head branch (for a stacked PR's parent). */
  heads?: Record<number, string>;
  /** The branch a stacked PR is retargeted to once its parent merges (the parent's base). */
  finalBase?: string | null;
}

/**
 * The "Landing order" section of a PR body (markdown, starting with `## Landing order`): "Land
 * after #N" naming the PRs it conflicts with (and the files) or is stacked on, or that it lands
 * clean, with its place in `polly pr order`. Null when the PR is not in the order. Pure.
 */
export function landingSection(input: LandingNoteInput): string | null {
  const { plan, number } = input;
  const pos = plan.order.indexOf(number);
  if (pos < 0) return null;
  const where = `${pos + 1} of ${plan.order.length} in \`polly pr order\``;
  const parent = plan.stackedOn[number];
  const lines = ['## Landing order', ''];
  if (parent !== undefined) {
    const branch = input.heads?.[parent];
    lines.push(
      `**Land after #${parent}**: this PR is stacked on #${parent}${branch ? ` (it targets \`${branch}\`)` : ''}. Once #${parent} merges, Polly retargets this PR to ${input.finalBase ? `\`${input.finalBase}\`` : `#${parent}'s base`} and merges that base in (position ${where}).`,
    );
  } else {
    const before = plan.after[number] ?? [];
    if (before.length === 0) lines.push(`Lands clean: it conflicts with no open PR ahead of it (position ${where}).`);
    else {
      const files = [...new Set(before.flatMap((b) => plan.pairs.find((c) => (c.a === b && c.b === number) || (c.a === number && c.b === b))?.files ?? []))].sort();
      lines.push(
        `**Land after ${before.map((b) => `#${b}`).join(', ')}**: this PR conflicts with ${before.length === 1 ? 'it' : 'them'}${files.length ? ` in ${files.map((f) => `\`${f.replace(/`/g, "'")}\``).join(', ')}` : ''}. Once ${before.length === 1 ? 'it merges' : 'they merge'}, Polly merges the base into this PR in a fix round (position ${where}).`,
      );
    }
  }
  lines.push('', '_Kept current by Polly as PRs open, move and merge. Polly never merges._');
  return lines.join('\n');
}
