/**
 * `polly check PATH [--json] [--promela] [--state-cap N]` — model-check a workflow.
 * `polly check --run RUN-ID [--json]` — hold a stored run's journal to its admitted workflow
 * (trace validation, brain/process/trace-check.ts): exit 0 conforms, 1 diverges, 2 bad input.
 *
 * Prints the checker's verdict lines (`admitted: NAME — paths explored: N · states seen: M · exhaustive
 * within declared domains`, or `REFUSED: NAME` with each violated invariant and its shortest
 * trace). A workflow with a `polly:` block is a Polly task/plan workflow and is checked with
 * Polly's guarantees added (max dispatches per turn from DEFAULT_CONFIG). `--promela` prints the
 * Promela model for spin instead of checking. Exit 0 admitted, 1 refused, 2 invalid input.
 */
import { parseCommandArgs } from './args.js';
import { writeJson, type Command } from './command.js';
import { DEFAULT_CONFIG } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { resolve } from 'node:path';
import { checkWorkflow, formatCheckResult } from '../../workflows/check/checker.js';
import { withPollyGuarantees } from '../../workflows/check/guarantees.js';
import { loadWorkflow } from '../../workflows/load-workflow.js';
import { toPromela } from '../../workflows/check/promela.js';
import { checkRunTrace } from '../process/trace-check.js';
import { openRunStore } from '../registry/run-storage.js';
import { openRepoContext } from '../registry/repo-context.js';

export const command: Command = {
  summary: 'model-check a workflow: admitted or REFUSED',
  usage: `Usage: polly check PATH [--json] [--promela] [--state-cap N]
       polly check --run RUN-ID [--json]

Model-check the workflow at PATH (a directory holding workflow.yaml, or the file) exhaustively
within its declared domains.

  --json          print the result as JSON
  --promela       print the model in Promela (for spin) instead of checking it
  --state-cap N   refuse as "not exhaustive" after N states (default 5000000)
  --run RUN-ID    instead: replay the run's journal (this repository's .polly) through the
                  admitted workflow it ran under; every step must be a transition there and
                  every order an effect that step emitted

Exit codes: 0 admitted (or the run conforms), 1 refused (or the run diverges), 2 invalid workflow,
run id or arguments.`,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'check',
      argv,
      { json: { type: 'boolean' }, promela: { type: 'boolean' }, 'state-cap': { type: 'string' }, run: { type: 'string' } },
      1,
    );
    if (values.run !== undefined) {
      if (positionals.length > 0 || values.promela || values['state-cap'] !== undefined) {
        throw new PollyError('bad_input', 'polly check --run RUN-ID takes no PATH, --promela or --state-cap. Run "polly check --run <run-id> [--json]".', {
          details: { flag: '--run' },
        });
      }
      const ctx = await openRepoContext(io.cwd, io.env);
      const runs = await openRunStore(ctx.repo.pollyDir, ctx.store, ctx.config.runs, io.env);
      let verdict: Awaited<ReturnType<typeof checkRunTrace>>;
      try {
        verdict = await checkRunTrace(ctx.store, runs.store, ctx.config, values.run);
      } finally {
        await runs.store.close();
      }
      if (values.json) writeJson(io.stdout, verdict);
      else io.stdout.write(`${verdict.line}\n`);
      return verdict.conforms ? 0 : 1;
    }
    const path = positionals[0];
    if (!path) throw new PollyError('bad_input', 'polly check: missing PATH. Run "polly check workflows/customer-brief" (a directory holding workflow.yaml, or the file).');
    let stateCap: number | undefined;
    if (values['state-cap'] !== undefined) {
      stateCap = Number(values['state-cap']);
      if (!Number.isInteger(stateCap) || stateCap < 1)
        throw new PollyError('bad_input', `polly check: --state-cap ${JSON.stringify(values['state-cap'])} is not a positive integer.`, { details: { flag: '--state-cap' } });
    }
    const loaded = loadWorkflow(resolve(io.cwd, path));
    const wf = loaded.polly ? withPollyGuarantees(loaded, { maxDispatchesPerTurn: DEFAULT_CONFIG.policies.spawn_bounds.max_dispatches_per_turn }) : loaded;
    if (values.promela) {
      io.stdout.write(toPromela(wf));
      return 0;
    }
    const result = checkWorkflow(wf, stateCap === undefined ? {} : { stateCap });
    if (values.json) writeJson(io.stdout, result);
    else io.stdout.write(formatCheckResult(result));
    return result.admitted ? 0 : 1;
  },
};
