/**
 * The host's unix sockets bound to a path: the ones a sandbox that shows the host's root
 * read-only would let a worker connect to (connect(2) needs no write access), so
 * ./sandbox-spec.ts `bwrapArgs` covers each one it would show with `/dev/null`.
 *
 * Source: `/proc/net/unix` (proc(5), "/proc/net/unix"; columns `Num RefCount Protocol Flags Type
 * St Inode Path`): one line per unix socket of Polly's network namespace; `Path` is the address a
 * socket was bound to, `@name` for an abstract one (those stay unreachable: every sandbox has its
 * own network namespace), empty for an unbound one. Limits, said in docs/threat-model.md: a socket
 * bound in another network namespace (a container's) is not listed; a socket file renamed or
 * linked after its bind is listed under its first name; a socket bound after the sandbox started
 * is not covered.
 */
import { lstatSync, readFileSync, realpathSync } from 'node:fs';

/**
 * The `Path` column of every path-bound socket in a `/proc/net/unix` text (listening, datagram
 * and connected ones alike: a bound datagram socket takes `sendto` too), deduplicated, in order.
 * Abstract (`@…`) and unbound sockets are left out. Pure.
 */
export function parseProcNetUnix(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n').slice(1)) {
    // `Num: RefCount Protocol Flags Type St Inode Path`: the path is everything after the 7th field (it may hold spaces).
    const m = /^\s*\S+:\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s(.*)$/.exec(line);
    const path = m?.[1]?.trim();
    if (path?.startsWith('/')) out.add(path);
  }
  return [...out];
}

/**
 * The canonical paths (realpath) of the path-bound sockets listed in `/proc/net/unix` whose file
 * is still a socket (a socket removed after its bind is gone; one replaced by a regular file is
 * not one). Reads `/proc/net/unix` and stats each path; an unreadable `/proc/net/unix` gives none.
 * `procNetUnix`: the file to read (tests).
 */
export function hostSocketPaths(procNetUnix = '/proc/net/unix'): string[] {
  let text: string;
  try {
    text = readFileSync(procNetUnix, 'utf8');
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const path of parseProcNetUnix(text)) {
    try {
      if (!lstatSync(path).isSocket()) continue;
      out.add(realpathSync.native(path));
    } catch {
      // gone, or not reachable by Polly either
    }
  }
  return [...out];
}
