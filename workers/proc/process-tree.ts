/**
 * The process tree, read from Linux's /proc (proc(5): `/proc/<pid>/stat`, field 4 is the parent
 * pid, after the parenthesised command name): parents, descendants, and whether a process group
 * has members left. Where there is no /proc the tree is empty.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** `pid → ppid` of every process, from /proc (empty where there is no /proc). */
export function parentTable(): Map<number, number> {
  const table = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return table;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), Number(fields[1]));
    } catch {
      /* exited meanwhile */
    }
  }
  return table;
}

/** Every descendant of `pid` (children, grandchildren, …), by parent links in /proc; breadth first. */
export function descendantsOf(pid: number): number[] {
  const table = parentTable();
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of table) {
      if (ppid === parent && !out.includes(child)) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

/**
 * Whether process group `pgid` has a live member left: `kill(-pgid, 0)` answers (EPERM counts as
 * alive), and, where there is /proc, one member is not a zombie. A zombie answers `kill` until
 * its parent reaps it, and where nothing reaps orphans (a container whose pid 1 is not an init)
 * that is never: a wait for the group to end would run to its bound.
 */
export function groupAlive(pgid: number): boolean {
  if (!pgid || pgid <= 0) return false;
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  let sawMember = false;
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // After "(comm) ": state, ppid, pgrp, ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      sawMember = true;
      if (fields[0] !== 'Z') return true;
    } catch {
      /* exited meanwhile */
    }
  }
  // kill() saw a member that /proc does not show (another pid namespace's view): trust kill().
  return !sawMember;
}
