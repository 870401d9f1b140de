/**
 * Does a pull request still merge into its base? Polly answers it itself for the local forge, the
 * way GitHub computes `mergeable`: a merge of the PR head into the base's current tip, done in
 * memory with `git merge-tree --write-tree` (git ≥ 2.38; git-merge-tree(1),
 * https://git-scm.com/docs/git-merge-tree). Nothing is checked out, no ref moves, nothing merges.
 */
import { PollyError } from '../core/errors.js';
import type { GitRunner } from '../../workers/git/git.js';

/** The mergeability of one PR head against one base commit. */
export interface Mergeability {
  /** `clean`: merges without conflicts; `conflicts`: at least one file conflicts. */
  state: 'clean' | 'conflicts';
  /** Repository-relative paths with conflicts (empty when clean). */
  files: string[];
  /** The base commit the head was checked against. */
  baseCommit: string;
  /** The head commit checked. */
  headCommit: string;
  /** The merge's tree id (conflicted files hold git's conflict markers). Not stored: the object may be pruned. */
  tree: string;
}

/**
 * Check whether `headCommit` merges cleanly into `baseCommit` (both commit ids or refs).
 * Runs `git merge-tree --write-tree --name-only --no-messages <base> <head>`: exit 0 clean, exit 1
 * conflicts (stdout: the tree id, then one conflicted path per line).
 * @throws PollyError `git_failed` when git cannot do the merge (unknown commits, git < 2.38).
 */
export async function checkMergeability(git: GitRunner, cwd: string, input: { baseCommit: string; headCommit: string }): Promise<Mergeability> {
  const r = await git.run(['merge-tree', '--write-tree', '--name-only', '--no-messages', input.baseCommit, input.headCommit], { cwd, okExitCodes: [1] });
  const lines = r.stdout.split('\n').map((l) => l.trim());
  if (!/^[0-9a-f]{40,64}$/.test(lines[0] ?? '')) {
    throw new PollyError(
      'git_failed',
      `git merge-tree gave no tree for ${input.headCommit} into ${input.baseCommit} in ${cwd}: ${(r.stderr || r.stdout).trim().slice(0, 300)}. Polly needs git 2.38 or newer.`,
    );
  }
  const files = r.exitCode === 1 ? [...new Set(lines.slice(1).filter((l) => l !== ''))].sort() : [];
  return { state: r.exitCode === 1 ? 'conflicts' : 'clean', files, baseCommit: input.baseCommit, headCommit: input.headCommit, tree: lines[0]! };
}
