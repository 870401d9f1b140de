/**
 * The keyless session shared by `polly try`, `polly retry --script` and `polly resume --script`:
 * for the length of one command, Polly's scripted model server answers every model call and
 * `.polly/config.yaml` points the workers at it; afterwards the config is put back byte for byte.
 *
 * The server is the repository's detached one (brain/process/scripted-model-daemon.ts): it outlives
 * the command while the Brain or a worker may still call it (after Ctrl-C the workers finish their
 * turn, as under `polly run`), and a later `--script` command reuses it, so an adopted worker keeps
 * its endpoint. The script format: docs/guide.md "Try it without API keys: polly try".
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CommandIO } from './command.js';
import { openRepoContext } from '../registry/repo-context.js';
import { PollyError } from '../core/errors.js';
import { attachScriptedModelServer, detachScriptedModelServer } from '../process/scripted-model-daemon.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { loadModelScript, type ModelScript } from '../../scripts/scripted-model/script.js';

/** How long the Brain the command started may take to go idle after it before it is ended, ms. */
export const BRAIN_IDLE_GRACE_MS = 20_000;

/**
 * Run `inner` (the command proper: `polly run`, `polly retry`, `polly resume`) with the scripted
 * models: the script is checked, the repository's server attached (started when none runs), the
 * config edited, and `inner` gets the model endpoints and placeholder keys in its environment.
 * Afterwards: the Brain it started is given {@link BRAIN_IDLE_GRACE_MS} to go idle, then SIGTERM;
 * the config is restored; the server is detached (it says on stderr when workers still hold it).
 * @param name       the command's name for messages (`try`, `retry`, `resume`).
 * @param scriptArg  `--script`'s value, relative to `io.cwd`.
 * @returns `inner`'s exit code.
 * @throws PollyError `bad_input` for a script that cannot be used; `already_running` when a Brain
 *   already runs for the repository (it has the user's real models).
 */
export async function withScriptedModels(name: string, scriptArg: string, io: CommandIO, inner: (io: CommandIO) => Promise<number>): Promise<number> {
  const scriptPath = resolve(io.cwd, scriptArg);
  let script: ModelScript;
  try {
    script = loadModelScript(scriptPath);
  } catch (error) {
    throw new PollyError(
      'bad_input',
      `polly ${name}: the model script ${scriptPath} cannot be used: ${(error as Error).message}. Fix it (schema: schemas/model-script.schema.json).`,
      { cause: error, details: { file: scriptPath } },
    );
  }
  const ctx = await openRepoContext(io.cwd, io.env);
  const running = (await ctx.store.read()).brain;
  if (running && pidAlive(running.pid)) {
    throw new PollyError(
      'already_running',
      `polly ${name}: a Brain (pid ${running.pid}) already runs for ${ctx.repo.root} with your real models; wait until it is idle (polly status), then try again.`,
      { details: { pid: running.pid } },
    );
  }
  const configPath = resolve(ctx.repo.pollyDir, 'config.yaml');
  const original = existsSync(configPath) ? readFileSync(configPath, 'utf8') : null;
  const { record, started } = await attachScriptedModelServer({ pollyDir: ctx.repo.pollyDir, repoRoot: ctx.repo.root, script: scriptPath, holder: process.pid });
  io.stderr.write(
    `[polly] ${name}: scripted model server on ${record.url} (pid ${record.pid}${started ? '' : ', already running'}; ${script.sessions.length} session(s) from ${scriptPath}); no API key is used\n`,
  );
  if (process.getuid?.() === 0 && !ctx.config.workers['claude-code'].allow_root_sandbox) {
    // useScriptedModels sets the key as root (the scripted run is a throwaway); say so, since the
    // user's own config said no (Claude Code refuses bypassPermissions as root without IS_SANDBOX=1).
    io.stderr.write(
      `[polly] ${name}: running as root: for this run only, workers.claude-code.allow_root_sandbox is true (Claude Code gets IS_SANDBOX=1); Polly's own sandbox still confines every worker. Your config is restored afterwards; "polly run" as root will refuse Claude workers until you set the key yourself.\n`,
    );
  }
  let code: number | null = null;
  try {
    if (original === null) writeFileSync(configPath, '');
    const modelEnv = useScriptedModels(ctx.repo.root, record.url);
    code = await inner({ ...io, env: { ...io.env, ...modelEnv } });
    return code;
  } finally {
    const brain = (await ctx.store.read().catch(() => null))?.brain;
    const deadline = Date.now() + BRAIN_IDLE_GRACE_MS;
    while (brain && pidAlive(brain.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (brain && pidAlive(brain.pid)) process.kill(brain.pid, 'SIGTERM');
    if (original === null) rmSync(configPath, { force: true });
    else writeFileSync(configPath, original);
    io.stderr.write(`[polly] ${name}: ${configPath} restored\n`);
    const holders = (await detachScriptedModelServer(record, process.pid)).filter((p) => p !== process.pid);
    if (holders.length > 0)
      io.stderr.write(
        `[polly] ${name}: the scripted model server (pid ${record.pid}, ${record.url}) stays up for the workers still finishing their turn (pids ${holders.join(', ')}) and stops by itself once they have; go on with: polly resume --script ${scriptArg}\n`,
      );
    if (code !== 0)
      io.stderr.write(
        `[polly] ${name}: to go on without API keys, give the same --script: polly retry TASK-ID --script ${scriptArg} (a task that stopped), polly resume --script ${scriptArg} (after Ctrl-C)\n`,
      );
  }
}
