// The e2e files' cleanup (test/helpers/brain-cleanup.ts): a Brain and its worker recorded in a
// tracked repository's registry are stopped with their process groups; a recorded pid that runs
// elsewhere (a reused pid) is left alone. Real processes.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopRepoBrain, stopTrackedBrains, trackBrains } from '../helpers/brain-cleanup.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';

const spawned: number[] = [];
afterAll(() => {
  for (const pid of spawned) if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
});

/** A detached `sleep`-like node process (a group leader) in `cwd`, with a child of its own in the group. */
function sleeper(cwd: string): number {
  const child = spawn(
    process.execPath,
    ['-e', "require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' }); setTimeout(() => {}, 60000)"],
    {
      cwd,
      detached: true,
      stdio: 'ignore',
    },
  );
  child.unref();
  spawned.push(child.pid!);
  return child.pid!;
}

describe('brain cleanup for tests', () => {
  it('stops the recorded Brain and worker trees of a tracked repository, and nothing that runs elsewhere', async () => {
    const repo = realpathSync(mkdtempSync(join(tmpdir(), 'polly-cleanup-')));
    mkdirSync(join(repo, '.polly'));
    mkdirSync(join(repo, '.worktrees', 't1'), { recursive: true });
    const brain = sleeper(repo);
    const worker = sleeper(join(repo, '.worktrees', 't1'));
    const elsewhere = sleeper(tmpdir());
    writeFileSync(
      join(repo, '.polly', 'registry.json'),
      JSON.stringify({ brain: { pid: brain }, workers: { w1: { pid: worker, pgid: worker }, w2: { pid: elsewhere, pgid: elsewhere } } }),
    );
    trackBrains(repo);
    await stopTrackedBrains();
    for (let i = 0; i < 50 && (pidAlive(brain) || pidAlive(worker)); i++) await new Promise((r) => setTimeout(r, 50));
    expect(pidAlive(brain)).toBe(false);
    expect(pidAlive(worker)).toBe(false);
    expect(pidAlive(elsewhere)).toBe(true);
    expect(await stopRepoBrain(repo)).toEqual([]);
  });
});
