/**
 * The Brain's workflow library: the built-in workflows plus one compiled `polly-task` workflow per
 * implement task of every approved plan (`plan-<planId>-<key>`), exactly as the plan gate admitted
 * them. Runs of those tasks execute on the runtime against these entries, so a task can only do
 * what the checker admitted for it.
 */
import { admitPlan } from './plan-compiler.js';
import type { PollyConfig } from './config-schema.js';
import type { PlanRecord } from './registry-schema.js';
import { describeInvariant, type LibraryEntry, type WorkflowLibrary } from '../workflows/workflow-library.js';

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
 * A library over `base` that also serves approved plans' task workflows.
 * @param config  policies and review pairs used at admission (the same ones the gate used).
 */
export function createPlanLibrary(base: WorkflowLibrary, config: Pick<PollyConfig, 'policies' | 'review'>): PlanLibrary {
  const extra = new Map<string, LibraryEntry>();
  const plans = new Set<string>();
  return {
    entries: () => [...base.entries(), ...extra.values()],
    get: (name) => extra.get(name) ?? base.get(name),
    workflowFor: planTaskWorkflowName,
    addPlan(plan) {
      if (plans.has(plan.id)) return;
      const verdict = admitPlan(plan.id, { goal: null, tasks: plan.tasks, batches: plan.batches ?? {} }, config);
      for (const part of verdict.parts) {
        if (part.part === 'schedule') continue;
        const wf = part.workflow;
        extra.set(wf.name, {
          name: wf.name,
          file: wf.file,
          admitted: part.result.admitted,
          workflow: wf,
          check: part.result,
          line: part.result.line,
          reasons: part.result.violations.map((v) => v.invariant),
          guarantees: wf.invariants.map((inv) => ({ name: inv.name, says: describeInvariant(inv) })),
          tools: Object.fromEntries(wf.effects.map((e) => [e.kind, e.tool])),
          key: wf.key,
          description: wf.description,
        });
      }
      plans.add(plan.id);
    },
  };
}
