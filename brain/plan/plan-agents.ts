/**
 * Which agent CLIs a plan will start, task by task: each task's worker, and for an implement task
 * its reviewer — the plan's `reviewer`, else the first of config `review.pairs[worker]`, as the
 * Brain picks it (brain/process/brain-process.ts). Used to refuse a plan up front when one of them
 * cannot start on this machine (workers/agents/agent-preflight.ts).
 */
import type { PollyConfig } from '../config/config-schema.js';
import type { Harness } from '../core/vocabulary.js';
import type { PlanTaskSpec } from '../registry/registry-schema.js';

/** One agent a plan task starts. */
export interface PlanAgentUse {
  /** The plan task's key. */
  task: string;
  harness: Harness;
  role: 'worker' | 'reviewer';
}

/**
 * Who reviews an implement task: its plan's `reviewer`, else the first of config
 * `review.pairs[worker]`, else nobody (null). The one reviewer fallback: the Brain's task record
 * (brain/process/brain-process.ts), the plan compiler (brain/plan/plan-compiler.ts
 * `compiledReviewer`), the agents a plan starts (below) and the PR step's check of it
 * (brain/task-tools/open-draft-pr.ts `chooseReviewer`) all take it from here. Pure.
 */
export function reviewerFor(task: Pick<PlanTaskSpec, 'worker' | 'reviewer'>, pairs: PollyConfig['review']['pairs']): Harness | null {
  return task.reviewer ?? pairs[task.worker]?.[0] ?? null;
}

/**
 * The agents `tasks` start, in task order (worker first). Pure.
 * @param config  `review.pairs` for an implement task without a reviewer.
 */
export function planAgentUses(tasks: ReadonlyArray<Pick<PlanTaskSpec, 'key' | 'worker' | 'purpose' | 'reviewer'>>, config: Pick<PollyConfig, 'review'>): PlanAgentUse[] {
  const out: PlanAgentUse[] = [];
  for (const t of tasks) {
    out.push({ task: t.key, harness: t.worker, role: 'worker' });
    if (t.purpose !== 'implement') continue;
    const reviewer = reviewerFor(t, config.review.pairs);
    if (reviewer) out.push({ task: t.key, harness: reviewer, role: 'reviewer' });
  }
  return out;
}
