// Spawning the compiled CLI (`node dist/brain/cli.js`) as a user would, in a given directory.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { gitTestEnv } from './git-repo.js';

export const CLI = fileURLToPath(new URL('../../dist/brain/cli.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `polly <args>` in `cwd` with the scrubbed git test environment. */
export function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): CliRun {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, env: { ...gitTestEnv(), ...env }, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
