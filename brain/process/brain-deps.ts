/**
 * Wiring of the Brain process for one repository: the runtime over the plan library, the worker
 * supervisor, the worktree manager, the forge, the task tools, the gate context and the agents'
 * environment. Commands (`polly brain`, `polly run`) and tests build the Brain with this.
 */
import { homedir } from 'node:os';
import { createWorkerSupervisor } from '../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { createRuntime } from '../../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../workflows/workflow-library.js';
import type { BrainProcessDeps } from './brain-process.js';
import { openForge } from '../forge/forge-select.js';
import { createPlanLibrary } from '../plan/plan-library.js';
import type { RepoContext } from '../commands/repo-context.js';
import { TASK_TOOLS } from '../task-tools/index.js';
import type { GateContext } from '../../gate/types.js';
import type { PollyConfig } from '../config/config-schema.js';
import { readRepoBranchContext } from '../../workers/git/repo.js';

/** The agent area and instance area of the Brain's own runs (polly-task instances). */
export const BRAIN_AGENT_AREA = 'polly';
export const BRAIN_INSTANCE_AREA = 'brain';

/** Environment variables passed on to agent processes (model endpoints and keys; nothing else of the caller's env). */
export const AGENT_ENV_KEYS = /^(ANTHROPIC_BASE_URL|ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN|OPENAI_API_KEY|OPENAI_BASE_URL|POLLY_MODEL_[A-Z0-9_]+)$/;

/**
 * The subset of `env` agents get: {@link AGENT_ENV_KEYS} plus the key variables the config names
 * (`workers.codex.provider.env_key`, `workers.pi.api_key_env`).
 */
export function agentEnvFrom(env: NodeJS.ProcessEnv, config?: Pick<PollyConfig, 'workers'>): Record<string, string> {
  const named = new Set([config?.workers.codex.provider?.env_key, config?.workers.pi.api_key_env].filter((k): k is string => Boolean(k)));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && (AGENT_ENV_KEYS.test(k) || named.has(k))) out[k] = v;
  return out;
}

/**
 * Build everything the Brain process needs except the LLM brain factory.
 * @throws PollyError from the forge selection (`config_invalid`, `forge_failed`).
 */
export async function createBrainDeps(ctx: RepoContext, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<Omit<BrainProcessDeps, 'startGoalBrain' | 'messages'>> {
  const { repo, store, config } = ctx;
  const base = createWorkflowLibrary(builtinWorkflowDirs(), { policy: { maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn } });
  const library = createPlanLibrary(base, config);
  const runtime = createRuntime({ store, library, agentArea: BRAIN_AGENT_AREA, instanceArea: BRAIN_INSTANCE_AREA });
  const supervisor = createWorkerSupervisor({ repoRoot: repo.root, store, config });
  const worktrees = createWorktreeManager({
    repoRoot: repo.root,
    setupCommand: config.worktrees.setup,
    setupSandbox: {
      network: config.worktrees.setup_network ?? false,
      allowUnconfined: config.workers.allow_unconfined ?? false,
      passthrough: config.workers.env_passthrough ?? [],
    },
    journal: (kind, data) => void store.update((_d, tx) => tx.emit(kind, data)).catch(() => {}),
  });
  const { forge, selection } = await openForge({ repoRoot: repo.root, config, store, env });
  log(`[polly] forge: ${selection.kind}${'reason' in selection && selection.reason ? ` (${String(selection.reason)})` : ''}`);
  const branches = readRepoBranchContext(repo.root, env) ?? { branch: 'HEAD', defaultBranch: 'main' };
  const gateContext: GateContext = { repoRoot: repo.root, worktree: repo.root, branch: branches.branch, defaultBranch: branches.defaultBranch, home: env.HOME ?? homedir() };
  return {
    repoRoot: repo.root,
    pollyDir: repo.pollyDir,
    store,
    config,
    runtime,
    library,
    supervisor,
    worktrees,
    forge,
    tools: { ...TASK_TOOLS },
    agentEnv: agentEnvFrom(env, config),
    gateContext,
    log,
  };
}
