/**
 * The compiled CLI as a user without model keys runs it (`polly try`, the scripted model): the
 * scrubbed git test environment with every `*API_KEY*`, `*BASE_URL*` and `*_TOKEN` variable removed,
 * so nothing reaches a real model or forge by accident.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gitTestEnv } from './git-repo.js';

const CLI = fileURLToPath(new URL('../../dist/brain/cli.js', import.meta.url));
const run = promisify(execFile);

/** {@link gitTestEnv} without model keys, base URLs or tokens. */
export function keylessEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = gitTestEnv();
  for (const k of Object.keys(env)) if (/API_KEY|BASE_URL|_TOKEN$/.test(k)) delete env[k];
  return env;
}

/** One `polly` run's exit code (0 on success) and output. */
export type PollyOut = { code: number; stdout: string; stderr: string };

/**
 * `polly <args>` in `cwd` with exactly `env` (not merged with the test env: pass {@link keylessEnv}
 * or a copy of it), without blocking the event loop; killed after 300 s.
 */
export async function polly(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<PollyOut> {
  return run(process.execPath, [CLI, ...args], { cwd, env, timeout: 300_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}
