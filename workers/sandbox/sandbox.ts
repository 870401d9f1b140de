/**
 * The one sandbox Polly owns around everything that runs code a worker controls: the agent CLIs,
 * acceptance commands, `worktrees.setup` commands and reviewers (Linux: bubblewrap, run directly).
 *
 * - {@link probeSandbox}: can bubblewrap start a sandbox here? Probed once per process and bwrap
 *   path (a real `bwrap … true`), then cached.
 * - {@link decideConfinement}: fail closed. No sandbox → PollyError `sandbox_unavailable` saying
 *   how to fix it, unless config sets `workers.allow_unconfined: true` (then a warning to record).
 * - {@link confineCommand}: the command line, environment and clean-up that run one command inside
 *   a {@link SandboxSpec}. Synchronous, so `spawn` can follow at once.
 *
 * Why bubblewrap directly and not `@anthropic-ai/sandbox-runtime` (0.0.83): that package requires
 * Node ≥ 22.12 (`engines`; Polly supports Node 20) and, on Linux, `socat` for its unix-socket
 * bridges (not a Debian default; not installed here), while what Polly needs from it is one
 * bwrap command line and a ~100-line bridge (net-bridge.ts, sandbox-init.ts) in Node itself.
 */
import { hostSocketPaths } from './host-sockets.js';
import { seccompProgramFile, withSeccomp } from './seccomp-filter.js';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { distPath, packageRoot } from '../../brain/core/install-paths.js';
import { openNetBridge } from './net-bridge.js';
import { outboundCommand } from './outbound-network.js';
import { resolveSandboxExecutable } from './sandbox-executable.js';
import { systemView } from './system-view.js';
import { toolShellSupport, type ToolShellSupport } from './tool-shell.js';
import { bwrapArgs, type BwrapHardening, type SandboxSpec } from './sandbox-spec.js';
import { boundHit, createRunCgroup, exitBoundHits, insideBoundsArgv, probeBoundsMechanism, type BoundHit, type BoundsMechanism, type RunCgroup } from './resource-bounds.js';

/** The outcome of probing: a working bwrap, or why not and how to fix it. */
export type SandboxProbe = { ok: true; bwrap: string } | { ok: false; reason: string; fix: string };

const probes = new Map<string, SandboxProbe>();

function findBwrap(pathVar: string | undefined): string | null {
  for (const dir of (pathVar ?? '/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const p = join(dir, 'bwrap');
    if (existsSync(p)) return p;
  }
  return null;
}

function readSysctl(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * The sysctls that block unprivileged user namespaces on this kernel, as `name=value-to-set`, only
 * those whose `/proc/sys` file exists and currently blocks (Debian's
 * `kernel.unprivileged_userns_clone`, Ubuntu's `kernel.apparmor_restrict_unprivileged_userns`,
 * and `user.max_user_namespaces`; see user_namespaces(7)).
 */
export function blockingSysctls(read: (path: string) => string | null = readSysctl): string[] {
  const out: string[] = [];
  if (read('/proc/sys/kernel/unprivileged_userns_clone') === '0') out.push('kernel.unprivileged_userns_clone=1');
  if (read('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') === '1') out.push('kernel.apparmor_restrict_unprivileged_userns=0');
  if (read('/proc/sys/user/max_user_namespaces') === '0') out.push('user.max_user_namespaces=15000');
  return out;
}

/**
 * Probe whether bubblewrap can start Polly's sandbox here, by running it (`bwrap --ro-bind / /
 * --unshare-pid --unshare-net … true`). Cached per bwrap path for the life of the process.
 * The one probe: the worker runner, the checks' sandbox and `polly doctor` all ask it.
 * @param options.bwrap  the bwrap executable (default: `bwrap` on `options.path`); tests point it elsewhere.
 * @param options.path  the PATH to find `bwrap` on (default: this process's; `polly doctor` gives its env's).
 * @param options.refresh  probe again instead of using the cached answer.
 */
export function probeSandbox(options: { bwrap?: string; path?: string; refresh?: boolean } = {}): SandboxProbe {
  const bwrap = options.bwrap ?? findBwrap(options.path ?? process.env.PATH);
  const key = bwrap ?? `(no bwrap on ${options.path ?? process.env.PATH ?? ''})`;
  const cached = probes.get(key);
  if (cached && !options.refresh) return cached;
  let probe: SandboxProbe;
  if (process.platform !== 'linux') {
    probe = {
      ok: false,
      reason: `Polly's sandbox needs Linux bubblewrap; this is ${process.platform}`,
      fix: 'run Polly on Linux (a VM or container is fine), or set `workers: {allow_unconfined: true}` in .polly/config.yaml to run workers without the OS sandbox',
    };
  } else if (!bwrap || !existsSync(bwrap)) {
    probe = {
      ok: false,
      reason: `bubblewrap is not installed (no ${bwrap ?? 'bwrap on PATH'})`,
      fix: 'install it: `apt-get install bubblewrap` (Debian, Ubuntu), `dnf install bubblewrap` (Fedora), `pacman -S bubblewrap` (Arch)',
    };
  } else {
    const r = spawnSync(bwrap, ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--unshare-net', '--die-with-parent', '--cap-drop', 'ALL', 'true'], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (r.status === 0) probe = { ok: true, bwrap };
    else {
      const said = `${r.error?.message ?? ''}${r.stderr ?? ''}`.trim().split('\n').at(-1) ?? '';
      const sysctls = blockingSysctls();
      probe = {
        ok: false,
        reason: `${bwrap} cannot create a sandbox here (exit ${r.status ?? r.signal}: ${said || 'no message'})`,
        fix:
          sysctls.length > 0
            ? `allow unprivileged user namespaces: \`sysctl -w ${sysctls.join(' ')}\` (persist it in /etc/sysctl.d/), or run Polly as root`
            : 'run Polly where bubblewrap can create namespaces (a container needs e.g. `--security-opt seccomp=unconfined` or `--privileged`)',
      };
    }
  }
  probes.set(key, probe);
  return probe;
}

const hardenings = new Map<string, BwrapHardening>();

/**
 * What `bwrap` supports beyond the baseline, found by running it once (cached per path for the
 * life of the process): `--unshare-user --disable-userns` works with bubblewrap ≥ 0.8.0 when it is
 * not setuid (Debian bookworm ships 0.8.0; bullseye 0.4.1 and Ubuntu 22.04's 0.6.1 answer
 * "Unknown option"). Where it does not work the sandbox runs without it: new user namespaces inside
 * stay allowed there (mounts Polly made stay locked in them), rather than no sandbox at all.
 */
export function bwrapHardening(bwrap: string): BwrapHardening {
  const cached = hardenings.get(bwrap);
  if (cached) return cached;
  const r = spawnSync(bwrap, ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-user', '--disable-userns', '--die-with-parent', '--cap-drop', 'ALL', 'true'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  const hardening = { disableUserns: r.status === 0 };
  hardenings.set(bwrap, hardening);
  return hardening;
}

/** What {@link warmSandbox} found: each probe's answer, as the turn that follows will use it. */
export interface WarmedSandbox {
  sandbox: SandboxProbe;
  /** The Landlock tool shells (./tool-shell.ts `toolShellSupport`). */
  toolShells: ToolShellSupport;
  /** The resource bounds mechanism (./resource-bounds.ts `probeBoundsMechanism`). */
  bounds: BoundsMechanism;
}

/**
 * Pay this process's one-time sandbox probes now rather than at its first sandbox: bubblewrap
 * ({@link probeSandbox}), its hardening ({@link bwrapHardening}), the Landlock tool shells
 * (./tool-shell.ts `toolShellSupport`, a perl process), the resource bounds mechanism
 * (./resource-bounds.ts `probeBoundsMechanism`) and the seccomp filter file
 * (./seccomp-filter.ts `seccompProgramFile`). A standby worker runner calls it while it waits for
 * its turn (workers/supervisor/worker-runner.ts), so the dispatch that claims it does not wait on
 * them. Each result is cached as at first use (a failed probe too: the turn then fails closed as it
 * would have); never throws.
 * @returns what the probes answered, or null when one threw (it is then retried at first use, where its error is reported).
 */
export function warmSandbox(): WarmedSandbox | null {
  try {
    const sandbox = probeSandbox();
    if (sandbox.ok) bwrapHardening(sandbox.bwrap);
    const toolShells = toolShellSupport();
    const bounds = probeBoundsMechanism();
    seccompProgramFile();
    return { sandbox, toolShells, bounds };
  } catch {
    return null;
  }
}

/** What {@link decideConfinement} decided for one dispatch. */
export interface Confinement {
  /** True: run inside the sandbox. False only with `workers.allow_unconfined: true`. */
  confined: boolean;
  /** Set when unconfined: the warning to print at this dispatch and record on the task and PR. */
  warning: string | null;
}

/**
 * Fail closed: confined when the sandbox works; otherwise unconfined only when the config allows
 * it (with a warning), else a PollyError.
 * @throws PollyError `sandbox_unavailable` naming the reason and the fix.
 */
export function decideConfinement(allowUnconfined: boolean, probe: SandboxProbe = probeSandbox()): Confinement {
  if (probe.ok) return { confined: true, warning: null };
  if (allowUnconfined) {
    return {
      confined: false,
      warning: `WARNING: running workers WITHOUT Polly's OS sandbox (workers.allow_unconfined: true): ${probe.reason}. A worker can read your credentials and write outside its worktree. Polly then cannot tell a worker's ref change from yours: a commit or branch you make in this repository while a worker's step runs is put back like a worker's (its value kept under refs/polly/quarantine/) and fails the task, so do not commit here while workers run.`,
    };
  }
  throw new PollyError(
    'sandbox_unavailable',
    `Polly refuses to dispatch: ${probe.reason}, and workers must run in Polly's OS sandbox. To fix: ${probe.fix}. ` +
      'To run without it anyway, set `workers: {allow_unconfined: true}` in .polly/config.yaml (every dispatch then warns, and the task and its PR record it).',
  );
}

/** A command ready to spawn inside the sandbox. */
export interface ConfinedCommand {
  command: string;
  args: string[];
  /** The environment for the spawn: the caller's, plus HOME, TMPDIR and any proxy variables. */
  env: Record<string, string>;
  /** Close the network bridge and remove its socket dir and cgroup (idempotent; call after the process exited). */
  dispose(): void;
  /**
   * The resource bounds (spec `limits`, ./resource-bounds.ts) the run hit, from its cgroup and its
   * end (exit status, output). Call after it exited and before {@link dispose}. Empty without limits.
   */
  boundHits(exit: { exitCode: number | null; signal?: string | null }, output: string): BoundHit[];
}

/** The bounds of `spec.limits` around one confined run: the argv inside bwrap, the cgroup around it. */
function runBounds(spec: SandboxSpec): { inside: string[]; cgroup: RunCgroup | null; hits: ConfinedCommand['boundHits'] } {
  if (!spec.limits) return { inside: [], cgroup: null, hits: () => [] };
  const limits = spec.limits;
  const mechanism = probeBoundsMechanism();
  const cgroup = createRunCgroup(mechanism, limits);
  return {
    inside: insideBoundsArgv(mechanism, limits),
    cgroup,
    hits: (exit, output) => [...new Set([...(cgroup?.hits() ?? []), ...exitBoundHits(exit, output, mechanism)])].map((b) => boundHit(b, limits)),
  };
}

function withCgroup(cgroup: RunCgroup | null, argv: string[]): { command: string; args: string[] } {
  const [command, ...args] = cgroup ? [...cgroup.prefix, ...argv] : argv;
  return { command: command!, args };
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Wrap `command args` in bubblewrap for `spec`, on an empty root that shows of the host only the
 * system view (./system-view.ts: system dirs, the parts of /etc programs need, the toolchains on
 * `env.PATH`) and the spec's paths. Polly's install and Node's prefix are bound read-only on top (the gate's hooks run from them inside, even when they live under a hidden
 * HOME), and so is `command`'s own package when it is installed where the sandbox hides (under the
 * real HOME or /tmp: ./sandbox-executable.ts; it then runs by its real path); with `endpoints`
 * network the bridge is opened now and Polly's sandbox init runs first inside; with `outbound`
 * network bwrap runs behind pasta (./outbound-network.ts). Every sandboxed process runs under
 * Polly's seccomp filter (./seccomp-filter.ts: no tracing, no reading another process's memory or
 * fds), loaded by bwrap through a `/bin/sh` that opens it on fd 9. `bwrap` comes from a successful
 * {@link probeSandbox}.
 * The spec's `env` (toolchain roots bound from the real HOME) is set where `env` does not set them.
 * The host's path-bound unix sockets are read now (./host-sockets.ts) and each one the sandbox
 * would show is covered (./sandbox-spec.ts `coveredSockets`).
 */
export function confineCommand(bwrap: string, spec: SandboxSpec, command: string, args: readonly string[], env: Record<string, string>): ConfinedCommand {
  const nodePrefix = dirname(dirname(realOrSelf(process.execPath)));
  // Polly's dependencies where they really are (a node_modules linked elsewhere: pnpm, a shared install).
  const modules = realOrSelf(join(packageRoot(), 'node_modules'));
  const runtime = [packageRoot(), ...(nodePrefix === '/' ? [] : [nodePrefix]), ...(modules.startsWith(`${packageRoot()}/`) ? [] : [modules])];
  // What of the host the sandbox shows besides the spec's paths (./system-view.ts): system dirs,
  // the parts of /etc programs need, the toolchains on the sandboxed PATH. Nothing else.
  const system = systemView({ pathVar: env.PATH ?? spec.env?.PATH, hidden: spec.hidden });
  const program = resolveSandboxExecutable(command, env, spec.cwd, spec.hidden, [...spec.writable, ...spec.readOnly, ...runtime], system.binds);
  const withRuntime: SandboxSpec = { ...spec, readOnly: [...spec.readOnly, ...runtime, ...program.readOnly] };
  const sandboxArgs = (extraBinds: string[]) => bwrapArgs(withRuntime, existsSync, extraBinds, bwrapHardening(bwrap), hostSocketPaths(), system);
  const outEnv: Record<string, string> = { ...spec.env, ...env, HOME: spec.home, TMPDIR: spec.tmpDir ?? '/tmp' };
  const bounds = runBounds(spec);
  if (spec.network.mode === 'outbound') {
    // bwrap inside a network namespace of pasta's: outbound only, not the host's loopback (./outbound-network.ts).
    const dir = mkdtempSync(join(tmpdir(), 'polly-net-'));
    const inner = withSeccomp([bwrap, ...sandboxArgs([]), '--', ...bounds.inside, program.command, ...args]);
    const wrapped = outboundCommand(spec.network.pasta, dir, inner, process.geteuid?.() === 0);
    return {
      ...withCgroup(bounds.cgroup, [wrapped.command, ...wrapped.args]),
      env: outEnv,
      boundHits: bounds.hits,
      dispose: () => {
        bounds.cgroup?.dispose();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (spec.network.mode !== 'endpoints' || spec.network.endpoints.length === 0) {
    const argv = withSeccomp([bwrap, ...sandboxArgs([]), '--', ...bounds.inside, program.command, ...args]);
    return { ...withCgroup(bounds.cgroup, argv), env: outEnv, boundHits: bounds.hits, dispose: () => bounds.cgroup?.dispose() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'polly-net-'));
  const bridge = openNetBridge(spec.network.endpoints, dir);
  const init = distPath('workers', 'sandbox', 'sandbox-init.js');
  if (!existsSync(init)) {
    bridge.close();
    bounds.cgroup?.dispose();
    rmSync(dir, { recursive: true, force: true });
    throw new PollyError('not_built', `the sandbox init ${init} is not built. Run "npm run build" first.`);
  }
  let disposed = false;
  const argv = withSeccomp([bwrap, ...sandboxArgs([dir]), '--', ...bounds.inside, process.execPath, init, JSON.stringify(bridge.inside), program.command, ...args]);
  return {
    ...withCgroup(bounds.cgroup, argv),
    env: { ...outEnv, ...bridge.env },
    boundHits: bounds.hits,
    dispose() {
      if (disposed) return;
      disposed = true;
      bridge.close();
      bounds.cgroup?.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
