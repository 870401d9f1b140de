/**
 * Ending what a test's Brain left running. `polly run`/`polly goal`/`polly try` start
 * `polly brain --exit-when-idle` detached (brain/process/daemon.ts: it must outlive the command),
 * and the Brain starts each worker as a group leader of its own. A test that fails or times out
 * mid-run would leave the Brain and its claude/codex/pi children loading the machine: files that
 * start Brains track their repositories and call {@link stopTrackedBrains} in `afterAll`/`afterEach`.
 *
 * Only processes of a tracked repository are signalled: a pid from the registry must still have
 * its working directory inside that repository (/proc/<pid>/cwd), so a reused pid is left alone.
 * (A SIGKILLed vitest runs no hook: such leftovers still exit when idle, or need killing by hand.)
 */
import { existsSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { killTree } from '../../workers/proc/kill.js';

const tracked = new Set<string>();

/** Remember `repo` (a repository a Brain may run in; it may not exist yet) for {@link stopTrackedBrains}. */
export function trackBrains(repo: string): void {
  tracked.add(existsSync(repo) ? realpathSync(repo) : resolve(repo));
}

/** True when process `pid` runs with its working directory inside `repo`. */
function runsIn(pid: number, repo: string): boolean {
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    return cwd === repo || cwd.startsWith(`${repo}/`);
  } catch {
    return false;
  }
}

/**
 * Stop the Brain and the workers that the registry of `repo` records (each tree: group and
 * descendants, SIGTERM then SIGKILL after 500 ms). Returns the pids it stopped (none when all had exited).
 */
export async function stopRepoBrain(repo: string): Promise<number[]> {
  const path = join(repo, '.polly', 'registry.json');
  if (!existsSync(path)) return [];
  let reg: { brain?: { pid: number } | null; workers?: Record<string, { pid?: number | null; pgid?: number | null }> };
  try {
    reg = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return [];
  }
  // The keyless session's detached scripted model server (brain/process/scripted-model-daemon.ts) too.
  let server: number | undefined;
  try {
    server = (JSON.parse(readFileSync(join(repo, '.polly', 'scripted-model.json'), 'utf8')) as { pid?: number }).pid;
  } catch {
    server = undefined;
  }
  const pids = [reg.brain?.pid, ...Object.values(reg.workers ?? {}).map((w) => w.pgid ?? w.pid), server].filter((p): p is number => typeof p === 'number' && p > 0);
  const live = pids.filter((p) => runsIn(p, repo));
  await Promise.all(live.map((p) => killTree(p, 500)));
  return live;
}

/** {@link stopRepoBrain} for every tracked repository, then forget them. */
export async function stopTrackedBrains(): Promise<void> {
  const repos = [...tracked];
  tracked.clear();
  await Promise.all(repos.map((r) => stopRepoBrain(r)));
}
