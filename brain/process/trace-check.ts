/**
 * Trace validation on demand: one stored run held to the admitted workflow it ran under
 * (`polly check --run <run-id>`, and the tests' shared assertion). The workflow is rebuilt the way
 * the Brain built it: the built-in library checked with the config's spawn bound, plus, for a
 * plan's schedule or task run, that plan compiled with the config's bounds (brain/plan/plan-library.ts).
 */
import { planIdOfRun } from '../plan/plan-retry.js';
import { validateTrace, type TraceVerdict } from '../../workflows/run/trace-validation.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../workflows/workflow-library.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { createPlanLibrary } from '../plan/plan-library.js';
import { schedulePreamble } from './schedule-gate-upgrade.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { Registry } from '../registry/registry-schema.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { RunJournalEntry, RunStore } from '../../workflows/run/run-store.js';

/** Validates runs of one registry snapshot; plan workflows are compiled and checked once per plan. */
export interface TraceChecker {
  /** @throws PollyError `bad_input` as {@link checkRunTrace}. */
  check(runId: string): TraceVerdict;
  /** Every run of the snapshot, oldest first. */
  runIds(): string[];
}

/**
 * A checker over `reg` (the registry: plans and tasks), `runs` (the runs, from the run store) and
 * `journal` (the run store's journal), with the Brain's library rebuilt from `config` (see the module doc).
 */
export function createTraceChecker(reg: Registry, runList: RunRecord[], journal: RunJournalEntry[], config: PollyConfig): TraceChecker {
  const runs: Record<string, RunRecord> = Object.fromEntries(runList.map((r) => [r.id, r]));
  const base = createWorkflowLibrary(builtinWorkflowDirs(), { policy: { maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn } });
  const library = createPlanLibrary(base, config);
  return {
    runIds: () =>
      Object.values(runs)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
        .map((r) => r.id),
    check(runId) {
      const run = runs[runId];
      if (!run) {
        const known = Object.keys(runs).slice(0, 10);
        throw new PollyError(
          'bad_input',
          `no workflow run ${JSON.stringify(runId)} in this repository's run store. Known runs: ${known.join(', ') || 'none'}${Object.keys(runs).length > 10 ? ', …' : ''}. "polly status --json" lists them.`,
          { details: { run: runId } },
        );
      }
      const planId = planIdOfRun(reg, run);
      const plan = planId ? reg.plans[planId] : undefined;
      if (plan) library.addPlan(plan);
      const entry = library.get(run.workflow);
      if (!entry?.workflow || !entry.admitted) {
        throw new PollyError(
          'bad_input',
          `run ${runId} ran workflow ${JSON.stringify(run.workflow)}, which Polly cannot rebuild as admitted here (${entry ? `refused: ${entry.reasons.join(', ')}` : 'not a built-in workflow nor one of an approved plan'}). Check it where its workflow library lives.`,
          { details: { run: runId, workflow: run.workflow } },
        );
      }
      // A schedule run begun before the plan gate was its first step is held to the gate passed before its journal.
      return validateTrace(entry.workflow, run, journal, { preamble: schedulePreamble(reg, run, journal) });
    },
  };
}

/**
 * Validate run `runId`'s journal against its admitted workflow.
 * @returns the verdict (a divergence is data: `conforms: false` with the journal seq and the reason).
 * @throws PollyError `bad_input` for an unknown run id, or a run whose workflow Polly cannot rebuild
 *   (a run of an MCP area served from other workflow directories); `lock_timeout`, `registry_corrupt`.
 */
export async function checkRunTrace(store: RegistryStore, runStore: RunStore, config: PollyConfig, runId: string): Promise<TraceVerdict> {
  const run = await runStore.getRun(runId);
  return createTraceChecker(await store.read(), run ? [run] : await runStore.listRuns(), run ? await runStore.journal(0, { run: runId }) : [], config).check(runId);
}
