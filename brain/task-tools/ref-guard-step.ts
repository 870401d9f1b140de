/**
 * The ref guard around a task step (an agent turn, an acceptance run, a review turn): snapshot the
 * repository's refs, its path remotes' refs and its git metadata files before, compare after
 * (workers/git/ref-guard.ts). Any change other than the task's own branch (and other than Polly's
 * own writes for parallel tasks) is put back at once, journaled as `guard.ref_changed`
 * `{taskId, orderId, step, changes, restored, failed, quarantined}`, and fails the task loudly:
 * status `failed`, reason `ref guard: during <step>: <ref> changed, <old> → <new>; …`. The tool then
 * returns a permanent failure, and `send_followup` does not resume a failed task, so the run ends
 * `failed`, never `ready`.
 *
 * Works with or without a sandbox: it reads git, not the agent's words.
 *
 * **Only what the step could do counts.** When the step ran in Polly's sandbox (the caller passes
 * the mounts it ran with, `confinement`), a change the sandbox could not have written — the common
 * git dir, a path remote and the worktree's `.git` file are read-only inside it
 * (workers/git/git-policy.ts) — was made outside it while the step ran: a person committing on their
 * own branch in the main checkout, another program. It is journaled as `guard.outside_change`
 * `{taskId, orderId, step, changes}` and shown, but never put back and never fails the task (a
 * person's commit on `main` used to be reset and the task failed). Without a sandbox
 * (`workers.allow_unconfined`), a worker's write and a person's cannot be told apart (no
 * capability separates them, and a worker can forge a commit's author and time and a reflog's
 * message): every change is put back (the overwritten value kept under `refs/polly/quarantine/`)
 * and fails the task, and the task's reason says so and where the value went; the warning at every
 * unconfined dispatch says it beforehand (workers/sandbox/sandbox.ts `decideConfinement`).
 *
 * **Across a Brain crash.** The snapshot taken before a step is kept in
 * `.polly/guard/turns/<task id>-<hash of order id and step>.json` (written atomically, fsynced)
 * until the step has been compared. A Brain restarted after a crash (or a stop) that adopts the
 * same order's step (the supervisor adopts the running worker) compares against that snapshot,
 * taken BEFORE the turn by its predecessor, not against one taken after the restart, which would
 * already hold what the worker moved. Polly's own ref writes in the meantime are excused by the
 * ledger its predecessor kept on disk (workers/git/ref-guard.ts `persistedPollyRefWrites`).
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SandboxMount } from '../../workers/sandbox/sandbox-spec.js';
import { createGitRunner, type GitRunner } from '../../workers/git/git.js';
import {
  createRefGuard,
  describeChanges,
  diffSnapshots,
  persistedPollyRefWrites,
  sandboxCouldWrite,
  type RefChange,
  type RefSnapshot,
  type RestoreReport,
} from '../../workers/git/ref-guard.js';
import type { TaskToolContext, TaskToolOutcome } from './types.js';
import { transitionTask } from '../registry/task-lifecycle.js';

/** What the guard saw during one step; null fields when nothing changed. */
export interface GuardViolation {
  step: string;
  changes: RefChange[];
  report: RestoreReport;
  /** The task's reason: `ref guard: during <step>: …`. */
  reason: string;
}

export interface RefGuardStepOptions<T = unknown> {
  git?: GitRunner;
  /** Local refs the step may move. Default: the task's own branch. */
  allowLocal?: readonly string[];
  /**
   * The mounts the step's processes ran with in Polly's sandbox (workers/sandbox/sandbox-spec.ts
   * `appliedMounts`), read from its value; null or undefined: unconfined (or not known), so any
   * change may be the step's. With mounts, only a change the sandbox could write counts (see the
   * module doc).
   */
  confinement?: (value: T) => readonly SandboxMount[] | null | undefined;
}

/** What {@link withRefGuard} needs of a tool context (the Brain's read-only task runner passes the same). */
export type RefGuardContext = Pick<TaskToolContext, 'repoRoot' | 'store' | 'progress' | 'clock'> & {
  task: Pick<TaskToolContext['task'], 'id' | 'branch'>;
  order: Pick<TaskToolContext['order'], 'id'>;
};

/**
 * Run `step` between two snapshots; restore and journal whatever it changed (see the module doc).
 * @param label  what ran, for the reason and the journal (`the implementer turn`, `acceptance`, …).
 * @returns the step's value, and the violation (null when refs and metadata are unchanged).
 * @throws whatever `step` throws (after nothing is compared), and PollyError `git_failed` when the
 *   refs cannot be listed.
 */
export async function withRefGuard<T>(
  ctx: RefGuardContext,
  label: string,
  step: () => Promise<T>,
  options: RefGuardStepOptions<T> = {},
): Promise<{ value: T; violation: GuardViolation | null }> {
  const guard = createRefGuard({ git: options.git ?? createGitRunner(), repoRoot: ctx.repoRoot });
  const file = stepSnapshotFile(ctx.repoRoot, ctx.task.id, ctx.order.id, label);
  const kept = readStepSnapshot(file);
  const before = kept ?? (await guard.snapshot());
  if (!kept) writeStepSnapshot(file, before);
  // A throw leaves the file: the order is retried (or adopted by the next Brain) as the same step.
  const value = await step();
  const after = await guard.snapshot(before.remotes);
  const allowLocal = options.allowLocal ?? [`refs/heads/${ctx.task.branch ?? `polly/${ctx.task.id}`}`];
  // Taken by an earlier Brain: what that Brain wrote is excused by the ledger it kept on disk.
  const pollyWrites = kept ? persistedPollyRefWrites(ctx.repoRoot, Date.parse(before.takenAt)) : [];
  const all = diffSnapshots(before, after, { allowLocal, pollyWrites });
  const mounts = options.confinement?.(value) ?? null;
  const changes = mounts ? all.filter((c) => sandboxCouldWrite(mounts, before, c)) : all;
  const outside = mounts ? all.filter((c) => !sandboxCouldWrite(mounts, before, c)) : [];
  if (outside.length > 0) {
    // Made outside the sandbox while the step ran (a person's commit on their branch, another
    // program): not the worker's, so neither put back nor held against the task.
    await ctx.store.update((_draft, tx) => {
      tx.emit('guard.outside_change', { taskId: ctx.task.id, orderId: ctx.order.id, step: label, changes: outside });
    });
    ctx.progress(`${ctx.task.id}: during ${label}, outside the sandbox (not the worker's; left as is): ${describeChanges(outside)}`);
  }
  if (changes.length === 0) {
    rmSync(file, { force: true });
    return { value, violation: null };
  }
  const report = await guard.restore(before, changes);
  const undone = report.failed.length === 0 ? 'all put back' : `put back except: ${report.failed.map((f) => `${f.change.name} (${f.reason})`).join('; ')}`;
  // Unconfined, a person's commit looks exactly like a worker's (no capability tells them apart,
  // and a worker can forge author, time and reflog message): say so, and where a value went.
  const unconfined = mounts
    ? ''
    : `. This step ran without Polly's sandbox, where a worker's ref change and yours cannot be told apart, so every change was put back; if one was yours, ${report.quarantined.length > 0 ? 'its value is under refs/polly/quarantine/ (git update-ref <ref> <that value> restores it)' : 'its value is in the journal (guard.ref_changed)'}`;
  const reason = `ref guard: during ${label}: ${describeChanges(changes)} (${undone}${report.quarantined.length > 0 ? `; overwritten values kept under refs/polly/quarantine/` : ''})${unconfined}`;
  await ctx.store.update((draft, tx) => {
    tx.emit('guard.ref_changed', {
      taskId: ctx.task.id,
      orderId: ctx.order.id,
      step: label,
      changes,
      restored: report.restored.length,
      failed: report.failed.map((f) => ({ name: f.change.name, reason: f.reason })),
      quarantined: report.quarantined,
    });
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: ctx.clock().toISOString(), reason: reason.slice(0, 2000) });
  });
  rmSync(file, { force: true });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { value, violation: { step: label, changes, report, reason } };
}

/** Where the before-snapshot of `label` for `orderId` is kept until the step is compared. Pure. */
export function stepSnapshotFile(repoRoot: string, taskId: string, orderId: string, label: string): string {
  const key = createHash('sha256').update(`${orderId}\0${label}`).digest('hex').slice(0, 16);
  return join(repoRoot, '.polly', 'guard', 'turns', `${taskId.replace(/[^\w.-]/g, '_')}-${key}.json`);
}

function readStepSnapshot(file: string): RefSnapshot | null {
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as RefSnapshot;
    return typeof s.takenAt === 'string' && s.local && typeof s.local === 'object' && Array.isArray(s.remotes) && s.files ? s : null;
  } catch {
    return null;
  }
}

/** Atomically (temp file, fsync, rename): a crash leaves no file or the whole one. */
function writeStepSnapshot(file: string, snapshot: RefSnapshot): void {
  // Only where Polly keeps its state (`.polly/`, made by `polly init`): never creates it.
  if (!existsSync(dirname(dirname(dirname(file))))) return;
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, JSON.stringify(snapshot));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** The tool outcome for a violation: a permanent failure whose note is the reason. */
export function guardFailure(violation: GuardViolation): TaskToolOutcome {
  return { outcome: 'failure', permanent: true, note: violation.reason };
}

/**
 * Mark the task failed with the violation's reason again (a tool that records its own status after
 * the step, e.g. `recordTurn`, would otherwise overwrite it).
 */
export async function reassertGuardFailure(ctx: RefGuardContext, violation: GuardViolation): Promise<void> {
  await ctx.store.update((draft) => {
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: ctx.clock().toISOString(), reason: violation.reason.slice(0, 2000) });
  });
}
