/**
 * `polly try PLAN.yaml --script SCRIPT.yaml [--yes] [--json]`: run a plan on your own repository
 * with the real agent CLIs answered by Polly's scripted model server — no API key, no model cost.
 *
 * It runs `polly run PLAN.yaml` inside the keyless session of ./scripted-models.ts: the
 * repository's detached scripted model server (brain/process/scripted-model-daemon.ts), the workers
 * pointed at it in `.polly/config.yaml` for the run (scripts/scripted-model/configure.ts), the
 * config put back byte for byte afterwards. A plan file run again goes through `polly run`'s
 * recognition (brain/process/resume.ts matchPlanFile): the same file resumes its plan, a changed one
 * is a new plan or is refused naming the difference. `polly retry --script` and `polly resume
 * --script` go on after a failure or Ctrl-C. The script format: docs/guide.md "Try it without API keys:
 * polly try" and `schemas/model-script.schema.json`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseCommandArgs } from './args.js';
import type { Command } from './command.js';
import { command as runCommand } from './run.js';
import { withScriptedModels } from './scripted-models.js';
import { parsePlanFile } from '../plan/plan-schema.js';
import { PollyError } from '../core/errors.js';

export const command: Command = {
  summary: 'run a plan with the real agent CLIs against a scripted model (no API key)',
  usage: `Usage: polly try PLAN.yaml --script SCRIPT.yaml [--yes] [--json]

Run PLAN.yaml exactly as "polly run" does (model check, plan gate, worktrees, the real claude,
codex and pi CLIs, acceptance checks, draft PRs, review), but every model answer comes from
SCRIPT.yaml through Polly's scripted model server on 127.0.0.1: no API key, no cost. Use it to see
what Polly does on your own repository before you spend tokens.

For the run, .polly/config.yaml points the workers at the server; it is restored afterwards.
The server is a process of its own (.polly/scripted-model.json): after Ctrl-C the workers finish
their turn against it, as under "polly run". Go on after a failure or Ctrl-C without keys with
"polly retry TASK-ID --script SCRIPT.yaml" or "polly resume --script SCRIPT.yaml".
The script format is in docs/guide.md ("Try it without API keys: polly try") and its JSON Schema is
schemas/model-script.schema.json in the package.

  --script FILE  the model script (YAML): sessions matched on role/task, one turn per prompt
  --yes          approve the plan if it is admitted
  --json         print polly run's JSON summary

Exit codes: as polly run (0 every task ready; 1 refused, rejected or a task failed; 2 bad input).`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('try', argv, { script: { type: 'string' }, yes: { type: 'boolean' }, json: { type: 'boolean' } }, 1);
    const plan = positionals[0];
    if (!plan) throw new PollyError('bad_input', 'polly try: which plan? Give the path of a plan file, e.g. polly try plan.yaml --script script.yaml.');
    if (!values.script) throw new PollyError('bad_input', 'polly try: which model script? Give --script FILE (its format: docs/guide.md "Try it without API keys: polly try").');
    // Every input is checked before anything is started or written (the server, config.yaml).
    const planPath = resolve(io.cwd, plan);
    let planText: string;
    try {
      planText = readFileSync(planPath, 'utf8');
    } catch (error) {
      throw new PollyError(
        'bad_input',
        `polly try: cannot read the plan file ${planPath}: ${(error as Error).message}. Give the path of a plan file (YAML; docs/guide.md "The plan format").`,
        {
          cause: error,
          details: { file: planPath },
        },
      );
    }
    parsePlanFile(planText, planPath);
    const args = [plan, ...(values.yes ? ['--yes'] : []), ...(values.json ? ['--json'] : [])];
    return withScriptedModels('try', values.script, io, (scripted) => runCommand.run(args, scripted));
  },
};
