/**
 * `polly try PLAN.yaml --script SCRIPT.yaml [--yes] [--json]`: run a plan on your own repository
 * with the real agent CLIs answered by Polly's scripted model server — no API key, no model cost.
 *
 * For the length of the run it starts the scripted model server (scripts/scripted-model/server.ts)
 * on a loopback port, points `.polly/config.yaml`'s workers at it (the same edit `npm run demo`
 * makes, scripts/scripted-model/configure.ts), and runs `polly run PLAN.yaml` with the model
 * endpoints and placeholder keys in the environment. Afterwards it waits for the Brain it started
 * to go idle (ending it after a grace period, so no Brain keeps the scripted endpoints) and puts
 * config.yaml back byte for byte. The script format: README "Try it without API keys: polly try" and
 * `schemas/model-script.schema.json`.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseCommandArgs } from './args.js';
import type { Command } from './command.js';
import { command as runCommand } from './run.js';
import { openRepoContext } from './repo-context.js';
import { parsePlanFile } from '../plan/plan-schema.js';
import { PollyError } from '../core/errors.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { loadModelScript, type ModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer } from '../../scripts/scripted-model/server.js';

/** How long the Brain `polly try` started may take to go idle after the run before it is ended, ms. */
export const BRAIN_IDLE_GRACE_MS = 20_000;

export const command: Command = {
  summary: 'run a plan with the real agent CLIs against a scripted model (no API key)',
  usage: `Usage: polly try PLAN.yaml --script SCRIPT.yaml [--yes] [--json]

Run PLAN.yaml exactly as "polly run" does (model check, plan gate, worktrees, the real claude,
codex and pi CLIs, acceptance checks, draft PRs, review), but every model answer comes from
SCRIPT.yaml through Polly's scripted model server on 127.0.0.1: no API key, no cost. Use it to see
what Polly does on your own repository before you spend tokens.

For the run, .polly/config.yaml points the workers at the server; it is restored afterwards.
The script format is in the README ("Try it without API keys: polly try") and its JSON Schema is
schemas/model-script.schema.json in the package.

  --script FILE  the model script (YAML): sessions matched on role/task, one turn per prompt
  --yes          approve the plan if it is admitted
  --json         print polly run's JSON summary

Exit codes: as polly run (0 every task ready; 1 refused, rejected or a task failed; 2 bad input).`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('try', argv, { script: { type: 'string' }, yes: { type: 'boolean' }, json: { type: 'boolean' } }, 1);
    const plan = positionals[0];
    if (!plan) throw new PollyError('bad_input', 'polly try: which plan? Give the path of a plan file, e.g. polly try plan.yaml --script script.yaml.');
    if (!values.script) throw new PollyError('bad_input', 'polly try: which model script? Give --script FILE (its format: README "Try it without API keys: polly try").');
    // Every input is checked before anything is started or written (the server, config.yaml).
    const planPath = resolve(io.cwd, plan);
    let planText: string;
    try {
      planText = readFileSync(planPath, 'utf8');
    } catch (error) {
      throw new PollyError(
        'bad_input',
        `polly try: cannot read the plan file ${planPath}: ${(error as Error).message}. Give the path of a plan file (YAML; README "The plan format").`,
        {
          cause: error,
          details: { file: planPath },
        },
      );
    }
    parsePlanFile(planText, planPath);
    const scriptPath = resolve(io.cwd, values.script);
    let script: ModelScript;
    try {
      script = loadModelScript(scriptPath);
    } catch (error) {
      throw new PollyError(
        'bad_input',
        `polly try: the model script ${scriptPath} cannot be used: ${(error as Error).message}. Fix it (schema: schemas/model-script.schema.json).`,
        { cause: error, details: { file: scriptPath } },
      );
    }
    const ctx = await openRepoContext(io.cwd, io.env);
    const running = (await ctx.store.read()).brain;
    if (running && pidAlive(running.pid)) {
      throw new PollyError(
        'already_running',
        `polly try: a Brain (pid ${running.pid}) already runs for ${ctx.repo.root} with your real models; wait until it is idle (polly status), then try again.`,
        { details: { pid: running.pid } },
      );
    }
    const configPath = resolve(ctx.repo.pollyDir, 'config.yaml');
    const original = existsSync(configPath) ? readFileSync(configPath, 'utf8') : null;
    if (original === null) writeFileSync(configPath, '');
    const server = await startScriptedModelServer({ script });
    io.stderr.write(`[polly] try: scripted model server on ${server.url} (${script.sessions.length} session(s) from ${scriptPath}); no API key is used\n`);
    if (process.getuid?.() === 0 && !ctx.config.workers['claude-code'].allow_root_sandbox) {
      // useScriptedModels sets the key as root (the scripted run is a throwaway); say so, since the
      // user's own config said no (Claude Code refuses bypassPermissions as root without IS_SANDBOX=1).
      io.stderr.write(
        '[polly] try: running as root: for this run only, workers.claude-code.allow_root_sandbox is true (Claude Code gets IS_SANDBOX=1); Polly\'s own sandbox still confines every worker. Your config is restored afterwards; "polly run" as root will refuse Claude workers until you set the key yourself.\n',
      );
    }
    try {
      const modelEnv = useScriptedModels(ctx.repo.root, server.url);
      const args = [plan, ...(values.yes ? ['--yes'] : []), ...(values.json ? ['--json'] : [])];
      return await runCommand.run(args, { ...io, env: { ...io.env, ...modelEnv } });
    } finally {
      const brain = (await ctx.store.read()).brain;
      const deadline = Date.now() + BRAIN_IDLE_GRACE_MS;
      while (brain && pidAlive(brain.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (brain && pidAlive(brain.pid)) process.kill(brain.pid, 'SIGTERM');
      await server.close();
      if (original === null) rmSync(configPath, { force: true });
      else writeFileSync(configPath, original);
      io.stderr.write(`[polly] try: ${configPath} restored\n`);
    }
  },
};
