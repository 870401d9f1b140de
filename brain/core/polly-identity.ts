/**
 * Who one Polly is: one clone of a repository on one machine. The same identity keys everything
 * that belongs to that clone where clones meet: its work claims and its runs' instance area on a
 * shared run store (brain/registry/run-storage.ts), and its worktrees, agent state and locks on a
 * remote worker host (workers/hosts/host-turn.ts), so two clones of one origin never share them.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Who this Polly is: `label` = `<hostname>:<repository root>` (for people), `id` = the first 16
 * hex digits of its sha256 (the owner of its work claims, part of its runs' instance area, and its
 * key on remote hosts). Stable across the Brain's restarts and a lost registry; two clones differ
 * by path or machine. Pure but for the hostname.
 */
export function pollyIdentity(repoRoot: string, host: string = hostname()): { id: string; label: string } {
  const label = `${host}:${repoRoot}`;
  return { id: createHash('sha256').update(label).digest('hex').slice(0, 16), label };
}
