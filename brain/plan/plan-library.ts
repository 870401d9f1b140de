import {
  compileScheduleWorkflow,
  compileTaskWorkflow,
  planScheduleWorkflowName,
  planShapingConfig,
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
 * How an approved plan's workflows entered the library: `verified` names the workflows whose content
 * hash matched the verdict recorded at admission (no check ran), `checked` those checked here (a
 * plan recorded before hashes were kept, or a workflow that compiles differently now: another
 * checker or compiler version). Each name once per plan and library.
 */
export interface PlanAdded {
  planId: string;
  verified: string[];
  checked: string[];
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
 * Journal how a plan's workflows entered a Brain's library (`plan.admission_verified`: the names
 * whose recorded hash matched, and those checked again), so a restart shows it ran no admission.
 * Nothing is written for `null` (the plan was already in the library).
 */
export async function journalPlanAdded(store: RegistryStore, added: PlanAdded | null): Promise<void> {
  if (!added) return;
  await store.update((_draft, tx) => {
    tx.emit('plan.admission_verified', { planId: added.planId, verified: added.verified, checked: added.checked });
  });
}

/** The verdicts recorded on a plan at admission, as an admission cache keyed by content hash; `put` notes a fresh check. */
function recordedAdmissions(recorded: AdmittedWorkflow[], checkedNow: (key: string) => void): AdmissionCache {
  const byKey = new Map(recorded.map((w) => [w.key, w]));
  return {
    get(key): CheckResult | null {
      const w = byKey.get(key);
      if (!w) return null;
      const { key: _key, ...verdict } = w;
      return { ...verdict, violations: [] };
    },
    put: (key) => checkedNow(key),
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
      const added: PlanAdded = { planId: plan.id, verified: [], checked: [] };
      const recorded = plan.admission?.workflows ?? [];
      const addOne = (wf: Parameters<WorkflowLibrary['add']>[0]): void => {
        let checked = false;
        base.add(
          wf,
          recordedAdmissions(recorded, () => (checked = true)),
        );
        (checked ? added.checked : added.verified).push(wf.name);
      };
      if (!base.get(planScheduleWorkflowName(plan.id))) {
        addOne(compileScheduleWorkflow(plan.id, { tasks: plan.tasks, batches: plan.batches ?? {} }, shape.maxDispatchesPerTurn));
      }
      for (const task of plan.tasks) {
        if (task.purpose !== 'implement') continue;
        if (base.get(planTaskWorkflowName(plan.id, task.key))) continue;
        addOne(compileTaskWorkflow(plan.id, task, shape.review.pairs[task.worker]?.[0] ?? task.worker, taskBounds(shape, task)));
      }
      plans.add(plan.id);
      return added;
    },
  };
}
