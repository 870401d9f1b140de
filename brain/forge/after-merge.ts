/**
 * After a human merges: one pass over the tasks with an open pull request.
 *
 * For each task whose `pr.state` is draft/open/ready (or whose status is `merged`, left by a pass
 * interrupted before cleanup), the PR is read from the forge: GitHub reports `merged` itself; the
 * local forge detects merge commits, fast-forwards, squash and rebase merges by commit
 * (brain/merge-detection.ts). A merged PR's task becomes `merged` (journal `task.merged`), then its
 * worktree is removed by the worktree manager — which first saves everything to a backup ref under
 * `refs/polly/backup/` — the ref is recorded in `task.backupRefs`, and the task becomes `done`
 * (journal `task.done`). A PR closed without merging is recorded as closed; the task is untouched.
 *
 * Stacked tasks (plan key `stacked_on`, docs/landing-order.md): once a parent task's PR is merged,
 * each task stacked on it that is not finished yet gets the parent's base as its own: its open PR
 * is retargeted there (`Forge.retarget`; GitHub `PATCH …/pulls/{n}` with `base`), its
 * `baseBranch` follows, and `pr.retargeted` {forge, number, taskId, from, to, parentTaskId,
 * parentNumber} is journaled when it had started (a worktree or a PR). The PR event router
 * (brain/process/pr-events.ts) takes that event as a base-merge fix round (CONFLICTS: the new base
 * is merged in, never a rebase). A retarget that fails is retried on the next pass.
 *
 * Polly never merges anything itself: this only reads (and retargets stacked PRs).
 */
import { isPollyError } from '../core/errors.js';
import type { Forge, PullRequestInfo } from './forge.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';
import type { HostCleanup } from '../../workers/hosts/host-cleanup.js';

export interface WatchMergesInput {
  store: Pick<RegistryStore, 'read' | 'update'>;
  forge: Pick<Forge, 'getPullRequest' | 'retarget'>;
  worktrees: Pick<WorktreeManager, 'remove'>;
  /** Diagnostics (one line each) for stderr / the live view. */
  progress?: (line: string) => void;
  /** The clock for `updatedAt` (default: the system clock). */
  now?: () => Date;
  /**
   * The GitHub PR watcher (github-watch.ts) has just read every open GitHub PR: read a GitHub PR
   * here only once the watcher recorded it merged or closed (`pr.watch.final`), instead of one
   * more GET per PR and pass. Default false (every open PR is read).
   */
  githubWatched?: boolean;
  /** Removes a task's worktree on its remote host too (workers/hosts/host-cleanup.ts); absent: no hosts. */
  hosts?: HostCleanup | null;
}

export interface WatchMergesReport {
  /** Task ids whose PR was read. */
  checked: string[];
  /** Task ids found merged and finished (`done`) in this pass. */
  done: Array<{ taskId: string; number: number; mergeCommitSha: string | null; backupRef: string | null }>;
  /** Task ids whose PR was closed without merging. */
  closed: string[];
  /** Task ids whose PR could not be read or whose cleanup failed (retried on the next pass). */
  errors: Array<{ taskId: string; message: string }>;
  /** Stacked tasks given their merged parent's base in this pass (`number`: their PR, null before it opened). */
  retargeted?: Array<{ taskId: string; number: number | null; from: string; to: string; parentTaskId: string }>;
}

const OPEN = new Set(['draft', 'open', 'ready']);

/**
 * One pass (see the module comment). Safe to run repeatedly and after a crash: a task left `merged`
 * is finished on the next pass; `worktrees.remove` is idempotent (a missing worktree still gets its
 * branch tip backed up).
 */
export async function watchMerges(input: WatchMergesInput): Promise<WatchMergesReport> {
  const report: WatchMergesReport = { checked: [], done: [], closed: [], errors: [] };
  const now = input.now ?? (() => new Date());
  const tasks = Object.values((await input.store.read()).tasks).filter(
    (t) => t.pr && (OPEN.has(t.pr.state) || t.status === 'merged') && !(input.githubWatched && t.pr.forge === 'github' && !t.pr.watch?.final && t.status !== 'merged'),
  );
  for (const task of tasks) {
    const pr = task.pr!;
    report.checked.push(task.id);
    let info: PullRequestInfo;
    try {
      info = await input.forge.getPullRequest(pr.number);
    } catch (error) {
      report.errors.push({ taskId: task.id, message: isPollyError(error) ? error.message : String(error) });
      continue;
    }
    if (info.state === 'closed') {
      await input.store.update((draft, tx) => {
        const t = draft.tasks[task.id];
        if (!t?.pr || t.pr.state === 'closed') return;
        t.pr.state = 'closed';
        t.statusReason = `PR #${pr.number} was closed without merging`;
        t.updatedAt = now().toISOString();
        tx.emit('task.pr_closed', { taskId: t.id, number: pr.number });
      });
      report.closed.push(task.id);
      continue;
    }
    if (!info.merged) continue;
    await input.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t?.pr || t.status === 'merged') return;
      t.pr.state = 'merged';
      transitionTask(t, 'merged', { reason: null, at: now().toISOString() });
      tx.emit('task.merged', { taskId: t.id, number: pr.number, mergeCommit: info.mergeCommitSha });
    });
    let backupRef: string | null = null;
    let removalNotes: string[] = [];
    try {
      const removed = await input.worktrees.remove({ id: task.id, reason: `PR #${pr.number} merged` });
      backupRef = removed.ref;
      removalNotes = removed.notes ?? [];
    } catch (error) {
      if (!(isPollyError(error) && error.code === 'not_found')) {
        report.errors.push({ taskId: task.id, message: `removing the worktree of ${task.id} failed: ${isPollyError(error) ? error.message : String(error)}` });
        continue;
      }
    }
    await input.store.update((draft, tx) => {
      const t = draft.tasks[task.id];
      if (!t) return;
      if (backupRef && !t.backupRefs.includes(backupRef)) t.backupRefs.push(backupRef);
      transitionTask(t, 'done', { at: now().toISOString() });
      tx.emit('task.done', { taskId: t.id, number: pr.number, backupRef });
    });
    input.progress?.(`${task.id}: PR #${pr.number} merged by a human; worktree removed (backup ${backupRef ?? 'none'})${removalNotes.map((n) => `; ${n}`).join('')}`);
    if (task.host && input.hosts) await removeOnHost(input, task.id, task.host);
    report.done.push({ taskId: task.id, number: pr.number, mergeCommitSha: info.mergeCommitSha, backupRef });
  }
  await retargetStacked(input, report, now);
  return report;
}

/**
 * Remove this clone's worktree of the task on its host (its work there kept under a backup ref in
 * the clone's repository on the host; another clone's task of the same id is left alone);
 * journaled as `task.host_worktree_removed` {taskId, host, backupRef, legacyBackupRef?,
 * legacyKept?} (the last two about the task's worktree of the host's layout before clones were
 * keyed: workers/hosts/host-turn.ts `removeHostWorktree`) or `task.host_cleanup_failed` {taskId,
 * host, error}. Never throws.
 */
export async function removeOnHost(input: Pick<WatchMergesInput, 'store' | 'hosts' | 'progress'>, taskId: string, host: string): Promise<void> {
  const r = await input.hosts!.remove(host, taskId);
  await input.store.update((draft, tx) => {
    if ('error' in r) {
      tx.emit('task.host_cleanup_failed', { taskId, host, error: r.error });
      return;
    }
    const t = draft.tasks[taskId];
    if (t && t.host === host) t.host = null;
    tx.emit('task.host_worktree_removed', {
      taskId,
      host,
      backupRef: r.backupRef,
      ...(r.legacyBackupRef ? { legacyBackupRef: r.legacyBackupRef } : {}),
      ...(r.legacyKept ? { legacyKept: r.legacyKept } : {}),
    });
  });
  input.progress?.(
    'error' in r
      ? `${taskId}: the worktree on host ${host} was not removed: ${r.error}`
      : `${taskId}: its worktree on host ${host} removed${r.backupRef ? ` (backup ${r.backupRef} there)` : ''}${
          r.legacyBackupRef ? `; its worktree of the old host layout too (backup ${r.legacyBackupRef} in the host's mirror)` : ''
        }${r.legacyKept ? `; its worktree of the old host layout kept: ${r.legacyKept}` : ''}`,
  );
}

/**
 * The stacked part of a pass (see the module doc): every unfinished task stacked on a merged or
 * done parent whose base is still the parent's branch gets the parent's base. Idempotent.
 */
async function retargetStacked(input: WatchMergesInput, report: WatchMergesReport, now: () => Date): Promise<void> {
  const reg = await input.store.read();
  for (const child of Object.values(reg.tasks)) {
    const parent = child.stackedOn ? reg.tasks[child.stackedOn] : undefined;
    if (!parent || (parent.status !== 'merged' && parent.status !== 'done')) continue;
    if (child.status === 'merged' || child.status === 'done' || child.status === 'cancelled' || child.status === 'failed') continue;
    const from = `polly/${parent.id}`;
    const to = parent.baseBranch;
    if (child.baseBranch !== from || !to || to === from) continue;
    const number = child.pr && OPEN.has(child.pr.state) ? child.pr.number : null;
    if (number !== null) {
      try {
        await input.forge.retarget(number, to);
      } catch (error) {
        report.errors.push({ taskId: child.id, message: `retargeting PR #${number} from ${from} to ${to} failed: ${isPollyError(error) ? error.message : String(error)}` });
        continue;
      }
    }
    await input.store.update((draft, tx) => {
      const t = draft.tasks[child.id];
      if (!t || t.baseBranch !== from) return;
      t.baseBranch = to;
      t.updatedAt = now().toISOString();
      // A task that has started (a worktree from the parent's branch, or a PR) merges the new base in: the event starts that round.
      if (number !== null || t.worktree) {
        tx.emit('pr.retargeted', {
          forge: t.pr?.forge ?? null,
          number,
          taskId: t.id,
          from,
          to,
          parentTaskId: parent.id,
          parentNumber: parent.pr?.number ?? null,
        });
      }
    });
    (report.retargeted ??= []).push({ taskId: child.id, number, from, to, parentTaskId: parent.id });
    input.progress?.(
      `${child.id}: stacked on ${parent.id}, whose PR #${parent.pr?.number ?? '?'} merged: ${number !== null ? `PR #${number} retargeted` : 'base'} from ${from} to ${to}`,
    );
  }
}
