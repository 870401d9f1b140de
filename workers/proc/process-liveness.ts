/**
 * Whether a process is alive: exists and is not a zombie (a zombie answers `kill(pid, 0)` until its
 * parent reaps it, so `/proc/<pid>/stat` is read where there is one).
 */
import { existsSync, readFileSync } from 'node:fs';

/** True when `pid` names a live (non-zombie) process. */
export function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return !existsSync('/proc/self/stat');
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}
