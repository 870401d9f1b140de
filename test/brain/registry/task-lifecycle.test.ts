// The task lifecycle: the allowed moves as a table, and the refusal of every other move.
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { TASK_STATUSES, type TaskStatus } from '../../../brain/core/vocabulary.js';
import { canTransitionTask, TASK_TRANSITIONS, transitionTask } from '../../../brain/registry/task-lifecycle.js';

function task(status: TaskStatus) {
  return { id: 'p1-a', status, statusReason: 'old reason' as string | null, updatedAt: '2026-01-01T00:00:00.000Z', finishedAt: null as string | null };
}

describe('task lifecycle', () => {
  // [from, to, allowed] — the moves Polly's writers make, and ones no writer may make.
  const cases: [TaskStatus, TaskStatus, boolean][] = [
    ['queued', 'dispatched', true], // the scheduler starts a plan task
    ['queued', 'running', true], // a read-only task starts
    ['queued', 'cancelled', true], // a dependency failed
    ['queued', 'failed', true], // the runtime refused to start the workflow
    ['queued', 'ready', false],
    ['dispatched', 'running', true],
    ['running', 'checking', true],
    ['checking', 'fixing', true],
    ['fixing', 'running', true],
    ['checking', 'green', true],
    ['green', 'pr_open', true],
    ['pr_open', 'reviewing', true],
    ['reviewing', 'fixing', true],
    ['reviewing', 'ready', true],
    ['running', 'done', true], // read-only work ends
    ['running', 'agent_exited', true],
    ['agent_exited', 'running', true], // the workflow retries the dispatch
    ['failed', 'cancelled', true],
    ['failed', 'ready', false],
    ['ready', 'merged', true],
    ['pr_open', 'merged', true], // a human merges the draft PR before Polly marks it ready
    ['queued', 'merged', false],
    ['merged', 'done', true],
    ['ready', 'running', false],
    ['ready', 'fixing', true], // a PR event starts a fix round in the same session
    ['fixing', 'parked', true], // the fix rounds are exhausted
    ['ready', 'parked', true], // a budget is reached while the PR is watched
    ['dispatched', 'base_red', true], // the base check found a project check red before the first agent turn
    ['queued', 'base_red', true],
    ['base_red', 'queued', true], // polly retry
    ['base_red', 'cancelled', true],
    ['base_red', 'running', false], // only a retry starts it again
    ['base_red', 'ready', false],
    ['parked', 'merged', true], // a human merges the parked PR
    ['parked', 'cancelled', true],
    ['parked', 'running', false],
    ['parked', 'ready', false],
    ['merged', 'ready', false],
    ['done', 'failed', false],
    ['done', 'running', false],
    ['cancelled', 'running', false],
    ['cancelled', 'failed', false],
    ['failed', 'queued', true], // polly retry hands the task to its retry plan
    ['agent_exited', 'queued', true],
    ['cancelled', 'queued', true], // polly retry of a skipped or cancelled task
    ['parked', 'queued', true], // polly retry of a task parked for its budget (raised) or a full disk
    ['ready', 'queued', false],
    ['done', 'queued', false],
  ];
  it.each(cases)('%s → %s allowed: %s', (from, to, allowed) => {
    expect(canTransitionTask(from, to)).toBe(allowed);
    const t = task(from);
    if (allowed) {
      expect(transitionTask(t, to, { at: '2026-02-02T00:00:00.000Z', reason: 'why' })).toBe(from);
      expect(t).toEqual({ id: 'p1-a', status: to, statusReason: 'why', updatedAt: '2026-02-02T00:00:00.000Z', finishedAt: null });
    } else {
      let caught: unknown;
      try {
        transitionTask(t, to, { at: '2026-02-02T00:00:00.000Z' });
      } catch (error) {
        caught = error;
      }
      expect(isPollyError(caught) && caught.code).toBe('internal');
      expect((caught as Error).message).toContain(`task p1-a cannot move from "${from}" to "${to}"`);
      expect(t.status).toBe(from); // a refused move writes nothing
      expect(t.updatedAt).toBe('2026-01-01T00:00:00.000Z');
    }
  });

  it('every status has a row, staying is always allowed, done is absorbing and cancelled leaves only for a retry', () => {
    expect(Object.keys(TASK_TRANSITIONS).sort()).toEqual([...TASK_STATUSES].sort());
    for (const s of TASK_STATUSES) expect(canTransitionTask(s, s)).toBe(true);
    expect(TASK_TRANSITIONS.done).toEqual([]);
    expect(TASK_TRANSITIONS.cancelled).toEqual(['queued']);
  });

  it('leaves the reason unless given, and records the finish when asked', () => {
    const t = task('running');
    transitionTask(t, 'checking', { at: '2026-02-02T00:00:00.000Z' });
    expect(t.statusReason).toBe('old reason');
    transitionTask(t, 'failed', { at: '2026-02-03T00:00:00.000Z', reason: null, finished: true });
    expect(t).toMatchObject({ status: 'failed', statusReason: null, finishedAt: '2026-02-03T00:00:00.000Z' });
  });
});
