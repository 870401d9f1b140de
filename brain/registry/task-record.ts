/**
 * A new task record: the one place that knows every field a fresh TaskRecord starts with.
 */
import type { TaskRecord } from './registry-schema.js';

/** The fields a caller decides; everything else starts empty (status `queued`). */
export type NewTaskFields = Pick<TaskRecord, 'id' | 'planId' | 'title' | 'purpose' | 'worker' | 'model' | 'reviewer' | 'prompt' | 'acceptance' | 'dependsOn'>;

/** A queued task with no worktree, branch, checks, reviews or PR yet. `at` is an ISO time. */
export function newTaskRecord(fields: NewTaskFields, at: string): TaskRecord {
  return {
    ...fields,
    status: 'queued',
    statusReason: null,
    attempts: 0,
    reviewRounds: 0,
    branch: null,
    worktree: null,
    baseBranch: null,
    baseCommit: null,
    headCommit: null,
    checks: [],
    reviews: [],
    pr: null,
    backupRefs: [],
    sessionId: null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * The task id of plan task `key`: `<plan id>-<key>`, or, when the plan retries an earlier task
 * under that key (`plan.retries`, written by `polly retry`), that task's id: a retry runs the same
 * task record, worktree, branch and PR under the retry plan's admitted workflows.
 */
export function planTaskId(plan: { id: string; retries?: Record<string, string> }, key: string): string {
  return plan.retries?.[key] ?? `${plan.id}-${key}`;
}
