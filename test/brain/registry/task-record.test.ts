/**
 * brain/registry/task-record.ts `recordChecks` (issue 32 item 9): every acceptance run of a task is
 * kept in `checkRuns` (oldest first, the last CHECK_RUNS_KEPT, outputs cut to their tail), not only
 * the last one in `checks`.
 */
import { describe, expect, it } from 'vitest';
import { CHECK_RUN_OUTPUT_BYTES, CHECK_RUNS_KEPT, type CommandResult } from '../../../brain/registry/registry-schema.js';
import { newTaskRecord, recordChecks } from '../../../brain/registry/task-record.js';

const task = () =>
  newTaskRecord(
    {
      id: 'p1-a',
      planId: 'p1',
      title: 'A',
      purpose: 'implement',
      worker: 'pi',
      model: null,
      reviewer: null,
      prompt: 'Do A.',
      acceptance: { commands: ['npm test'], criteria: [] },
      dependsOn: [],
    },
    '2025-01-01T00:00:00.000Z',
  );
const result = (exitCode: number | null, output = `exit ${exitCode}\n`, timedOut = false): CommandResult => ({ command: 'npm test', exitCode, timedOut, durationMs: 1200, output });

describe('recordChecks', () => {
  it('keeps every run, oldest first, with its attempt, fix round and verdict; checks is the last run', () => {
    const t = task();
    t.attempts = 1;
    recordChecks(t, [result(1)], '2025-01-01T00:01:00.000Z');
    t.attempts = 2;
    recordChecks(t, [result(0), result(null, 'killed\n', true)], '2025-01-01T00:02:00.000Z');
    t.attempts = 3;
    t.fixRound = { round: 1 } as never;
    recordChecks(t, [result(0)], '2025-01-01T00:03:00.000Z');
    expect(t.checks).toEqual([result(0)]);
    // A retry runs the task under its retry plan, attempts from 1 again: the earlier runs stay.
    t.planId = 'p2';
    t.attempts = 1;
    t.fixRound = null;
    recordChecks(t, [result(1)], '2025-01-01T00:04:00.000Z');
    expect(t.checks).toEqual([result(1)]);
    expect(t.checkRuns!.map((r) => [r.at, r.planId, r.attempt, r.fixRound, r.green, r.results.map((x) => x.exitCode)])).toEqual([
      ['2025-01-01T00:01:00.000Z', 'p1', 1, null, false, [1]],
      ['2025-01-01T00:02:00.000Z', 'p1', 2, null, false, [0, null]],
      ['2025-01-01T00:03:00.000Z', 'p1', 3, 1, true, [0]],
      ['2025-01-01T00:04:00.000Z', 'p2', 1, null, false, [1]],
    ]);
  });

  it('an empty run is not green', () => {
    const t = task();
    recordChecks(t, [], '2025-01-01T00:01:00.000Z');
    expect(t.checkRuns![0]!.green).toBe(false);
  });

  it(`keeps the last ${CHECK_RUNS_KEPT} runs, each output cut to its last ${CHECK_RUN_OUTPUT_BYTES} characters; checks keeps the whole last output`, () => {
    const t = task();
    const long = `${'x'.repeat(10_000)}THE END\n`;
    for (let i = 1; i <= CHECK_RUNS_KEPT + 5; i++) {
      t.attempts = i;
      recordChecks(t, [result(i === CHECK_RUNS_KEPT + 5 ? 0 : 1, long)], `2025-01-01T00:00:${String(i).padStart(2, '0')}.000Z`);
    }
    expect(t.checkRuns).toHaveLength(CHECK_RUNS_KEPT);
    expect(t.checkRuns![0]!.attempt).toBe(6);
    expect(t.checkRuns!.at(-1)!.attempt).toBe(CHECK_RUNS_KEPT + 5);
    for (const run of t.checkRuns!) {
      expect(run.results[0]!.output).toHaveLength(CHECK_RUN_OUTPUT_BYTES);
      expect(run.results[0]!.output.endsWith('THE END\n')).toBe(true);
    }
    expect(t.checks[0]!.output).toBe(long);
  });
});
