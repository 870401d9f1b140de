/**
 * The Brain's inbox: the journal entries a Brain must know of (what a worker, the gate or a human
 * did), flattened into events. Read by the Brain process's loop (brain/process/brain-process.ts),
 * the LLM Brain's wake-up messages (brain/llm/llm-brain.ts) and the `sys_read_inbox` MCP tool
 * (./brain-tools.ts). A module of its own so that the Brain process does not load the MCP server
 * and the gate to read its inbox (issue 33 item 6: part of the Brain's start-up).
 */
import type { JournalEntry } from '../registry/registry-schema.js';

/** Journal kinds the Brain's inbox carries (everything a worker, the gate or a human did that the Brain must know). */
export const INBOX_KINDS: ReadonlySet<string> = new Set([
  'task.started',
  'task.finished',
  'task.failed',
  'task.cancelled',
  // Stopped with its work kept (issue 20: a budget reached; issue 16: fix rounds exhausted).
  'task.parked',
  'budget.reached',
  'plan.proposed',
  'plan.refused',
  'plan.approved',
  'plan.rejected',
  'plan.expired',
  'pr.opened',
  'pr.ready',
  'pr.merged',
  'pr.closed',
  'pr.review',
  // The PR's life after "ready" (issue 16): a human's feedback, a PR that stopped merging, and back.
  'pr.feedback',
  'pr.conflicts',
  'pr.conflicts_resolved',
  // A stacked task's PR now targets its merged parent's base (brain/forge/after-merge.ts).
  'pr.retargeted',
  // A check run or commit status failed on the PR's head (GitHub: github-watch.ts).
  'pr.checks_failed',
  // Fix rounds (brain/process/pr-events.ts): one started, one answered on the PR (task.parked above).
  'task.fix_round',
  'task.pr_reply',
  'goal.done',
]);

/** An inbox event: a journal entry the Brain cares about, flattened. */
export interface InboxEvent {
  seq: number;
  at: string;
  kind: string;
  [field: string]: unknown;
}

/** Journal entries → inbox events (only {@link INBOX_KINDS}). */
export function toInboxEvents(entries: readonly JournalEntry[]): InboxEvent[] {
  return entries.filter((e) => INBOX_KINDS.has(e.kind)).map((e) => ({ ...e.data, seq: e.seq, at: e.at, kind: e.kind }));
}
