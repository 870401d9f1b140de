/**
 * Ref names as the gate reads them: `main`, `heads/main`, `refs/heads/main`, and `HEAD`/`@` for the
 * worktree's current branch (git-scm.com/docs/gitrevisions). Pure.
 */
import type { Analyzer, GateContext } from '../types.js';

/** The branch name of a ref as written (`refs/heads/x` and `heads/x` → `x`). */
export function refName(ref: string): string {
  return ref.replace(/^refs\/heads\//, '').replace(/^heads\//, '');
}

/** True when a ref as written (`main`, `heads/main`, `refs/heads/main`, `HEAD`/`@` = the current branch, a wildcard) names the default branch. */
export function namesDefaultBranch(ref: string, ctx: Pick<GateContext, 'branch' | 'defaultBranch'>): boolean {
  const r = ref.replace(/^\+/, '');
  const name = r === 'HEAD' || r === '@' ? ctx.branch : refName(r);
  return name === ctx.defaultBranch || (name.includes('*') && !r.startsWith('refs/tags/'));
}

/** Report a deny finding. */
export const deny = (a: Analyzer, rule: string, reason: string): void => a.finding({ decision: 'deny', rule, reason });

/** Deny (`blast_radius.default_branch`) a command that moves or switches to the default branch locally. */
export const denyDefault = (a: Analyzer, what: string): void =>
  deny(
    a,
    'blast_radius.default_branch',
    `${what} moves or switches to the default branch ${a.context.defaultBranch}, which the worktree shares with the user's repository; work on ${a.context.branch} and open a PR`,
  );
