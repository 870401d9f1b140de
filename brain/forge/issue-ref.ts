/**
 * The issue line of a PR body (issue 30): a PR of a goal that came from an issue says
 * `Fixes #N` when it is the goal's last piece of work to land, and `Refs #N` while other work of
 * the goal is still to land (a partial task). GitHub closes an issue when a PR whose description
 * carries a closing keyword is merged into the default branch
 * (https://docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue),
 * so the issue closes when its last PR is merged, by the human who merges it: Polly closes nothing.
 * The landing sync (brain/forge/landing-sync.ts) rewrites a body whose line changed (another PR of
 * the goal merged, so this one became the last: `Refs` → `Fixes`).
 */
import type { Registry, TaskRecord } from '../registry/registry-schema.js';

/** Task statuses whose work will not land (nothing more to wait for). */
const SETTLED_WITHOUT_PR = new Set(['failed', 'cancelled']);

/**
 * `Fixes #N`, `Refs #N`, or null when the task's goal has no issue. "Still to land": another
 * implement task of the goal's approved plans whose PR is not merged and that did not fail or get
 * cancelled. Pure.
 */
export function issueRefLine(reg: Pick<Registry, 'goals' | 'plans' | 'tasks'>, task: Pick<TaskRecord, 'id' | 'planId'>): string | null {
  const plan = task.planId ? reg.plans[task.planId] : undefined;
  const goal = plan?.goalId ? reg.goals[plan.goalId] : undefined;
  if (!goal?.issue) return null;
  const planIds = new Set(goal.planIds.filter((id) => reg.plans[id]?.gate === 'approved'));
  const others = Object.values(reg.tasks).filter((t) => t.id !== task.id && t.purpose === 'implement' && t.planId !== null && planIds.has(t.planId));
  const stillToLand = others.filter((t) => t.pr?.state !== 'merged' && t.status !== 'merged' && !SETTLED_WITHOUT_PR.has(t.status));
  const n = goal.issue.number;
  if (stillToLand.length === 0) return `Fixes #${n}`;
  return `Refs #${n} (part of the work; the last PR of this issue to land says Fixes: ${stillToLand
    .map((t) => t.id)
    .sort()
    .join(', ')} still to land)`;
}
