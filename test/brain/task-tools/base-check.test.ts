// The base check's cache (brain/task-tools/base-check.ts): one run per (base commit, command), shared
// by concurrent tasks, reused after a restart (a new read of the file), stopped at the first red
// command that is not known-red, and not run on a worktree that no longer shows the base.
import { mkdtempSync, readdirSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseCheckFile, baseRedReason, blockingBaseRed, checkBase, readBaseCheck } from '../../../brain/task-tools/base-check.js';
import type { CommandResult } from '../../../workers/proc/shell-command.js';

const BASE = 'a'.repeat(40);

function runner(exitCodes: Record<string, number>) {
  const calls: string[] = [];
  const run = async (command: string): Promise<CommandResult> => {
    calls.push(command);
    await new Promise((r) => setTimeout(r, 20));
    return { command, exitCode: exitCodes[command] ?? 0, timedOut: false, output: `line 1\n${command} said ${exitCodes[command] ?? 0}\n`, durationMs: 20 } as CommandResult;
  };
  return { calls, run };
}

/** The tools' clock in these tests: a fixed time no machine clock shows. */
const AT = new Date('2031-05-06T07:08:09.000Z');

describe('base check cache', () => {
  it('runs each (base commit, command) once for concurrent tasks and after a restart, and caches per base commit', async () => {
    const repoRoot = realpathSync(mkdtempSync(join(tmpdir(), 'polly-base-check-')));
    const r = runner({ 'npm test': 1 });
    const input = { repoRoot, baseCommit: BASE, commands: ['npm run lint', 'npm test'], knownRed: [], canRun: true, run: r.run, now: () => AT };
    const [a, b] = await Promise.all([checkBase(input), checkBase(input)]);
    expect(r.calls).toEqual(['npm run lint', 'npm test']);
    expect(a.ran + b.ran).toBe(2);
    // Each result's time is the tools' clock, not the machine's.
    for (const res of [...a.results, ...b.results]) expect(res.at).toBe(AT.toISOString());
    expect(a.results.map((x) => [x.command, x.exitCode])).toEqual([
      ['npm run lint', 0],
      ['npm test', 1],
    ]);
    expect(b.results).toEqual(a.results);
    // A restart reads the files: nothing runs again.
    const again = await checkBase(input);
    expect(again.ran).toBe(0);
    expect(r.calls).toHaveLength(2);
    expect(readBaseCheck(repoRoot, BASE, 'npm test')).toMatchObject({ v: 1, exitCode: 1, outputTail: 'line 1\nnpm test said 1' });
    expect(readdirSync(join(repoRoot, '.polly', 'base-checks'))).toHaveLength(2);
    // Another base commit is another key.
    expect(baseCheckFile(repoRoot, 'b'.repeat(40), 'npm test')).not.toBe(baseCheckFile(repoRoot, BASE, 'npm test'));
    await checkBase({ ...input, baseCommit: 'b'.repeat(40) });
    expect(r.calls).toHaveLength(4);
    // A retry of a base_red task runs a cached red command again, not a cached green one.
    await checkBase({ ...input, recheckRed: true });
    expect(r.calls.slice(4)).toEqual(['npm test']);
  });

  it('stops at the first red command unless known-red; runs nothing uncached when the worktree left the base', async () => {
    const repoRoot = realpathSync(mkdtempSync(join(tmpdir(), 'polly-base-check-')));
    const r = runner({ lint: 2, test: 1 });
    const stopped = await checkBase({ repoRoot, baseCommit: BASE, commands: ['lint', 'test'], knownRed: [], canRun: true, run: r.run, now: () => AT });
    expect(stopped.results.map((x) => x.command)).toEqual(['lint']);
    expect(blockingBaseRed(stopped.results, [])?.command).toBe('lint');
    const known = await checkBase({ repoRoot, baseCommit: BASE, commands: ['lint', 'test'], knownRed: ['lint'], canRun: true, run: r.run, now: () => AT });
    expect(known.results.map((x) => [x.command, x.exitCode])).toEqual([
      ['lint', 2],
      ['test', 1],
    ]);
    expect(blockingBaseRed(known.results, ['lint'])?.command).toBe('test');
    expect(blockingBaseRed(known.results, ['lint', 'test'])).toBeNull();
    const r2 = runner({});
    const left = await checkBase({ repoRoot, baseCommit: BASE, commands: ['lint', 'other'], knownRed: ['lint'], canRun: false, run: r2.run, now: () => AT });
    expect(r2.calls).toEqual([]);
    expect(left.results.map((x) => x.command)).toEqual(['lint']);
    const reason = baseRedReason('p1-t1', known.results[1]!, 'main');
    expect(reason.split('\n')[0]).toBe(
      'base red: acceptance command "test" exited 1 on the base (main at aaaaaaaaaaaa) before any agent change; the agent was not started and no attempt was spent.',
    );
    expect(reason).toContain('test said 1');
    expect(reason.split('\n').at(-1)).toMatch(/^Fix: make "test" pass on the base \(main\), then polly retry p1-t1; or, .*acceptance\.known_red/);
  });
});
