// Sample registry content for the registry tests and the registry benchmark: realistic task records.
import { emptyRegistry, type Registry, type TaskRecord } from '../brain/registry/registry-schema.js';

/** A task record as the dispatcher would write it (fields filled with plausible values). */
export function sampleTask(id: string, at = '2026-11-01T00:00:00.000Z'): TaskRecord {
  return {
    id,
    planId: 'p1',
    title: `task ${id}: make the widget configurable`,
    purpose: 'implement',
    worker: 'claude-code',
    model: 'claude-sonnet-4-5',
    reviewer: 'codex',
    prompt: `Implement ${id}. Keep the public API stable and add tests for the new option.`,
    acceptance: { commands: ['npm test', 'npm run lint'], criteria: ['tests pass', 'no new warnings'] },
    dependsOn: [],
    status: 'queued',
    statusReason: null,
    attempts: 0,
    reviewRounds: 0,
    branch: `polly/${id}`,
    worktree: `.worktrees/${id}`,
    baseBranch: 'main',
    baseCommit: '0123456789abcdef0123456789abcdef01234567',
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

/** An empty registry holding `n` sample tasks `t1..tn`. */
export function registryWithTasks(n: number): Registry {
  const reg = emptyRegistry();
  for (let i = 1; i <= n; i++) reg.tasks[`t${i}`] = sampleTask(`t${i}`);
  reg.counters.task = n;
  return reg;
}

/**
 * A schema v1 registry (as Polly wrote it before the archive) with `goals` goals of 10 tasks each:
 * the first `finished` goals done (tasks done, a merged local PR and an exited worker each), the
 * rest running (tasks queued). Plans `p<k>`, tasks `p<k>-t<i>`, PRs numbered from 1.
 */
export function v1RegistryWithHistory(goals: number, finished: number): Record<string, unknown> {
  // A v1 file is untyped today: each table holds plain records of that older shape.
  type Table = Record<string, unknown>;
  const reg = emptyRegistry() as unknown as { schemaVersion: number; counters: Table; goals: Table; plans: Table; tasks: Table; pullRequests: Table; workers: Table };
  reg.schemaVersion = 1;
  let pr = 0;
  for (let k = 1; k <= goals; k++) {
    const done = k <= finished;
    const goalId = `g${k}`;
    const planId = `p${k}`;
    reg.goals[goalId] = { id: goalId, text: `goal ${k}`, createdAt: '2026-10-01T00:00:00.000Z', status: done ? 'done' : 'running', planIds: [planId] };
    reg.plans[planId] = {
      id: planId,
      goalId,
      createdAt: '2026-10-01T00:00:00.000Z',
      tasks: [],
      admission: null,
      gate: 'approved',
      askedAt: null,
      decidedAt: null,
      decidedBy: null,
    };
    for (let i = 1; i <= 10; i++) {
      const id = `${planId}-t${i}`;
      const t = sampleTask(id);
      t.planId = planId;
      if (done) {
        t.status = 'done';
        t.finishedAt = '2026-10-02T00:00:00.000Z';
        pr += 1;
        t.pr = { forge: 'local', number: pr, url: `local:${pr}`, state: 'merged' };
        reg.pullRequests[String(pr)] = {
          number: pr,
          taskId: id,
          title: id,
          body: '',
          head: `polly/${id}`,
          base: 'main',
          headCommit: 'abc',
          state: 'merged',
          reviews: [],
          createdAt: t.createdAt,
          updatedAt: t.createdAt,
        };
        reg.workers[`w-${id}`] = {
          id: `w-${id}`,
          taskId: id,
          harness: 'claude-code',
          pid: 1,
          pgid: 1,
          sessionId: null,
          startedAt: t.createdAt,
          heartbeatAt: t.createdAt,
          supervisor: null,
          state: 'exited',
        };
      }
      reg.tasks[id] = t;
    }
  }
  reg.counters = { journalSeq: 0, pullRequest: pr, task: goals * 10, plan: goals, goal: goals };
  return reg;
}
