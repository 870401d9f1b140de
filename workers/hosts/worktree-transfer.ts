/**
 * Git as the transport of a remote turn: a worktree's whole state as one commit, sent and fetched
 * with git's own protocol, and applied back as files.
 *
 * A **state commit** of a worktree is a commit whose parent is the worktree's HEAD and whose tree
 * is its working tree as `git add --all` sees it (tracked and untracked files; ignored files and
 * nested repositories left out), made with a temporary index (`GIT_INDEX_FILE`, as git-stash(1)
 * does): the worktree's own index, files and refs are not touched. Before a turn, the local
 * worktree's state commit is pushed to the host's mirror and the host's worktree is made to match
 * it; after the turn, the host's worktree's state commit is fetched back and the difference
 * between the two is applied to the local worktree's files (`git diff --binary` | `git apply`).
 * What comes back is only a tree of files: never a ref, never a commit that lands on a branch.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { firstLine, type GitRunner } from '../git/git.js';
import { stageWorktree, stageWorktreeRaw } from '../git/nested-repos.js';
import { sanitizedRemoteUrl } from '../sandbox/git-read-view.js';

/** The fixed identity of state commits (transport objects, never on a branch). */
const STATE_IDENTITY = {
  GIT_AUTHOR_NAME: 'Polly transfer',
  GIT_AUTHOR_EMAIL: 'polly-transfer@invalid',
  GIT_COMMITTER_NAME: 'Polly transfer',
  GIT_COMMITTER_EMAIL: 'polly-transfer@invalid',
  GIT_AUTHOR_DATE: '@0 +0000',
  GIT_COMMITTER_DATE: '@0 +0000',
};

/** A worktree's state commit. */
export interface WorktreeState {
  /** The state commit. */
  commit: string;
  /** Its tree: the working tree's content. */
  tree: string;
  /** The worktree's HEAD (the commit's parent). */
  head: string;
}

/**
 * Make the state commit of the worktree at `cwd` (see the module doc). Its time is fixed, so the
 * same state gives the same commit id on any machine.
 * @throws PollyError `git_failed` when the worktree has no HEAD or git fails.
 */
export async function worktreeStateCommit(git: GitRunner, cwd: string, label: string): Promise<WorktreeState> {
  const headRun = await git.run(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd, okExitCodes: [1, 128] });
  if (headRun.exitCode !== 0) throw new PollyError('git_failed', `worktree ${cwd} has no HEAD commit; its state cannot be sent to a host`);
  const head = firstLine(headRun);
  const tmp = await mkdtemp(join(tmpdir(), 'polly-state-'));
  try {
    const env = { GIT_INDEX_FILE: join(tmp, 'index') };
    await git.run(['read-tree', 'HEAD'], { cwd, env });
    try {
      await stageWorktree(git, cwd, env);
    } catch {
      // The worktree's own .gitattributes can make `git add` fail: keep the bytes as they are.
      await stageWorktreeRaw(git, cwd, env);
    }
    const tree = firstLine(await git.run(['write-tree'], { cwd, env }));
    const commit = firstLine(await git.run(['commit-tree', tree, '-p', head, '-m', `polly state of ${label}`], { cwd, env: STATE_IDENTITY }));
    return { commit, tree, head };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Apply the difference between state commits `from` and `to` to the files of the worktree at `cwd`
 * (binary-safe; modes, renames, deletions; the index is left alone). First checks that the
 * worktree still holds `from`'s tree: nothing else may have changed it meanwhile.
 * @param current  the worktree's state taken for that check by the caller ({@link checkState}),
 *   e.g. while `to` was being fetched; made here when absent.
 * @returns the paths changed (empty when the states are equal).
 * @throws PollyError `conflict` when the worktree moved away from `from`; `git_failed` when the patch does not apply.
 */
export async function applyStateDiff(git: GitRunner, cwd: string, from: WorktreeState, to: string, current?: WorktreeState): Promise<string[]> {
  const now = current ?? (await checkState(git, cwd));
  if (now.tree !== from.tree || now.head !== from.head)
    throw new PollyError(
      'conflict',
      `the worktree ${cwd} changed on this machine while its turn ran on a host (HEAD ${from.head.slice(0, 12)} → ${now.head.slice(0, 12)}, files ${from.tree.slice(0, 12)} → ${now.tree.slice(0, 12)}); the host's result was not applied`,
    );
  const names = await git.run(['diff', '--name-only', '-z', '--no-renames', from.commit, to], { cwd });
  const paths = names.stdout.split('\0').filter(Boolean);
  if (paths.length === 0) return [];
  const patch = await git.run(['diff', '--binary', '--full-index', '--no-renames', '--no-ext-diff', '--no-textconv', from.commit, to], { cwd, timeoutMs: 600_000 });
  const applied = await git.run(['apply', '--binary', '--whitespace=nowarn', '-'], { cwd, input: patch.stdout, okExitCodes: [1, 128] });
  if (applied.exitCode !== 0)
    throw new PollyError('git_failed', `the host's changes did not apply to ${cwd}: ${applied.stderr.trim().split('\n').slice(-3).join(' | ')}`, {
      details: { command: applied.command, stderr: applied.stderr },
    });
  return paths;
}

/** The worktree's state now, for {@link applyStateDiff}'s check that nothing changed it while its turn ran on a host. */
export function checkState(git: GitRunner, cwd: string): Promise<WorktreeState> {
  return worktreeStateCommit(git, cwd, 'check before applying a host turn');
}

/**
 * The key of a repository's mirror on a host (16 hex digits): the SHA-256 of its `origin` URL
 * without credentials, so the clones of one project (on several machines) share one mirror and
 * its objects; a repository without `origin`, of its real path here.
 */
export async function repoKeyFor(git: GitRunner, repoRoot: string): Promise<string> {
  const origin = await git.run(['config', '--get', 'remote.origin.url'], { cwd: repoRoot, okExitCodes: [1] });
  const source = origin.exitCode === 0 && firstLine(origin) ? `origin:${sanitizedRemoteUrl(firstLine(origin))}` : `path:${realpathSync(repoRoot)}`;
  return createHash('sha256').update(source).digest('hex').slice(0, 16);
}
