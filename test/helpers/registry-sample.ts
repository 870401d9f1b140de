// Sample registry content for the registry tests: realistic task records.
import { emptyRegistry, type Registry, type TaskRecord } from '../../brain/registry/registry-schema.js';

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
