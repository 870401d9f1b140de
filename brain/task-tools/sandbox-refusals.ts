/**
 * What the sandbox refused, read from what the OS answered (never from the agent's own words):
 * the tool results of an agent turn and the output of Polly's acceptance run. Inside Polly's
 * sandbox everything outside the worktree, the agent's state and its TMPDIR is a read-only bind,
 * so a write there fails with the kernel's EROFS message, "Read-only file system" (errno(3); git,
 * the shells, coreutils and python print strerror(EROFS) this way; node says "EROFS: read-only file
 * system"; matched without case). A worker that
 * tried to write the main checkout, a sibling worktree, `.git/hooks`, `.git/config` or a ref fails
 * its task with those lines, so the run never ends `ready` after an attempt the sandbox stopped.
 *
 * Its limit: a program that hides its errors (stderr to /dev/null) leaves nothing to read; then
 * the sandbox still held, and the ref guard still compares refs, but Polly cannot name the attempt.
 */
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import { transitionTask } from '../registry/task-lifecycle.js';
import { visibleText } from '../core/visible-text.js';
import type { RefGuardContext } from './ref-guard-step.js';
import type { TaskToolOutcome } from './types.js';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const EROFS = /read-only file system/i;

/**
 * The task's own git admin dir (`<common git dir>/worktrees/<name>`, from the worktree's `.git`
 * file), or null. An agent's own `git add`/`git commit` in its worktree fails there (Polly is the
 * only writer of git metadata and commits what the agent leaves): that refusal is benign, not an
 * attempt on anything outside the task.
 */
export function ownGitAdminDir(worktree: string | null): string | null {
  if (!worktree) return null;
  try {
    const m = /^gitdir: (.+)$/m.exec(readFileSync(join(worktree, '.git'), 'utf8'));
    return m?.[1] ? resolve(worktree, m[1].trim()) : null;
  } catch {
    return null;
  }
}

/**
 * The distinct lines (≤ 300 characters each, at most `max`, control characters shown as `\xNN`)
 * that carry a sandbox refusal, minus those about a path under one of `benign` (the task's own git
 * admin dir). Pure.
 */
export function refusalLines(texts: readonly string[], max = 5, benign: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (!EROFS.test(line)) continue;
      if (benign.some((dir) => line.includes(`${dir}/`))) continue;
      // The path is the worker's choice: terminal escapes in it would reach the user's terminal.
      const l = visibleText(line.trim()).slice(0, 300);
      if (!out.includes(l)) out.push(l);
      if (out.length >= max) return out;
    }
  }
  return out;
}

/** The refusal lines in an agent turn's tool results, minus those under `benign` dirs. Pure. */
export function turnRefusals(events: readonly AgentEvent[], benign: readonly string[] = []): string[] {
  return refusalLines(
    events.flatMap((e) => (e.type === 'tool_result' ? [e.output] : [])),
    5,
    benign,
  );
}

/** The task's reason for refusals seen during `step`. */
export function refusalReason(step: string, lines: readonly string[]): string {
  return `sandbox refused a write outside the worktree during ${step}: ${lines.join(' | ')}`;
}

/**
 * Fail the task for `lines` refused during `step`: status `failed` with {@link refusalReason},
 * journaled as `guard.sandbox_refused` `{taskId, orderId, step, lines}`.
 * @returns the permanent failure the tool returns.
 */
export async function sandboxRefusalFailure(ctx: RefGuardContext, step: string, lines: readonly string[]): Promise<TaskToolOutcome> {
  const reason = refusalReason(step, lines);
  await ctx.store.update((draft, tx) => {
    tx.emit('guard.sandbox_refused', { taskId: ctx.task.id, orderId: ctx.order.id, step, lines });
    const t = draft.tasks[ctx.task.id];
    if (t) transitionTask(t, 'failed', { at: ctx.clock().toISOString(), reason: reason.slice(0, 2000) });
  });
  ctx.progress(`${ctx.task.id}: ${reason}`);
  return { outcome: 'failure', permanent: true, note: reason };
}
