/**
 * Which agent CLIs a plan will start, task by task: each task's worker, and for an implement task
 * its reviewer — the plan's `reviewer`, else the first of config `review.pairs[worker]`, as the
 * Brain picks it (brain/process/brain-process.ts). Used to refuse a plan up front when one of them
 * cannot start on this machine (workers/agents/agent-preflight.ts).
 */
import { agentCredentials, agentRootProblem } from '../../workers/agents/agent-preflight.js';
import { rootRefusalMessage } from '../../workers/agents/claude-code-adapter.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import type { Harness } from '../core/vocabulary.js';
import { agentEnvFrom } from '../process/agent-env.js';
import type { PlanTaskSpec } from '../registry/registry-schema.js';
import type { Plan } from './plan-schema.js';

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

/**
 * The root half of {@link refuseUnstartableAgents}, for a proposer that does not start the Brain
 * itself (the dashboard: the agents' keys are those of the command that starts it, `polly resume`).
 * @throws PollyError `agent_refused` naming the tasks and their roles, and the fix.
 */
export function refuseRootAgents(tasks: Plan['tasks'], config: PollyConfig, isRoot: boolean = process.getuid?.() === 0): void {
  const rooted = planAgentUses(tasks, config).filter((u) => agentRootProblem(u.harness, config.workers, isRoot));
  if (rooted.length === 0) return;
  const which = rooted.map((u) => `${u.task} (${u.role})`).join(', ');
  throw new PollyError('agent_refused', `polly run: the plan starts claude-code as root for ${which}, and it would be refused. ${rootRefusalMessage()}`, {
    details: { tasks: rooted },
  });
}
/**
 * Refuse, before anything is written, a plan whose agents cannot start on this machine:
 * - root: as root without `workers.claude-code.allow_root_sandbox`, every claude-code worker and
 *   reviewer would be refused by Claude Code itself (workers/agents/agent-preflight.ts {@link agentRootProblem});
 * - credentials: a harness the plan starts (as worker or reviewer) whose model key variable is not
 *   set in what Polly passes to agents ({@link agentEnvFrom}): the same check as `polly doctor`'s
 *   `credentials:<harness>` ({@link agentCredentials}). Variable names only, never values; pi on its
 *   own default provider cannot be checked and passes.
 * @param env  Polly's environment (the agents get {@link agentEnvFrom} of it).
 * @throws PollyError `agent_refused` naming the tasks and their roles, the variables, and the whole fix.
 */
export function refuseUnstartableAgents(tasks: Plan['tasks'], config: PollyConfig, env: NodeJS.ProcessEnv, isRoot: boolean = process.getuid?.() === 0): void {
  refuseRootAgents(tasks, config, isRoot);
  const uses = planAgentUses(tasks, config);
  const agentEnv = agentEnvFrom(env, config);
  const missing = [...new Set(uses.map((u) => u.harness))].map((h) => agentCredentials(h, config.workers, agentEnv)).filter((c) => c.status === 'missing');
  if (missing.length === 0) return;
  const sentences = missing.map((c) => {
    const which = uses
      .filter((u) => u.harness === c.harness)
      .map((u) => `${u.task} (${u.role})`)
      .join(', ');
    return `${c.harness} (for ${which}) has no model key: none of ${c.variables.join(', ')} is set. Fix: ${c.fix}.`;
  });
  throw new PollyError(
    'agent_refused',
    `polly run: the plan's agents could not start, so nothing was proposed. ${sentences.join(' ')} Then run the same command again; polly doctor checks every key.`,
    {
      details: { missing: missing.map((c) => ({ harness: c.harness, variables: c.variables, tasks: uses.filter((u) => u.harness === c.harness) })) },
    },
  );
}
