import {
  compileScheduleWorkflow,
  compileTaskWorkflow,
  planScheduleWorkflowName,
  planShapingConfig,
  planTaskWorkflowName,
  taskBounds,
  type PlanShapingInput,
} from './plan-compiler.js';
import type { PlanRecord } from '../registry/registry-schema.js';
import type { WorkflowLibrary } from '../../workflows/workflow-library.js';

export { planTaskWorkflowName, planScheduleWorkflowName };

export interface PlanLibrary extends WorkflowLibrary {
  /** Compile and add the schedule and task workflows of an approved plan (idempotent). */
  addPlan(plan: PlanRecord): void;
  /** The workflow name of a plan task's run. */
  workflowFor(planId: string, key: string): string;
  /** The workflow name of a plan's schedule run. */
  scheduleFor(planId: string): string;
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
    add: (wf) => base.add(wf),
    workflowFor: planTaskWorkflowName,
    scheduleFor: planScheduleWorkflowName,
    addPlan(plan) {
      if (plans.has(plan.id)) return;
      // The config the plan was admitted under (older plan records: the current config).
      const shape = plan.admittedWith ?? planShapingConfig(config);
      if (!base.get(planScheduleWorkflowName(plan.id))) {
        base.add(compileScheduleWorkflow(plan.id, { tasks: plan.tasks, batches: plan.batches ?? {} }, shape.maxDispatchesPerTurn));
      }
      for (const task of plan.tasks) {
        if (task.purpose !== 'implement') continue;
        if (base.get(planTaskWorkflowName(plan.id, task.key))) continue;
        base.add(compileTaskWorkflow(plan.id, task, shape.review.pairs[task.worker]?.[0] ?? task.worker, taskBounds(shape, task)));
      }
      plans.add(plan.id);
    },
  };
}
