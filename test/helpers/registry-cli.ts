// Spawning the compiled CLI (`node dist/brain/cli.js`) as a user would, in a given directory.
import { spawn, spawnSync } from 'node:child_process';
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

/**
 * `runCli` without blocking the test's event loop: for a CLI that talks to a server running in the
 * test process (the GitHub API simulator, the scripted model server), which `spawnSync` would
 * starve. `timeoutMs` (default 60 s) kills it with SIGTERM; then `code` is null and `stderr` ends
 * with a line saying so. Output is kept whole (a run's stdout can be MiBs).
 */
export function runCliAsync(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...gitTestEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const ended = code === null ? `\n[runCliAsync] polly ${args.join(' ')} ended by ${signal} (timeout ${timeoutMs} ms)` : '';
      resolve({ code, stdout, stderr: stderr + ended });
    });
  });
}
