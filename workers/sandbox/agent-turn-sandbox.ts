/**
 * The sandbox decision for one agent turn, as the worker runner makes it: fail closed (or
 * unconfined with a warning, when config allows), and the {@link AgentSandbox} to run the CLI in.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentSandbox } from '../agents/agent-adapter.js';
import { decideConfinement, probeSandbox, type SandboxProbe } from './sandbox.js';
import { detectHomeToolchains } from './home-toolchains.js';
import { agentSandboxSpec, modelEndpoints } from './sandbox-profiles.js';
import { endpointOf } from './sandbox-spec.js';
import { prepareGitReadView } from './git-read-view.js';
import { isWorkerEnvName } from './worker-env.js';
import type { ResourceLimits } from './resource-bounds.js';
import { prepareToolShells, toolShellSupport, type ToolShellSupport } from './tool-shell.js';

export interface AgentTurnSandboxInput {
  repoRoot: string;
  /** The agent's cwd (worktree, repository, or review scratch dir). */
  cwd: string;
  /** A read-only turn (brain/core/vocabulary.ts `isReadOnlyRole`, as the Brain decided it): its cwd is mounted read-only. */
  readOnly: boolean;
  agentStateDir: string;
  gateDir: string;
  /** The environment handed to the agent explicitly (its `*_BASE_URL` values name model endpoints). */
  env: Record<string, string>;
  /** Model base URLs from config (`workers.codex.provider.base_url`, `workers.pi.base_url`). */
  configuredUrls: readonly (string | null | undefined)[];
  /** `workers.allow_unconfined`. */
  allowUnconfined: boolean;
  /** The real HOME to hide. */
  realHome: string;
  /** The absolute worktrees directory (`worktrees.dir`); default `<repoRoot>/.worktrees`. */
  worktreesDir?: string;
  /** Default: the cached {@link probeSandbox}. */
  probe?: SandboxProbe;
  /** `workers.limits` (./resource-bounds.ts; defaults for missing keys). Absent: no bounds. */
  limits?: ResourceLimits;
  /** Where the git read views live (./git-read-view.ts); default `<repoStateDir>/read-view`. */
  readViewDir?: string;
  /** `workers.tool_paths`: more host paths the sandbox shows read-only. */
  toolPaths?: readonly string[];
  /** Default: the cached {@link toolShellSupport}. */
  toolShells?: ToolShellSupport;
}

/**
 * Decide and build the sandbox of one agent turn. In a linked worktree the turn gets the task's
 * git read view (./git-read-view.ts), brought up to date now.
 * Every shell the agent starts runs its command in a Landlock domain of its own (./tool-shell.ts),
 * so no command can reach the agent's process through /proc; where Landlock is missing the
 * sandbox runs without, and `warning` says so.
 * @returns `sandbox` (null when unconfined), the `warning` to record when unconfined, and a `notice` when tool shells are off.
 * @throws PollyError `sandbox_unavailable` when the sandbox cannot start and unconfined runs are
 *   not allowed, or when the git read view cannot be built.
 */
export async function agentTurnSandbox(input: AgentTurnSandboxInput): Promise<{ sandbox: AgentSandbox | null; warning: string | null; notice?: string }> {
  const probe = input.probe ?? probeSandbox();
  const decision = decideConfinement(input.allowUnconfined, probe);
  if (!decision.confined || !probe.ok) return { sandbox: null, warning: decision.warning };
  mkdirSync(join(input.agentStateDir, 'home'), { recursive: true });
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (isWorkerEnvName(k)) env[k] = v;
  Object.assign(env, input.env);
  const spec = agentSandboxSpec({
    repoRoot: input.repoRoot,
    cwd: input.cwd,
    writableCwd: !input.readOnly,
    agentStateDir: input.agentStateDir,
    gateDir: input.gateDir,
    endpoints: modelEndpoints(env, input.configuredUrls, endpointOf),
    realHome: input.realHome,
    ...(input.worktreesDir ? { worktreesDir: input.worktreesDir } : {}),
    // The agent's shell runs the developer's toolchains too (cargo, python, node under HOME).
    homeToolchains: detectHomeToolchains(input.realHome, process.env),
    ...(input.toolPaths ? { toolPaths: input.toolPaths } : {}),
    gitView: await prepareGitReadView({ repoRoot: input.repoRoot, worktree: input.cwd, ...(input.readViewDir ? { stateDir: input.readViewDir } : {}) }),
  });
  const shells = input.toolShells ?? toolShellSupport();
  const fileBinds = shells.ok ? prepareToolShells(join(input.gateDir, 'tool-shells')) : [];
  const notice = shells.ok
    ? null
    : `tool shells are off: ${shells.why}. A command the agent runs can reach the agent's own process through /proc (its memory, its stdout) and so forge the stream Polly reads (docs/security.md).`;
  const full = { ...spec, ...(fileBinds.length ? { fileBinds } : {}), ...(input.limits ? { limits: input.limits } : {}) };
  return { sandbox: { bwrap: probe.bwrap, spec: full }, warning: null, ...(notice ? { notice } : {}) };
}
