import {
  compiledReviewer,
  compileScheduleWorkflow,
  compileTaskWorkflow,
  planScheduleWorkflowName,
  planShapingConfig,
  planCompilerFingerprint,
  planTaskWorkflowName,
  taskBounds,
  type PlanShapingInput,
} from './plan-compiler.js';
import type { AdmittedWorkflow, PlanRecord } from '../registry/registry-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { AdmissionCache } from '../../workflows/check/admission-cache.js';
import type { CheckResult } from '../../workflows/check/checker.js';
import type { WorkflowLibrary } from '../../workflows/workflow-library.js';

export { planTaskWorkflowName, planScheduleWorkflowName };

/**
 * How an approved plan's workflows entered the library: `verified` the workflows whose content
 * hash matched the verdict recorded at admission (no check ran), `checked` those checked here, with
 * the verdict, the hash recorded before (null: none was) and the new one. A workflow is checked
 * when the plan was recorded before hashes were kept, or when it compiles differently now (another
 * compiler or checker: `compiler` says whether the fingerprint changed). Each name once per plan and library.
 */
export interface PlanAdded {
  planId: string;
  verified: Array<{ name: string; key: string }>;
  checked: Array<AdmittedWorkflow & { previousKey: string | null }>;
  /** The compiler fingerprint recorded on the plan (null: none) and this process's (brain/plan/plan-compiler.ts `planCompilerFingerprint`). */
  compiler: { recorded: string | null; now: string };
}

export interface PlanLibrary extends WorkflowLibrary {
  /**
   * Compile and add the schedule and task workflows of an approved plan; idempotent (null when the
   * plan was added before). Verdicts come from the plan record where the hash matches.
   */
  addPlan(plan: PlanRecord): PlanAdded | null;
  /** The workflow name of a plan task's run. */
  workflowFor(planId: string, key: string): string;
  /** The workflow name of a plan's schedule run. */
  scheduleFor(planId: string): string;
}

/**
 * Journal how a plan's workflows entered a Brain's library, so a restart shows it ran no
 * admission: `plan.admission_verified` with each workflow's name and the hash it verified, and the
 * names checked again. A workflow checked here (its hash changed: another compiler or checker, or
 * none was recorded) has its new hash and verdict written onto the plan record in the same
 * transaction, with `plan.admission_rechecked` (old and new hash, verdict, whether the compiler
 * fingerprint changed), so the next restart verifies it instead of checking it again.
 * Nothing is written for `null` (the plan was already in the library).
 */
export async function recordPlanAdded(store: RegistryStore, added: PlanAdded | null): Promise<void> {
  if (!added) return;
  await store.update((draft, tx) => {
    tx.emit('plan.admission_verified', { planId: added.planId, verified: added.verified, checked: added.checked.map((w) => w.name) });
    const admission = draft.plans[added.planId]?.admission;
    if (added.checked.length === 0 || !admission) return;
    const recorded = admission.workflows ?? [];
    for (const { previousKey: _previous, ...fresh } of added.checked) {
      const at = recorded.findIndex((w) => w.name === fresh.name);
      if (at >= 0) recorded[at] = fresh;
      else recorded.push(fresh);
    }
    admission.workflows = recorded;
    admission.compiler = added.compiler.now;
    tx.emit('plan.admission_rechecked', {
      planId: added.planId,
      compilerChanged: added.compiler.recorded !== added.compiler.now,
      compilerBefore: added.compiler.recorded,
      compilerNow: added.compiler.now,
      workflows: added.checked.map((w) => ({ name: w.name, previousKey: w.previousKey, key: w.key, admitted: w.admitted, line: w.line })),
    });
  });
}

/**
 * The verdicts recorded on a plan at admission, as an admission cache keyed by content hash that
 * reports what happened: `verified` gets the key of a recorded verdict it served, `checkedNow` the
 * key and verdict of a fresh check.
 */
function recordedAdmissions(recorded: AdmittedWorkflow[], verified: (key: string) => void, checkedNow: (key: string, result: CheckResult) => void): AdmissionCache {
  const byKey = new Map(recorded.map((w) => [w.key, w]));
  return {
    get(key): CheckResult | null {
      const w = byKey.get(key);
      if (!w) return null;
      verified(key);
      const { key: _key, ...verdict } = w;
      return { ...verdict, violations: [] };
    },
    put: (key, result) => checkedNow(key, result),
  };
}

/**
 * A library over `base` (whose policy must be the config's `policies.spawn_bounds`) that also
 * serves approved plans' schedule and task workflows.
 * @param config  review pairs (the reviewer fallback the plan gate used), the task bounds
 *                (`acceptance`, `review.max_rounds`, `pr.max_fix_rounds`) and the spawn bound of the schedule.
 */
export function createPlanLibrary(base: WorkflowLibrary, config: PlanShapingInput): PlanLibrary {
  const plans = new Set<string>();
  return {
    entries: () => base.entries(),
    get: (name) => base.get(name),
    add: (wf, admissions) => base.add(wf, admissions),
    workflowFor: planTaskWorkflowName,
    scheduleFor: planScheduleWorkflowName,
    addPlan(plan) {
      if (plans.has(plan.id)) return null;
      // The config the plan was admitted under (older plan records: the current config).
      const shape = plan.admittedWith ?? planShapingConfig(config);
      const added: PlanAdded = { planId: plan.id, verified: [], checked: [], compiler: { recorded: plan.admission?.compiler ?? null, now: planCompilerFingerprint() } };
      const recorded = plan.admission?.workflows ?? [];
      const addOne = (wf: Parameters<WorkflowLibrary['add']>[0]): void => {
        base.add(
          wf,
          recordedAdmissions(
            recorded,
            (key) => added.verified.push({ name: wf.name, key }),
            (key, result) =>
              added.checked.push({
                name: wf.name,
                key,
                previousKey: recorded.find((w) => w.name === wf.name)?.key ?? null,
                admitted: result.admitted,
                line: result.line,
                pathsExplored: result.pathsExplored,
                statesSeen: result.statesSeen,
                terminalStates: result.terminalStates,
                exhaustive: result.exhaustive,
                elapsedMs: result.elapsedMs,
              }),
          ),
        );
      };
      if (!base.get(planScheduleWorkflowName(plan.id))) {
        addOne(compileScheduleWorkflow(plan.id, { tasks: plan.tasks, batches: plan.batches ?? {} }, shape.maxDispatchesPerTurn));
      }
      for (const task of plan.tasks) {
        if (task.purpose !== 'implement') continue;
        if (base.get(planTaskWorkflowName(plan.id, task.key))) continue;
        addOne(compileTaskWorkflow(plan.id, task, compiledReviewer(task, shape.review.pairs), taskBounds(shape, task)));
      }
      plans.add(plan.id);
      return added;
    },
  };
}
