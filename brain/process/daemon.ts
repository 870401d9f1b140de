/**
 * The Brain as a background process: `polly goal` and `polly run` start `polly brain` detached
 * when no live Brain owns the repository, with its output in `.polly/brain.log`.
 */
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { cliPath } from '../core/install-paths.js';
import type { RegistryStore } from '../registry/registry-store.js';

/**
 * Start `polly brain --exit-when-idle` detached (its log in `.polly/brain.log`) unless a live Brain
 * owns the repository. Returns the pid of the Brain that runs.
 */
export async function ensureBrain(
  store: RegistryStore,
  repoRoot: string,
  pollyDir: string,
  env: NodeJS.ProcessEnv,
  extraArgs: string[] = [],
): Promise<{ pid: number; started: boolean }> {
  const reg = await store.read();
  if (reg.brain && pidAlive(reg.brain.pid)) return { pid: reg.brain.pid, started: false };
  const log = openSync(join(pollyDir, 'brain.log'), 'a');
  const child = spawn(process.execPath, [cliPath(), 'brain', '--exit-when-idle', ...extraArgs], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  return { pid: child.pid ?? -1, started: true };
}
