/**
 * Tool `integrate_base` (effect `integrate_base` of polly-task, a fix round started by CONFLICTS):
 * bring the moved base into the task branch by MERGING it, in the task's worktree. Never a rebase,
 * never a force-push: the branch only gains commits, so the later push is a plain fast-forward.
 *
 * 1. `git fetch <remote> <base>` (the PR's base: `task.baseBranch`), then
 *    `git merge --no-ff --no-commit <remote>/<base>` in the worktree.
 * 2. Clean → `ok` (BASE_INTEGRATED): the merge is staged, not committed; `run_acceptance` commits it
 *    (a merge commit with two parents, `Merge <remote>/<base> into polly/<id>`) only when the checks
 *    are green and no conflict marker is left (./run-acceptance.ts).
 * 3. Conflicts → the conflicting files become the worker's follow-up (`task.feedback`), recorded in
 *    `task.fixRound.baseMerge`; a permanent `failure` (BASE_CONFLICTED: the same session resolves
 *    them). Nothing is discarded: both sides stay in the files with their markers.
 * 4. Already up to date (the base is an ancestor of the branch) → `ok`, nothing staged.
 *
 * Journal: `task.base_merge` {taskId, ref, commit, files, clean}. Idempotent per order: a merge
 * already in progress (MERGE_HEAD of the same commit) is reported as it stands, not started again.
 * If the round ends parked, the Brain aborts the merge (`git merge --abort`) after backing the
 * worktree up (brain/process/order-executor.ts): work kept, nothing half-merged left behind.
 */
import { existsSync } from 'node:fs';
import { isPollyError } from '../core/errors.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { resolveCommitIdentity } from '../../workers/git/commit-identity.js';
import type { FixRoundRecord } from '../registry/registry-schema.js';
import { taskBranch } from './push.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from './types.js';

export interface IntegrateBaseToolOptions {
  git?: GitRunner;
  /** Remote name (default `origin`). */
  remote?: string;
  /** The user's environment, for the merge's committer identity (workers/git/commit-identity.ts; default `process.env`). */
  identityEnv?: NodeJS.ProcessEnv;
}

/** The follow-up a worker gets for a conflicted base merge (stored as `task.feedback`). Pure. */
export function conflictFeedback(input: { round: number; maxRounds: number | null; ref: string; commit: string; branch: string; files: readonly string[] }): string {
  const bound = input.maxRounds ? ` of at most ${input.maxRounds}` : '';
  return [
    `Fix round ${input.round}${bound}: the PR's base moved. Polly merged ${input.ref} (${input.commit.slice(0, 12)}) into ${input.branch} in your worktree, and these files conflict:`,
    '',
    ...input.files.map((f) => `- ${f}`),
    '',
    "Resolve every conflict in these files: keep the intent of BOTH sides (the base's change and this task's change); never drop one side to make the conflict go away. Remove every conflict marker (<<<<<<<, =======, >>>>>>>). Do not commit and do not abort the merge: Polly commits the merge once the acceptance checks are green and no marker is left. End with a short summary of how you combined the two sides.",
  ].join('\n');
}

/** The files with unresolved conflicts in `cwd` (`git diff --name-only --diff-filter=U`). */
export async function unmergedFiles(git: GitRunner, cwd: string): Promise<string[]> {
  const r = await git.run(['diff', '--name-only', '--diff-filter=U'], { cwd });
  return [
    ...new Set(
      r.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
  ].sort();
}

/** The commit of MERGE_HEAD in `cwd`, or null when no merge is in progress. */
export async function mergeHead(git: GitRunner, cwd: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', 'MERGE_HEAD'], { cwd, okExitCodes: [1, 128] });
  return r.exitCode === 0 ? firstLine(r) : null;
}

/** Create the `integrate_base` tool. */
export function createIntegrateBaseTool(options: IntegrateBaseToolOptions = {}): TaskTool {
  const git = options.git ?? createGitRunner();
  const remote = options.remote ?? 'origin';
  return async (ctx: TaskToolContext): Promise<TaskToolOutcome> => {
    const { task } = ctx;
    const cwd = task.worktree;
    if (!cwd || !existsSync(cwd))
      return { outcome: 'failure', note: `integrate_base: the worktree of task ${task.id} (${cwd ?? 'none recorded'}) is gone; a human must bring the base in` };
    const base = task.baseBranch;
    if (!base) return { outcome: 'failure', note: `integrate_base: task ${task.id} records no base branch` };
    const ref = `${remote}/${base}`;
    const branch = taskBranch(task);
    try {
      const fetched = await git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/${base}:refs/remotes/${remote}/${base}`], {
        cwd,
        okExitCodes: [1, 128],
        timeoutMs: 120_000,
      });
      if (fetched.exitCode !== 0)
        return { outcome: 'failure', note: `integrate_base: git fetch ${remote} ${base} failed: ${(fetched.stderr || fetched.stdout).trim().slice(0, 400)}` };
      const commit = firstLine(await git.run(['rev-parse', '--verify', `refs/remotes/${remote}/${base}^{commit}`], { cwd }));
      const inProgress = await mergeHead(git, cwd);
      let files: string[];
      if (inProgress) {
        files = await unmergedFiles(git, cwd);
      } else {
        const ancestor = await git.run(['merge-base', '--is-ancestor', commit, 'HEAD'], { cwd, okExitCodes: [1] });
        if (ancestor.exitCode === 0) {
          await record(ctx, { ref, commit, files: [] }, true);
          return { outcome: 'ok', note: `integrate_base: ${branch} already contains ${ref} (${commit.slice(0, 12)}); nothing to merge` };
        }
        // git merge wants a committer identity even with --no-commit: the same one Polly's commits
        // use, so a machine with no user.email configured (a fresh CI runner) can merge too.
        const identity = await resolveCommitIdentity(git, cwd, options.identityEnv ?? process.env);
        const merged = await git.run(['merge', '--no-ff', '--no-commit', '--no-edit', '--no-verify', commit], {
          cwd,
          env: identity.env,
          okExitCodes: [1, 128],
          timeoutMs: 120_000,
        });
        files = await unmergedFiles(git, cwd);
        if (merged.exitCode !== 0 && files.length === 0) {
          return { outcome: 'failure', note: `integrate_base: git merge ${ref} failed without conflicts: ${(merged.stderr || merged.stdout).trim().slice(0, 400)}` };
        }
      }
      await record(ctx, { ref, commit, files }, files.length === 0);
      if (files.length === 0) {
        ctx.progress(`${task.id}: merged ${ref} (${commit.slice(0, 12)}) into ${branch} cleanly; acceptance next`);
        return { outcome: 'ok', note: `integrate_base: ${ref} (${commit.slice(0, 12)}) merges into ${branch} cleanly; staged, committed once acceptance is green` };
      }
      ctx.progress(`${task.id}: merging ${ref} into ${branch} conflicts in ${files.join(', ')}; the worker resolves them`);
      return { outcome: 'failure', permanent: true, note: `integrate_base: merging ${ref} (${commit.slice(0, 12)}) into ${branch} conflicts in ${files.join(', ')}` };
    } catch (error) {
      return { outcome: 'failure', note: `integrate_base: ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}` };
    }
  };
}

async function record(ctx: TaskToolContext, merge: NonNullable<FixRoundRecord['baseMerge']>, clean: boolean): Promise<void> {
  await ctx.store.update((draft, tx) => {
    const t = draft.tasks[ctx.task.id];
    if (!t) return;
    if (t.fixRound) t.fixRound.baseMerge = merge;
    if (!clean) {
      t.feedback = conflictFeedback({ round: t.fixRound?.round ?? 1, maxRounds: null, ref: merge.ref, commit: merge.commit, branch: taskBranch(t), files: merge.files });
    }
    t.updatedAt = ctx.clock().toISOString();
    tx.emit('task.base_merge', { taskId: t.id, ref: merge.ref, commit: merge.commit, files: merge.files, clean, orderId: ctx.order.id });
  });
}

/** The `integrate_base` tool with the default git runner. */
export const integrateBaseTool: TaskTool = createIntegrateBaseTool();
