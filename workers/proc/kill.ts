/**
 * Signalling processes, in one place (as execa keeps it in `lib/terminate/`): a process group, a
 * single pid, and a whole tree with a grace period. Polly starts every child it may have to stop
 * as a process-group leader (`detached: true`), so "stop it" means signalling `-pid`, which reaches
 * whatever the command started in its group (kill(2): a negative pid names a process group).
 * A process or group that is already gone is not an error: these return whether the signal was sent.
 */
import { pidAlive } from './process-liveness.js';
import { descendantsOf, groupAlive } from './process-tree.js';

/** Send `signal` to process group `pgid`. False when there is no such group (or no pgid). */
export function signalGroup(pgid: number | null | undefined, signal: NodeJS.Signals): boolean {
  if (!pgid || pgid <= 0) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Send `signal` to the single process `pid`. False when it is gone (or no pid). */
export function signalPid(pid: number | null | undefined, signal: NodeJS.Signals): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Signal the group led by `pid`, or — when it leads no group (e.g. it was not started detached) — `pid` alone. */
export function signalGroupOrPid(pid: number | null | undefined, signal: NodeJS.Signals): boolean {
  return signalGroup(pid, signal) || signalPid(pid, signal);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Stop a process tree rooted at `rootPid`: its process group AND every descendant (a CLI may run
 * tool commands in process groups or sessions of their own, e.g. pi's bash tool), SIGTERM first so
 * it can clean up, SIGKILL after `graceMs` (ms) for whatever is left. Descendants are collected
 * before anything is signalled (once the root dies they are reparented and can no longer be traced
 * to it). Resolves once SIGKILL has been sent (or at once when nothing was alive).
 */
export async function killTree(rootPid: number | null, graceMs = 2000): Promise<void> {
  if (!rootPid || rootPid <= 0) return;
  const tree = descendantsOf(rootPid);
  const alive = (): boolean => groupAlive(rootPid) || tree.some((p) => pidAlive(p));
  if (!alive()) return;
  signalGroup(rootPid, 'SIGTERM');
  for (const p of tree) signalPid(p, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && alive()) await sleep(50);
  signalGroup(rootPid, 'SIGKILL');
  for (const p of tree) {
    signalPid(p, 'SIGKILL');
    signalGroup(p, 'SIGKILL');
  }
}
