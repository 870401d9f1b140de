/**
 * Cleanup that reaches a host: when Polly removes a task's worktree here (its PR merged, the task
 * cancelled), this clone's worktree of the task on its host goes too (`polly host remove`), its
 * files first kept under `refs/polly/backup/<task>/<time>` in the clone's repository there
 * (workers/hosts/host-turn.ts `removeHostWorktree`). Another clone's task of the same id on that
 * host is left alone: the host keys them by clone (brain/core/polly-identity.ts).
 */
import { pollyIdentity } from '../../brain/core/polly-identity.js';
import { buildIdentity } from '../../brain/core/build-identity.js';
import { configuredHosts, type WorkerHostsOptions } from './host-config.js';
import { remotePollyCommand, runOnHost, sshContext, sshFailure } from './ssh.js';
import { repoKeyFor } from './worktree-transfer.js';
import { createGitRunner } from '../git/git.js';

/** What removing a task's worktree on its host did. */
export type HostRemoval =
  | {
      host: string;
      removed: boolean;
      backupRef: string | null;
      /** The backup ref in the host's mirror of the task's worktree of the layout before clones were keyed, when one was removed. */
      legacyBackupRef?: string | null;
      /** Why that old worktree was kept (a turn still runs in it). */
      legacyKept?: string | null;
    }
  | { host: string; error: string };

/** Removes tasks' worktrees on their hosts. */
export interface HostCleanup {
  /** Remove task `taskId`'s worktree on `host` (a `workers.hosts` name). Never throws: a failure is `{error}`. */
  remove(host: string, taskId: string): Promise<HostRemoval>;
}

/** The cleanup for `repoRoot` (this clone) over the hosts of `workers` (a host no longer configured is an error naming it). */
export function createHostCleanup(repoRoot: string, workers: WorkerHostsOptions): HostCleanup {
  const hosts = configuredHosts(workers);
  const clone = pollyIdentity(repoRoot).id;
  let key: Promise<string> | null = null;
  return {
    async remove(name, taskId) {
      const host = hosts.find((h) => h.name === name);
      if (!host)
        return { host: name, error: `host ${name} is no longer in workers.hosts: remove ${taskId}'s worktree there by hand (its dir/worktrees/<repo>/${clone}/${taskId})` };
      try {
        const repoKey = await (key ??= repoKeyFor(createGitRunner(), repoRoot));
        const r = await runOnHost(
          host,
          sshContext(workers),
          remotePollyCommand(host, ['remove', '--dir', host.dir, '--repo', repoKey, '--clone', clone, '--task', taskId, '--expect-build', buildIdentity().build]),
          { timeoutMs: 120_000 },
        );
        if (r.code !== 0) return { host: name, error: `polly host remove on ${name} failed: ${sshFailure(r)}` };
        const out = JSON.parse(r.stdout) as { removed: boolean; backupRef: string | null; legacyBackupRef: string | null; legacyKept: string | null };
        return { host: name, removed: out.removed, backupRef: out.backupRef, legacyBackupRef: out.legacyBackupRef, legacyKept: out.legacyKept };
      } catch (error) {
        return { host: name, error: (error as Error).message };
      }
    },
  };
}
