/**
 * A goal's pull requests as the issue line sees them (issue 30): the implement tasks of the goal's
 * approved plans, and whether every one that is to land has a merged PR. The plan gate on the issue
 * (brain/forge/issue-gate.ts) says so once on the goal's issue (`GoalIssueLink.mergedNotice`), and
 * the archive (registry-archive.ts) keeps a goal tree in the registry while that notice is still
 * owed, so a goal whose PRs merged long after it ended still gets it.
 */
import type { GoalRecord, Registry, TaskRecord } from './registry-schema.js';
import { planTaskId } from './task-record.js';

/**
 * The implement tasks of the goal's approved plans and whether every one of them that is to land
 * (not failed, not cancelled) has a merged PR; false when none is to land. Pure.
 */
export function goalPullRequests(goal: Pick<GoalRecord, 'planIds'>, reg: Pick<Registry, 'plans' | 'tasks'>): { tasks: TaskRecord[]; allMerged: boolean } {
  const tasks: TaskRecord[] = [];
  for (const id of goal.planIds) {
    const plan = reg.plans[id];
    if (plan?.gate !== 'approved') continue;
    for (const spec of plan.tasks) {
      const t = reg.tasks[planTaskId(plan, spec.key)];
      if (t && spec.purpose === 'implement') tasks.push(t);
    }
  }
  const landing = tasks.filter((t) => t.status !== 'failed' && t.status !== 'cancelled');
  return { tasks, allMerged: landing.length > 0 && landing.every((t) => t.pr?.state === 'merged' || (t.pr !== null && t.pr !== undefined && t.status === 'merged')) };
}

/**
 * Whether the goal came from an issue, every PR of it is merged, and Polly has not said so on the
 * issue yet (`GoalIssueLink.mergedNotice`): the next pass of the plan gate on the issue posts it.
 * Pure.
 */
export function owesMergedNotice(goal: Pick<GoalRecord, 'planIds' | 'issue'>, reg: Pick<Registry, 'plans' | 'tasks'>): boolean {
  return Boolean(goal.issue) && !goal.issue!.mergedNotice && goalPullRequests(goal, reg).allMerged;
}
