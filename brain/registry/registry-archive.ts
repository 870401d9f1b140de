/**
 * Finished history leaves `.polly/registry.json` so the registry stays small: a registry update
 * rewrites the whole file, so its cost is the size of what is live, not of everything ever done.
 *
 * The unit of archiving is a finished goal tree: the goal, its plans, their tasks, the local PRs
 * and the ended worker rows of those tasks — or, without a goal, a finished plan's tree or an
 * ad-hoc task (planId null). A tree is finished when its goal is final (done, failed, cancelled)
 * and every task in it is {@link ARCHIVABLE_TASK_STATUSES} (a `ready` or `merged` task is still
 * carried by the forge and stays), and nothing is still owed on the goal's issue: a goal that came
 * from an issue whose PRs are all merged stays until Polly has said so on the issue
 * (goal-pull-requests.ts `owesMergedNotice`). Its tasks' age counts from when they became ready,
 * not from the merge, so a PR merged a day after its task was ready would otherwise take the tree
 * out in the very pass that noticed the merge, before the plan gate on the issue could post it.
 *
 * Where archived records go: each unit becomes one journal event `registry.archived` whose data
 * holds the records themselves ({@link ArchiveUnit}), committed in the same registry update that
 * removes them — so the journal alone can rebuild the archive. The store also appends the same
 * entries to `.polly/archive.jsonl` (journal-shaped lines, exactly once by `seq`), the archive a
 * reader of history opens; `polly status` and the Brain never read it.
 */
import { FINAL_GOAL_STATUSES, FINAL_TASK_STATUSES, type TaskStatus } from '../core/vocabulary.js';
import type { GoalRecord, LocalPullRequest, PlanRecord, TaskRecord, WorkerRecord } from './registry-schema.js';
import { owesMergedNotice } from './goal-pull-requests.js';

/** The journal kind of an archive event (and of every line in `archive.jsonl`). */
export const ARCHIVE_EVENT = 'registry.archived';

/**
 * Task statuses after which nothing more happens to a task: it may be archived. The final
 * statuses (brain/core/vocabulary.ts) but those whose PR a human may still merge or Polly still
 * carries (`ready`, `parked`, `merged`).
 */
export const ARCHIVABLE_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>([...FINAL_TASK_STATUSES].filter((s) => s !== 'ready' && s !== 'parked' && s !== 'merged'));

/** One archived tree: the records removed from the registry, as they were. */
export interface ArchiveUnit {
  goal: GoalRecord | null;
  plans: PlanRecord[];
  tasks: TaskRecord[];
  pullRequests: LocalPullRequest[];
  workers: WorkerRecord[];
}

/** The maps archiving reads and removes from (a registry, or a raw migrated one). */
export interface ArchivableMaps {
  goals: Record<string, GoalRecord>;
  plans: Record<string, PlanRecord>;
  tasks: Record<string, TaskRecord>;
  pullRequests: Record<string, LocalPullRequest>;
  workers: Record<string, WorkerRecord>;
}

function finishedAt(tasks: TaskRecord[]): number {
  let last = 0;
  for (const t of tasks) last = Math.max(last, Date.parse(t.finishedAt ?? t.updatedAt) || 0);
  return last;
}

/**
 * Remove every finished tree whose last task finished before `olderThan` (ms since the epoch;
 * `Infinity` for any age) from `maps`, in place, and return the removed trees. A goal tree with a
 * task that is not archivable stays whole: readers never see half a goal.
 * Cost: O(records in `maps`).
 */
export function takeFinished(maps: ArchivableMaps, olderThan: number): ArchiveUnit[] {
  const units: ArchiveUnit[] = [];
  const tasksOfPlan = new Map<string, TaskRecord[]>();
  for (const t of Object.values(maps.tasks)) if (t.planId) tasksOfPlan.set(t.planId, [...(tasksOfPlan.get(t.planId) ?? []), t]);
  const plansOfGoal = new Map<string, PlanRecord[]>();
  for (const p of Object.values(maps.plans)) if (p.goalId) plansOfGoal.set(p.goalId, [...(plansOfGoal.get(p.goalId) ?? []), p]);
  const done = (tasks: TaskRecord[]) => tasks.every((t) => ARCHIVABLE_TASK_STATUSES.has(t.status)) && finishedAt(tasks) < olderThan;
  const take = (goal: GoalRecord | null, plans: PlanRecord[], tasks: TaskRecord[]): void => {
    const ids = new Set(tasks.map((t) => t.id));
    const pullRequests = Object.values(maps.pullRequests).filter((pr) => pr.taskId !== null && ids.has(pr.taskId));
    const workers = Object.values(maps.workers).filter((w) => ids.has(w.taskId) && (w.state === 'exited' || w.state === 'dead'));
    if (goal) delete maps.goals[goal.id];
    for (const p of plans) delete maps.plans[p.id];
    for (const t of tasks) delete maps.tasks[t.id];
    for (const pr of pullRequests) delete maps.pullRequests[String(pr.number)];
    for (const w of workers) delete maps.workers[w.id];
    units.push({ goal, plans, tasks, pullRequests, workers });
  };
  for (const goal of Object.values(maps.goals)) {
    if (!FINAL_GOAL_STATUSES.has(goal.status)) continue;
    const plans = plansOfGoal.get(goal.id) ?? [];
    const tasks = plans.flatMap((p) => tasksOfPlan.get(p.id) ?? []);
    if (!done(tasks)) continue;
    if (tasks.length === 0 && (Date.parse(goal.createdAt) || 0) >= olderThan) continue;
    if (owesMergedNotice(goal, maps)) continue; // the "every PR merged" is still to be said
    take(goal, plans, tasks);
  }
  for (const plan of Object.values(maps.plans)) {
    if (plan.goalId && maps.goals[plan.goalId]) continue; // goes with its goal
    const tasks = tasksOfPlan.get(plan.id) ?? [];
    if (tasks.length === 0 || !done(tasks)) continue;
    take(null, [plan], tasks);
  }
  for (const task of Object.values(maps.tasks)) {
    if (task.planId !== null || !done([task])) continue;
    take(null, [], [task]);
  }
  return units;
}

/** What {@link archiveFinished} needs of a registry update's transaction. */
export interface ArchiveTx {
  emit(kind: string, data: Record<string, unknown>): void;
}

/**
 * Inside a registry update: take the finished trees whose last task finished before `olderThan`
 * (ms since the epoch) out of `draft` and journal each as a {@link ARCHIVE_EVENT} event holding its
 * records (the file store also appends them to `archive.jsonl`). Returns how many trees moved.
 */
export function archiveFinished(draft: ArchivableMaps, tx: ArchiveTx, olderThan: number): number {
  const units = takeFinished(draft, olderThan);
  for (const unit of units) tx.emit(ARCHIVE_EVENT, unit as unknown as Record<string, unknown>);
  return units.length;
}
