/**
 * The sandbox and environment of a command Polly runs in a worktree on a worker's behalf: an
 * acceptance command (`acceptance.network`) or the `worktrees.setup` command
 * (`worktrees.setup_network`). Both run code the worker may have written or chosen.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import type { AgentSandbox } from '../agents/agent-adapter.js';
import { hostUserDirs, repoStateDir } from './agent-state-dir.js';
import { PollyError } from '../../brain/core/errors.js';
import { probeOutboundNetwork, type OutboundNetworkProbe } from './outbound-network.js';
import { decideConfinement, probeSandbox, type SandboxProbe } from './sandbox.js';
import { detectHomeToolchains } from './home-toolchains.js';
import { commandSandboxSpec } from './sandbox-profiles.js';
import { prepareGitReadView } from './git-read-view.js';
import { workerEnv } from './worker-env.js';
import type { ResourceLimits } from './resource-bounds.js';

export interface CommandSandboxInput {
  repoRoot: string;
  worktree: string;
  /** The network switch from config for this kind of command. */
  network: boolean;
  /** `workers.allow_unconfined`. */
  allowUnconfined: boolean;
  /** `workers.env_passthrough`. */
  passthrough?: readonly string[];
  /** Variables the command gets on top of the allowlist (PORT, POLLY_TASK_ID…). */
  extraEnv?: Record<string, string>;
  /** Where the private HOME goes (default `<repoStateDir>/commands/<worktree name>`). */
  stateDir?: string;
  /** The real HOME to hide (default `os.homedir()`). */
  realHome?: string;
  /** The absolute worktrees directory (`worktrees.dir`), hidden but for `worktree`; default `<repoRoot>/.worktrees`. */
  worktreesDir?: string;
  /** Default: the cached {@link probeSandbox}. */
  probe?: SandboxProbe;
  /** With `network` on, confined. Default: the cached {@link probeOutboundNetwork}. */
  networkProbe?: OutboundNetworkProbe;
  /** Where allowlisted values come from (default `process.env`). */
  baseEnv?: NodeJS.ProcessEnv;
  /** `workers.limits` (./resource-bounds.ts; defaults for missing keys). Absent: no bounds. */
  limits?: ResourceLimits;
  /** Where the git read views live (./git-read-view.ts); default `<repoStateDir>/read-view`. */
  readViewDir?: string;
  /** `workers.tool_paths`: more host paths the sandbox shows read-only. */
  toolPaths?: readonly string[];
}

/**
 * Decide and build the sandbox and environment for one command.
 * @returns `sandbox` (null when unconfined), the allowlisted `env` (private HOME), and a `warning` when unconfined.
 * With `network` on, the confined command gets outbound network only (./outbound-network.ts).
 * The toolchains installed under the real HOME are bound back read-only and their root variables
 * are in `env` (./home-toolchains.ts), so a check runs the developer's `cargo`, `python`, `node`.
 * In a linked worktree the command gets the task's git read view (./git-read-view.ts): the main
 * checkout hidden, a private git dir in place of the repository's.
 * @throws PollyError `sandbox_unavailable` when the sandbox cannot start and unconfined runs are
 *   not allowed, when `network` is on and pasta cannot start (naming the fix), or when the git
 *   read view cannot be built.
 */
export async function commandSandbox(input: CommandSandboxInput): Promise<{ sandbox: AgentSandbox | null; env: Record<string, string>; warning: string | null }> {
  const probe = input.probe ?? probeSandbox();
  const decision = decideConfinement(input.allowUnconfined, probe);
  const stateDir = input.stateDir ?? join(repoStateDir(input.repoRoot), 'commands', basename(input.worktree));
  const home = join(stateDir, 'home');
  mkdirSync(home, { recursive: true });
  const env = workerEnv(input.extraEnv ?? {}, { home, ...(input.passthrough ? { passthrough: input.passthrough } : {}), ...(input.baseEnv ? { base: input.baseEnv } : {}) });
  // The toolchains under the real HOME (rustup, pyenv, nvm, …): bound back read-only, and their
  // roots named, since the private HOME would make each manager look in the wrong place.
  const realHome = input.realHome ?? homedir();
  const homeToolchains = detectHomeToolchains(realHome, input.baseEnv ?? process.env);
  for (const [k, v] of Object.entries(homeToolchains.env)) if (env[k] === undefined) env[k] = v;
  if (!decision.confined || !probe.ok) return { sandbox: null, env, warning: decision.warning };
  let pasta: string | undefined;
  if (input.network) {
    const net = input.networkProbe ?? probeOutboundNetwork();
    if (!net.ok) {
      throw new PollyError(
        'sandbox_unavailable',
        `Polly refuses to run a command with network on (\`acceptance.network\` or \`worktrees.setup_network\` is true): ${net.reason}. To fix: ${net.fix}.`,
      );
    }
    pasta = net.pasta;
  }
  const spec = commandSandboxSpec({
    repoRoot: input.repoRoot,
    worktree: input.worktree,
    stateDir,
    network: input.network,
    ...(pasta ? { pasta } : {}),
    realHome,
    ...(input.worktreesDir ? { worktreesDir: input.worktreesDir } : {}),
    homeToolchains,
    userDirs: hostUserDirs(input.baseEnv ?? process.env),
    ...(input.toolPaths ? { toolPaths: input.toolPaths } : {}),
    gitView: await prepareGitReadView({ repoRoot: input.repoRoot, worktree: input.worktree, ...(input.readViewDir ? { stateDir: input.readViewDir } : {}) }),
  });
  return { sandbox: { bwrap: probe.bwrap, spec: input.limits ? { ...spec, limits: input.limits } : spec }, env, warning: null };
}
