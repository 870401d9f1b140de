// The goal lifecycle: the allowed moves as a table, the refusal of every other move, `goal.done`
// journaled with the end, and no other writer of a goal's status in brain/.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { GOAL_STATUSES, type GoalStatus } from '../../../brain/core/vocabulary.js';
import { canTransitionGoal, endGoal, GOAL_TRANSITIONS, transitionGoal } from '../../../brain/registry/goal-lifecycle.js';

const ROOT = join(import.meta.dirname, '../../..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Lines of `source` that assign a goal's status (`goal.status =`, `goals[id]!.status =`, `g.status =`). */
function goalStatusWrites(source: string): string[] {
  const re = /(?:\bgoal\w*|\bg|\bgoals\[[^\]]+\]!?)\.status\s*=(?!=)/;
  return source.split('\n').filter((l) => re.test(l) && !l.trim().startsWith('*') && !l.trim().startsWith('//'));
}

describe('goal lifecycle', () => {
  // [from, to, allowed] — the moves Polly's writers make, and ones no writer may make.
  const cases: [GoalStatus, GoalStatus, boolean][] = [
    ['open', 'planning', true], // the goal's LLM brain took its first turn
    ['planning', 'waiting_approval', true], // a plan for it was admitted
    ['waiting_approval', 'running', true], // a human approved it
    ['planning', 'failed', true], // polly run: the plan was refused
    ['open', 'failed', true], // the LLM brain's session failed before any plan
    ['running', 'done', true], // every task ready, merged or done
    ['running', 'failed', true], // a task failed, or the schedule diverged
    ['running', 'waiting_approval', true], // the LLM brain proposed another plan
    ['done', 'running', true], // polly resume: its PRs' waiting events
    ['failed', 'running', true], // a pending plan of it approved after all
    ['done', 'waiting_approval', true], // the LLM brain's follow-up plan admitted
    ['running', 'open', false],
    ['planning', 'open', false],
    ['waiting_approval', 'planning', false],
    ['done', 'failed', false],
    ['failed', 'done', false],
    ['done', 'planning', false],
  ];
  it.each(cases)('%s → %s allowed: %s', (from, to, allowed) => {
    expect(canTransitionGoal(from, to)).toBe(allowed);
    const g = { id: 'g1', status: from };
    if (allowed) {
      expect(transitionGoal(g, to)).toBe(from);
      expect(g.status).toBe(to);
      return;
    }
    let caught: unknown;
    try {
      transitionGoal(g, to);
    } catch (error) {
      caught = error;
    }
    expect(isPollyError(caught) && caught.code).toBe('internal');
    expect((caught as Error).message).toContain(`goal g1 cannot move from "${from}" to "${to}"`);
    expect(g.status).toBe(from);
  });

  it('every status has a row, staying is always allowed, and nothing goes back to open', () => {
    for (const s of GOAL_STATUSES) {
      expect(GOAL_TRANSITIONS[s]).toBeDefined();
      expect(canTransitionGoal(s, s)).toBe(true);
      if (s !== 'open') expect(canTransitionGoal(s, 'open')).toBe(false);
    }
  });

  it('endGoal moves the goal and journals goal.done with what the writer knows', () => {
    const emitted: Array<[string, Record<string, unknown>]> = [];
    const g = { id: 'g2', status: 'running' as GoalStatus };
    endGoal(g, 'failed', { emit: (kind, data) => void emitted.push([kind, data]) }, { reason: 'plan refused' });
    expect(g.status).toBe('failed');
    expect(emitted).toEqual([['goal.done', { goalId: 'g2', status: 'failed', reason: 'plan refused' }]]);
    expect(() => endGoal(g, 'done', { emit: () => {} })).toThrow(/goal g2 cannot move from "failed" to "done"/);
  });

  it('no file in brain/ but the lifecycle writes a goal status (createGoal writes the first one)', () => {
    const writers = tsFiles(join(ROOT, 'brain'))
      .map((f) => ({ file: relative(ROOT, f), writes: goalStatusWrites(readFileSync(f, 'utf8')) }))
      .filter((w) => w.writes.length > 0)
      .map((w) => w.file);
    expect(writers).toEqual(['brain/registry/goal-lifecycle.ts']);
    // The scan bites: each spelling of a direct write is found.
    expect(goalStatusWrites("goal.status = 'failed';\ndraft.goals[goal.id]!.status = 'failed';\ng.status = x;\nif (goal.status === 'open') f();")).toHaveLength(3);
  });
});
