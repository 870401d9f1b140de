/**
 * The sandboxes Polly builds, one function per kind of process: an agent turn (implementer,
 * read-only worker, reviewer) and a command Polly runs in a worktree (acceptance, setup).
 * Pure: paths in, {@link SandboxSpec} out.
 *
 * Common to all: hidden are the real `$HOME` (so `~/.ssh`, `~/.config/gh`, `~/.git-credentials`
 * are absent), the repository's `.polly/` and its worktrees directory (other tasks' worktrees:
 * `.worktrees/`, or `worktrees.dir` wherever it is, inside the repository or beside it), `/run`
 * (host sockets: docker, D-Bus, user sessions), `/var/tmp` (a private scratch tmpfs instead, like
 * `/tmp`: anyone may put files and sockets there) and the host's XDG dirs and TMPDIR wherever they point
 * (./agent-state-dir.ts `hostUserDirs`: every task's and repository's agent state; the worker's own
 * is bound back). Host sockets still in view are covered (./sandbox-spec.ts `coveredSockets`).
 * A process in a linked worktree gets a git read view (./git-read-view.ts, docs/read-view.md):
 * the main checkout is hidden (an empty tmpfs), and the task's private git dir stands in for the
 * common git dir. Without one (a process in the main checkout: explore, doctor's probe) the
 * repository, its git dir included, is visible read-only; a process outside both the repository
 * and the worktrees directory (a reviewer in its scratch dir) sees nothing of the repository.
 * The toolchains installed under HOME (rustup, pyenv, nvm, …) are bound back read-only, their
 * credentials covered, when the caller passes them (./home-toolchains.ts).
 */
import { realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { hostUserDirs } from './agent-state-dir.js';
import type { GitReadView } from './git-read-view.js';
import type { HomeToolchains } from './home-toolchains.js';
import type { SandboxEndpoint, SandboxNetwork, SandboxSpec } from './sandbox-spec.js';

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The paths every sandbox hides for `repoRoot`.
 * @param worktreesDir the absolute worktrees directory (`worktrees.dir`; default `<repoRoot>/.worktrees`).
 * @param userDirs the host's per-user dirs to hide (XDG dirs, TMPDIR) (default {@link hostUserDirs} of `process.env`).
 */
export function commonHidden(repoRoot: string, realHome: string, worktreesDir = join(repoRoot, '.worktrees'), userDirs: readonly string[] = hostUserDirs()): string[] {
  const base = [realHome, join(repoRoot, '.polly'), worktreesDir, '/run', '/var/tmp'];
  // An XDG dir under HOME or /run (the default layout) is hidden already.
  return [...base, ...userDirs.filter((d) => !base.some((b) => inside(d, b)) && !inside(d, '/tmp'))];
}

export interface AgentSandboxInput {
  /** The repository's main checkout. */
  repoRoot: string;
  /** The agent's working directory: its worktree, the repository (explore), or a review scratch dir. */
  cwd: string;
  /** True for implement: `cwd` is writable. Read-only roles get `cwd` read-only. */
  writableCwd: boolean;
  /** The agent's own state (CLI config dirs, sessions); read-write. Its `home/` is the private HOME. */
  agentStateDir: string;
  /**
   * The gate's files for this worker (config, shims, hook settings, and the runner's decision
   * socket `gate.sock`: a connect needs no write access): read-only, even inside a writable dir.
   * Nothing of `.polly/` is writable: the decision log is the runner's (gate/hooks/gate-server.ts).
   */
  gateDir: string;
  /** The model endpoints the agent may reach. */
  endpoints: SandboxEndpoint[];
  /** The real `$HOME` (hidden). */
  realHome: string;
  /** See {@link SandboxSpec.gitMetadata}; default read-only. */
  gitMetadata?: SandboxSpec['gitMetadata'];
  /** The absolute worktrees directory (`worktrees.dir`); default `<repoRoot>/.worktrees`. */
  worktreesDir?: string;
  /** Toolchains under the real HOME to bind back read-only (./home-toolchains.ts); default none. */
  homeToolchains?: HomeToolchains;
  /** The host's per-user dirs to hide (XDG dirs, TMPDIR); default ./agent-state-dir.ts `hostUserDirs(process.env)`. */
  userDirs?: readonly string[];
  /** The git read view of `cwd` (./git-read-view.ts `prepareGitReadView`); absent or null: none. */
  gitView?: GitReadView | null;
  /** `workers.tool_paths`: more host paths shown read-only (./system-view.ts shows the rest); default none. */
  toolPaths?: readonly string[];
}

/**
 * `spec` with the toolchains under HOME bound back read-only, their credentials covered and their
 * variables set (./home-toolchains.ts). Pure.
 */
export function withHomeToolchains(spec: SandboxSpec, toolchains: HomeToolchains | undefined): SandboxSpec {
  if (!toolchains || (toolchains.readOnly.length === 0 && Object.keys(toolchains.env).length === 0)) return spec;
  return {
    ...spec,
    readOnly: [...spec.readOnly, ...toolchains.readOnly],
    hidden: [...spec.hidden, ...toolchains.maskedDirs],
    maskedFiles: [...(spec.maskedFiles ?? []), ...toolchains.maskedFiles],
    env: { ...spec.env, ...toolchains.env },
  };
}

/**
 * The sandbox of one agent turn. A worktree (inside the repository, or in a worktrees directory
 * beside it) sees the repository read-only, as git needs its common dir; a reviewer (cwd outside
 * both) sees its scratch dir and nothing of the repository; other scratch dirs next to it are hidden.
 */
export function agentSandboxSpec(input: AgentSandboxInput): SandboxSpec {
  const worktreesDir = input.worktreesDir ?? join(input.repoRoot, '.worktrees');
  const outside = !inside(input.cwd, input.repoRoot) && !inside(input.cwd, worktreesDir);
  const hidden = commonHidden(input.repoRoot, input.realHome, worktreesDir, input.userDirs);
  if (outside) hidden.push(input.repoRoot, dirname(input.cwd));
  const writable = [input.agentStateDir, join(input.agentStateDir, 'home')];
  const view = outside ? null : (input.gitView ?? null);
  // With a read view the main checkout is hidden and the view stands in for the git dir; without
  // one the repository is read-only (under a hidden HOME or /tmp it would vanish otherwise).
  if (view) hidden.push(input.repoRoot);
  const readOnly = outside || view || (input.writableCwd && input.cwd === input.repoRoot) ? [input.gateDir] : [input.repoRoot, input.gateDir];
  readOnly.push(...(input.toolPaths ?? []));
  if (input.writableCwd) writable.push(input.cwd);
  else readOnly.push(input.cwd);
  return withHomeToolchains(
    {
      cwd: input.cwd,
      writable,
      readOnly,
      hidden,
      home: join(input.agentStateDir, 'home'),
      // The runner's decision socket: the one socket outside the writable dirs the agent reaches.
      reachableSockets: [join(input.gateDir, 'gate.sock')],
      tmpDir: null,
      network: { mode: 'endpoints', endpoints: input.endpoints },
      gitMetadata: input.gitMetadata ?? { mode: 'read-only' },
      ...(view ? { gitView: view } : {}),
    },
    input.homeToolchains,
  );
}

export interface CommandSandboxInput {
  repoRoot: string;
  /** The worktree the command runs in (writable). */
  worktree: string;
  /** A private dir for the command's HOME (`<dir>/home`, writable). */
  stateDir: string;
  /**
   * `acceptance.network` / `worktrees.setup_network`: true gives outbound network through pasta
   * (./outbound-network.ts), never the host's loopback; false: loopback only.
   */
  network: boolean;
  /** The pasta executable (a successful `probeOutboundNetwork`); required when `network` is true. */
  pasta?: string;
  realHome: string;
  gitMetadata?: SandboxSpec['gitMetadata'];
  /** The absolute worktrees directory (`worktrees.dir`); default `<repoRoot>/.worktrees`. */
  worktreesDir?: string;
  /** Toolchains under the real HOME to bind back read-only (./home-toolchains.ts); default none. */
  homeToolchains?: HomeToolchains;
  /** The host's per-user dirs to hide (XDG dirs, TMPDIR); default ./agent-state-dir.ts `hostUserDirs(process.env)`. */
  userDirs?: readonly string[];
  /** The git read view of `worktree` (./git-read-view.ts `prepareGitReadView`); absent or null: none. */
  gitView?: GitReadView | null;
  /** `workers.tool_paths`: more host paths shown read-only (./system-view.ts shows the rest); default none. */
  toolPaths?: readonly string[];
}

/** Where /etc/resolv.conf really is (it may point into the hidden /run): bound back read-only for a networked command. */
function resolvConf(): string {
  try {
    return realpathSync('/etc/resolv.conf');
  } catch {
    return '/etc/resolv.conf';
  }
}

/**
 * The sandbox of an acceptance or setup command: the worktree writable, no network unless config
 * allows, and then outbound only. The main checkout is hidden when the command runs in a linked
 * worktree with a git read view, or in a directory outside the repository and its worktrees dir
 * (a scratch checkout); it is read-only only for a command in the main checkout itself (doctor).
 * @throws PollyError `internal` when `network` is true without `pasta`.
 */
export function commandSandboxSpec(input: CommandSandboxInput): SandboxSpec {
  if (input.network && !input.pasta)
    throw new PollyError('internal', 'commandSandboxSpec: network is on but no pasta executable was given; probe it with probeOutboundNetwork() first');
  const network: SandboxNetwork = input.network && input.pasta ? { mode: 'outbound', pasta: input.pasta } : { mode: 'none' };
  const home = join(input.stateDir, 'home');
  const view = input.gitView ?? null;
  const hidden = commonHidden(input.repoRoot, input.realHome, input.worktreesDir, input.userDirs);
  // A scratch checkout outside both the repository and the worktrees dir (the local PR checks'
  // merge of a PR with its base) needs nothing of the repository: hidden whole, like a reviewer's.
  const outside = !inside(input.worktree, input.repoRoot) && !inside(input.worktree, input.worktreesDir ?? join(input.repoRoot, '.worktrees'));
  const hideRepo = view !== null || outside;
  if (hideRepo) hidden.push(input.repoRoot);
  return withHomeToolchains(
    {
      cwd: input.worktree,
      writable: [input.worktree, home],
      readOnly: [...(hideRepo ? [] : [input.repoRoot]), ...(input.network ? [resolvConf()] : []), ...(input.toolPaths ?? [])],
      hidden,
      home,
      tmpDir: null,
      network,
      gitMetadata: input.gitMetadata ?? { mode: 'read-only' },
      ...(view ? { gitView: view } : {}),
    },
    input.homeToolchains,
  );
}

/**
 * The model endpoints named by an agent's environment and config: every `*_BASE_URL` variable
 * (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, …) and the configured provider URLs; when none is set,
 * the vendors' public APIs (`api.anthropic.com:443`, `api.openai.com:443`, `chatgpt.com:443`).
 */
export function modelEndpoints(
  env: Record<string, string | undefined>,
  configuredUrls: readonly (string | null | undefined)[],
  parse: (url: string) => SandboxEndpoint | null,
): SandboxEndpoint[] {
  const urls = [
    ...Object.entries(env)
      .filter(([k, v]) => /_BASE_URL$/.test(k) && v)
      .map(([, v]) => v as string),
    ...configuredUrls.filter((u): u is string => !!u),
  ];
  const out: SandboxEndpoint[] = [];
  const seen = new Set<string>();
  const add = (e: SandboxEndpoint | null): void => {
    if (!e) return;
    const key = `${e.host}:${e.port}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(e);
    }
  };
  for (const u of urls) add(parse(u));
  if (!env.ANTHROPIC_BASE_URL) add({ host: 'api.anthropic.com', port: 443 });
  if (!env.OPENAI_BASE_URL && configuredUrls.every((u) => !u)) {
    add({ host: 'api.openai.com', port: 443 });
    add({ host: 'chatgpt.com', port: 443 });
  }
  return out;
}
