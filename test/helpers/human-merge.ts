/**
 * Play the human who merges a pull request with git (the local forge's counterpart of the GitHub
 * simulator's `humanMerge`): in the repository's main checkout, which must be on the base branch,
 * then (by default) a push of the base to `origin`. Polly never does any of this.
 */
import type { TestRepo } from './git-repo.js';

export type HumanMergeMethod = 'merge' | 'ff' | 'squash' | 'rebase';

/**
 * Merge `branch` into the checked-out base of `repo` with `method`:
 * - `merge`: `git merge --no-ff` (a merge commit),
 * - `ff`: `git merge --ff-only`,
 * - `squash`: `git merge --squash` + one commit,
 * - `rebase`: the branch's commits cherry-picked onto the base, one by one (GitHub's "rebase and merge").
 * @returns the commit on the base that carries the work (the merge/squash commit, the branch tip for
 *   ff, the last picked commit for rebase).
 */
export function humanMerge(repo: TestRepo, branch: string, method: HumanMergeMethod, options: { push?: boolean; message?: string } = {}): string {
  const base = repo.git(['rev-parse', '--abbrev-ref', 'HEAD']);
  const message = options.message ?? `Merge ${branch} (${method})`;
  switch (method) {
    case 'merge':
      repo.git(['merge', '--no-ff', '-q', '-m', message, branch]);
      break;
    case 'ff':
      repo.git(['merge', '--ff-only', '-q', branch]);
      break;
    case 'squash':
      repo.git(['merge', '--squash', '-q', branch]);
      repo.git(['commit', '-q', '-m', message]);
      break;
    case 'rebase':
      repo.git(['cherry-pick', '--allow-empty', `${base}..${branch}`]);
      break;
  }
  const commit = repo.git(['rev-parse', 'HEAD']);
  if (options.push !== false) repo.git(['push', '-q', 'origin', base]);
  return commit;
}
