/**
 * Wiring of the Brain process for one repository: the runtime over the plan library, the worker
 * supervisor, the worktree manager, the forge, the task tools, the gate context and the agents'
 * environment. Commands (`polly brain`, `polly run`) and tests build the Brain with this.
 */
import type { IssueTracker } from '../forge/issue-tracker.js';
import { writeProgress } from '../registry/task-progress.js';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createWorkerSupervisor } from '../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { createRuntime } from '../../workflows/run/runtime.js';
import { brainInstanceArea, openRunStore, openWorkClaims } from '../registry/run-storage.js';
import { pollyIdentity } from '../core/polly-identity.js';
import { repoIdentity, type WorkClaims } from '../../workflows/run/work-claims.js';
import { execFileSync } from 'node:child_process';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../workflows/workflow-library.js';
import { createFileAdmissionCache } from '../../workflows/check/admission-cache.js';
import { pollyStateRoot } from '../../workers/sandbox/agent-state-dir.js';
import { openForge } from '../forge/forge-select.js';
import { createPlanLibrary } from '../plan/plan-library.js';
import type { RepoContext } from '../registry/repo-context.js';
import { TASK_TOOLS } from '../task-tools/index.js';
import type { GateContext } from '../../gate/types.js';
import type { PollyConfig } from '../config/config-schema.js';
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';
import type { Runtime } from '../../workflows/run/runtime.js';
import type { Forge } from '../forge/forge.js';
import type { PullRequestWatcher } from '../forge/github-watch.js';
import { createLocalPrChecks, type LocalPrChecks } from '../forge/local-pr-checks.js';
import type { PlanLibrary } from '../plan/plan-library.js';
import type { RegistryStore } from '../registry/registry-store.js';
import type { GoalRecord } from '../registry/registry-schema.js';
import type { TaskTool } from '../task-tools/types.js';
import type { WorkerSupervisor } from '../../workers/worker-turn.js';
import type { InboxEvent } from '../mcp/inbox-events.js';
import type { NotificationSink } from '../notify/webhook.js';
import { createHostCleanup, type HostCleanup } from '../../workers/hosts/host-cleanup.js';

/** The LLM brain the process hosts per goal (brain/llm-brain.ts), behind a narrow interface. */
export interface GoalBrain {
  pid: number;
  sessionId(): string | null;
  turn(text: string): Promise<{ ok: boolean; text: string; sessionId: string | null }>;
  close(): Promise<void>;
}

export interface BrainProcessDeps {
  repoRoot: string;
  pollyDir: string;
  store: RegistryStore;
  config: PollyConfig;
  runtime: Runtime;
  library: PlanLibrary;
  supervisor: WorkerSupervisor;
  worktrees: WorktreeManager;
  forge: Forge;
  /** The GitHub PR watcher (one pass per after-merge pass); null on the local forge, which watches itself on every read. */
  prWatcher?: PullRequestWatcher | null;
  /**
   * The issue tracker (GitHub's issues, or the local forge's: brain/forge/issue-tracker.ts): the
   * plan gate on the issue of every goal that came from one (brain/forge/issue-gate.ts; on GitHub
   * one pass per PR watcher pass, locally every loop pass), and the intake when config
   * `intake.in_brain`. Absent: no issue pass.
   */
  issues?: IssueTracker | null;
  /** The local forge's own check of open PRs merged with their moved base (one pass per after-merge pass); null on GitHub, whose CI does it. */
  localChecks?: LocalPrChecks | null;
  /** Effect tool name → implementation (brain/task-tools/index.ts). */
  tools: Record<string, TaskTool>;
  /** Env for agent processes (model endpoints). */
  agentEnv: Record<string, string>;
  gateContext: GateContext;
  /**
   * Start the LLM brain of a goal, or null to run without one (plans come from `polly run`).
   * `resumeSessionId` continues the goal's session after a restart.
   */
  startGoalBrain?: ((goal: GoalRecord, resumeSessionId: string | null) => GoalBrain | Promise<GoalBrain>) | null;
  /** First message for a goal's brain and the wake-up digest of inbox events. */
  messages?: { first(goal: GoalRecord): string; wake(events: InboxEvent[]): string };
  /**
   * With `runs.store: postgres`: the shared work claims through which several Pollys on the store
   * hand each plan task to exactly one of them (brain/process/work-queue.ts), this Polly's identity
   * and the repository's. Null or absent: this Brain is alone on its store.
   */
  claims?: { store: WorkClaims; polly: { id: string; label: string }; repo: string; leaseSeconds?: number } | null;
  /** Exit once nothing is open (no open goal, no pending or running work). */
  exitWhenIdle?: boolean;
  /**
   * Act on the PR events of every goal's ready PRs (`polly brain --all-prs`). Default false: only
   * those of the goals this Brain runs for (open while it runs, or asked for; brain/process/pr-events.ts).
   */
  allPrs?: boolean;
  /** Seconds between after-merge passes (default 30). */
  mergeWatchSeconds?: number;
  /** Seconds between GitHub PR watcher passes (config `forge.github.watch_seconds`; default `PR_WATCH_DEFAULT_SECONDS`, 60). */
  prWatchSeconds?: number;
  /** One line per notable step, for the live view / log (stderr). */
  log?: (line: string) => void;
  /** Called with every agent event of every worker (for the live view). */
  onWorkerEvent?: (taskId: string, event: AgentEvent) => void;
  clock?: () => Date;
  signal?: AbortSignal;
  /** Removes a task's worktree on its remote host when Polly removes it here (workers.hosts); absent: no hosts. */
  hostCleanup?: HostCleanup | null;
  /** Where notifications go; default from config `notifications` (brain/notify/notifier.ts `sinksFromConfig`). */
  notificationSinks?: readonly NotificationSink[];
}

import { readRepoBranchContext } from '../../workers/git/repo.js';
import { agentEnvFrom } from './agent-env.js';

/** The agent area and instance area of the Brain's own runs (polly-task instances); on Postgres the instance area is `brainInstanceArea`'s. */
export const BRAIN_AGENT_AREA = 'polly';
export const BRAIN_INSTANCE_AREA = 'brain';

/** The repository's identity across clones (`repoIdentity` of origin's URL), or the root's path without an origin. */
function repoIdentityOf(root: string, env: NodeJS.ProcessEnv): string {
  try {
    const url = execFileSync('git', ['remote', 'get-url', 'origin'], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return url ? repoIdentity(url) : root;
  } catch {
    return root;
  }
}

/**
 * Build everything the Brain process needs except the LLM brain factory.
 * @throws PollyError from the forge selection (`config_invalid`, `forge_failed`).
 */
export async function createBrainDeps(ctx: RepoContext, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<Omit<BrainProcessDeps, 'startGoalBrain' | 'messages'>> {
  const { repo, store, config } = ctx;
  const base = createWorkflowLibrary(builtinWorkflowDirs(), {
    policy: { maxDispatchesPerTurn: config.policies.spawn_bounds.max_dispatches_per_turn },
    // Kept by content (workflow + checker): an unchanged polly-task is not searched at every start.
    admissions: createFileAdmissionCache(join(pollyStateRoot(env), 'admissions')),
  });
  const library = createPlanLibrary(base, config);
  const runs = await openRunStore(repo.pollyDir, store, config.runs, env);
  if (runs.moved > 0) log(`[polly] moved ${runs.moved} workflow runs from registry.json into ${runs.where}`);
  const runtime = createRuntime({ store: runs.store, library, agentArea: BRAIN_AGENT_AREA, instanceArea: brainInstanceArea(config.runs, repo.root) });
  const claims = openWorkClaims(config.runs, env);
  const supervisor = createWorkerSupervisor({ repoRoot: repo.root, store, config });
  const worktrees = createWorktreeManager({
    repoRoot: repo.root,
    ...(config.worktrees.dir ? { worktreesDir: config.worktrees.dir } : {}),
    setupCommand: config.worktrees.setup,
    setupSandbox: {
      network: config.worktrees.setup_network ?? false,
      allowUnconfined: config.workers.allow_unconfined ?? false,
      passthrough: config.workers.env_passthrough ?? [],
      limits: config.workers.limits ?? {},
      toolPaths: config.workers.tool_paths ?? [],
    },
    journal: (kind, data) => void store.update((_d, tx) => tx.emit(kind, data)).catch(() => {}),
    // A setup's phase and output, for polly ui and status --watch (brain/registry/task-progress.ts).
    onSetup: ({ id, command, logPath, state }) =>
      writeProgress(repo.pollyDir, id, state === 'started' ? { taskId: id, phase: 'setup', command, startedAt: new Date().toISOString(), log: logPath } : null),
  });
  const { forge, selection, watcher, issues } = await openForge({ repoRoot: repo.root, config, store, env });
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
    prWatcher: watcher,
    issues,
    prWatchSeconds: config.forge.github.watch_seconds,
    localChecks: forge.kind === 'local' ? createLocalPrChecks({ repoRoot: repo.root, store, config, progress: log }) : null,
    tools: { ...TASK_TOOLS },
    agentEnv: agentEnvFrom(env, config),
    gateContext,
    log,
    claims: claims ? { store: claims, polly: pollyIdentity(repo.root), repo: repoIdentityOf(repo.root, env) } : null,
    hostCleanup: (config.workers.hosts ?? []).length > 0 ? createHostCleanup(repo.root, config.workers) : null,
  };
}
