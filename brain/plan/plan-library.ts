/**
 * The Brain's workflow library: the built-in workflows plus one compiled `polly-task` workflow per
 * implement task of every approved plan (`plan-<planId>-<key>`), compiled exactly as the plan gate
 * compiled them and checked again on the way in (with Polly's guarantees). Runs of those tasks
 * execute on the runtime against these entries, so a task can only do what the checker admitted.
 */
import type { PollyConfig } from '../config/config-schema.js';
import { compileTaskWorkflow } from './plan-compiler.js';
import type { PlanRecord } from '../registry/registry-schema.js';
import type { WorkflowLibrary } from '../../workflows/workflow-library.js';

export interface PlanLibrary extends WorkflowLibrary {
  /** Compile and add the task workflows of an approved plan (idempotent). */
  addPlan(plan: PlanRecord): void;
  /** The workflow name of a plan task's run. */
  workflowFor(planId: string, key: string): string;
}

/** Task workflow name for a plan task (matches brain/plan-compiler.ts). */
export function planTaskWorkflowName(planId: string, key: string): string {
  return `plan-${planId}-${key}`.toLowerCase();
}

/**
 * A library over `base` (whose policy must be the config's) that also serves approved plans' task workflows.
 * @param config  review pairs: the reviewer fallback the plan gate used.
 */
export function createPlanLibrary(base: WorkflowLibrary, config: Pick<PollyConfig, 'review'>): PlanLibrary {
  const plans = new Set<string>();
  return {
    entries: () => base.entries(),
    get: (name) => base.get(name),
    add: (wf) => base.add(wf),
    workflowFor: planTaskWorkflowName,
    addPlan(plan) {
      if (plans.has(plan.id)) return;
      for (const task of plan.tasks) {
        if (task.purpose !== 'implement') continue;
        if (base.get(planTaskWorkflowName(plan.id, task.key))) continue;
        base.add(compileTaskWorkflow(plan.id, task, config.review.pairs[task.worker]?.[0] ?? task.worker));
      }
      plans.add(plan.id);
    },
  };
}
