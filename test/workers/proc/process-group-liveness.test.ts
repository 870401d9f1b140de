/**
 * groupAlive() judges a process group by its live members: a zombie member (an exited process
 * whose parent has not reaped it, as under a container's pid 1 that is not an init) answers
 * kill(-pgid, 0) but must not keep a wait for the group going.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { groupAlive } from '../../../workers/proc/process-tree.js';
import { pidAlive } from '../../../workers/proc/process-liveness.js';

const parents: number[] = [];
afterEach(() => {
  for (const pid of parents.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

/** A python parent that forks a child into its own process group; the child exits at once and is never reaped. */
async function zombieGroup(): Promise<number> {
  const parent = spawn('python3', ['-c', 'import os, sys, time\npid = os.fork()\nif pid == 0:\n    os.setpgid(0, 0)\n    os._exit(0)\nprint(pid, flush=True)\ntime.sleep(60)\n'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  parents.push(parent.pid!);
  const line = await new Promise<string>((resolve, reject) => {
    parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    parent.once('error', reject);
  });
  return Number(line);
}

describe('process group liveness', () => {
  it('a group whose only member is a zombie is not alive; a group with a live member is', async () => {
    const zombie = await zombieGroup();
    // Wait until the child has exited (it is then a zombie: /proc state Z).
    for (let i = 0; i < 100 && pidAlive(zombie); i++) await new Promise((r) => setTimeout(r, 20));
    expect(pidAlive(zombie)).toBe(false);
    expect(() => process.kill(-zombie, 0)).not.toThrow(); // kill() still sees the group
    expect(groupAlive(zombie)).toBe(false);

    const live = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    parents.push(live.pid!);
    expect(groupAlive(live.pid!)).toBe(true);
    live.kill('SIGKILL');
    await new Promise((r) => live.once('exit', r));
    expect(groupAlive(live.pid!)).toBe(false);
  });
});
