/**
 * What one confined process may see and reach: the data a {@link SandboxSpec} holds, and the pure
 * translation into bubblewrap's command line ({@link bwrapArgs}).
 *
 * Shape of the sandbox (Linux, bubblewrap 0.8; flags from `bwrap --help` and bwrap(1),
 * https://github.com/containers/bubblewrap/blob/main/bwrap.xml):
 * - deny by default: the root is an empty tmpfs, remounted read-only once everything is bound,
 *   and of the host only an allowlist is bound on it read-only: the system directories, the parts
 *   of `/etc` programs need and the toolchains on `PATH` (./system-view.ts `systemView`), then the
 *   spec's own binds; `/home`, `/root`, `/srv`, `/opt`, `/var`, `/mnt`, `/run` and directories beside
 *   the repository are simply not there. A fresh `/dev` and `/proc`, a tmpfs on `/tmp`;
 * - every `hidden` path covered by an empty tmpfs (the real `$HOME`, `.polly/`, `.worktrees/`,
 *   other scratch dirs: they matter where a bound path holds them, e.g. `.polly/` in a repository
 *   bound read-only), remounted read-only after the binds inside it: not readable at all, and a
 *   write there fails with EROFS (`--remount-ro`) rather than vanishing with the tmpfs; `/tmp`
 *   and `/var/tmp` stay writable (the sandbox's own scratch, {@link SCRATCH_DIRS});
 * - every host unix socket the sandbox would still show (under a read-only bind, outside the
 *   worker's writable dirs) covered by `/dev/null` ({@link coveredSockets}): connect(2) needs no
 *   write access, so a read-only view of a socket is a way out;
 * - `readOnly` paths bound back read-only and `writable` paths bound back read-write on top
 *   (mounts are applied from the shallowest path to the deepest, so a read-only file inside a
 *   writable dir stays read-only);
 * - its own PID, IPC, UTS and network namespaces (`--unshare-pid --unshare-ipc --unshare-uts
 *   --unshare-net`): the network is loopback only, and the model endpoints are bridged in by
 *   {@link import('./net-bridge.js')} (with network `outbound`, the namespace is pasta's instead:
 *   {@link import('./outbound-network.js')}); `--die-with-parent` and a new session; every capability
 *   dropped (`--cap-drop ALL`: bwrap run by root would otherwise keep them, and CAP_SYS_ADMIN
 *   could unmount the read-only binds).
 * When the command ends, bwrap's PID 1 exits and the kernel kills every process left in the
 * namespace (`nohup`, `setsid`, double forks included): nothing outlives the turn.
 */

import type { GitReadView } from './git-read-view.js';
import { tmpBytes, type ResourceLimits } from './resource-bounds.js';
import { systemView, type SystemView } from './system-view.js';

/** One model endpoint a confined process may reach, parsed from its base URL. */
export interface SandboxEndpoint {
  /** Host name or IP as written in the URL (`127.0.0.1`, `localhost`, `api.anthropic.com`). */
  host: string;
  /** TCP port (the URL's port, or 443/80 from its scheme). */
  port: number;
}

/** How a confined process reaches the network. */
export type SandboxNetwork =
  /** Loopback only: no route anywhere. */
  | { mode: 'none' }
  /** Only these endpoints (loopback ones bridged to the same address inside; others through an allowlisting CONNECT proxy). */
  | { mode: 'endpoints'; endpoints: SandboxEndpoint[] }
  /**
   * Its own network namespace behind a user-mode stack (pasta, ./outbound-network.ts): the outside
   * is reachable, the host's loopback is not (acceptance/setup commands when config allows network).
   * `pasta`: the executable, from a successful probe.
   */
  | { mode: 'outbound'; pasta: string };

/** Everything a confined process may see. All paths absolute. */
export interface SandboxSpec {
  /** The working directory (the worktree, or a reviewer's scratch dir). */
  cwd: string;
  /** Bound read-write (the worktree or scratch dir, the agent's state dir, its private HOME and TMPDIR). */
  writable: string[];
  /** Bound read-only on top of anything hidden or writable (the gate's config dir, Polly's install). */
  readOnly: string[];
  /** Covered by an empty tmpfs: the real HOME, `.polly/`, `.worktrees/`, other scratch dirs. Missing paths are skipped. */
  hidden: string[];
  /** The private `$HOME` (must be inside `writable`). */
  home: string;
  /**
   * Files covered by an empty one (`/dev/null` bound read-only): credentials inside a `readOnly`
   * directory (./home-toolchains.ts). Missing paths are skipped. Default none.
   */
  maskedFiles?: string[];
  /**
   * Variables set for the confined process on top of its environment (./sandbox.ts
   * `confineCommand`): where the toolchains bound from the real HOME keep their roots
   * (`RUSTUP_HOME`, `PYENV_ROOT`, …; ./home-toolchains.ts). Default none.
   */
  env?: Record<string, string>;
  /**
   * Unix socket files outside `writable` that stay reachable (the gate's `gate.sock`, bound in
   * with its read-only dir). Every other host socket the sandbox would show is covered
   * ({@link coveredSockets}). Default none.
   */
  reachableSockets?: string[];
  /** The private `$TMPDIR` (inside `writable`), or null for the sandbox's own tmpfs `/tmp`. */
  tmpDir: string | null;
  network: SandboxNetwork;
  /**
   * The git metadata policy (c3 owns the design). `read-only`: the repository's common git dir
   * and the worktree's admin dir are read-only (the root is); Polly is the only writer of git
   * metadata. `worktree-admin-writable`: the worktree's own admin dir (`.git/worktrees/<id>`,
   * index and HEAD) is bound read-write on top, refs and objects stay read-only.
   */
  gitMetadata: { mode: 'read-only' } | { mode: 'worktree-admin-writable'; adminDir: string };
  /**
   * The task's private git dir in place of the repository's common git dir (./git-read-view.ts,
   * docs/read-view.md): `viewDir` bound read-only at `commonDir`, the worktree's real admin dir at
   * its own path inside it (read-only, or read-write with `worktree-admin-writable`), the shared
   * base store's objects read-only at their own path, `config.worktree` covered. Absent: the
   * common git dir shows as the root shows it (a process outside any linked worktree).
   */
  gitView?: GitReadView;
  /**
   * Host files bound read-only at other paths, after every other mount: the tool shells
   * (./tool-shell.ts): each shell's real file at `<gateDir>/tool-shells/real/<name>`, then the
   * wrapper over the shell's own path. Default none.
   */
  fileBinds?: Array<{ source: string; path: string }>;
  /**
   * Resource bounds (`workers.limits`, ./resource-bounds.ts): `/tmp`'s tmpfs gets `--size`, and
   * ./sandbox.ts `confineCommand` adds the cgroup and rlimits. Absent: unbounded (tests of the bare spec).
   */
  limits?: ResourceLimits;
}

/**
 * One mount of the sandbox: `tmpfs` (an empty private file system: writes there never reach the
 * host), `rw` (a host path bound read-write), `ro` (bound read-only), `null` (a file covered by
 * an empty one: `/dev/null` bound read-only). Absolute paths. `source`: for an `ro` bind of
 * another host path at `path` (the git read view); absent, the host's `path` itself.
 */
export type SandboxMount = { kind: 'tmpfs' | 'rw' | 'ro' | 'null'; path: string; source?: string };
type Mount = SandboxMount;

const KIND_ORDER: Record<Mount['kind'], number> = { tmpfs: 0, rw: 1, ro: 2, null: 3 };

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

/**
 * The mounts of `spec` in the order bwrap must apply them: shallow before deep, and at equal depth
 * tmpfs, then read-write, then read-only (so read-only wins for the same path). Pure.
 */
export function sandboxMounts(spec: SandboxSpec, exists: (path: string) => boolean): Mount[] {
  const mounts: Mount[] = [];
  const seen = new Set<string>();
  const add = (kind: Mount['kind'], path: string, source?: string): void => {
    const key = `${kind}:${path}:${source ?? ''}`;
    if (seen.has(key) || !exists(source ?? path)) return;
    seen.add(key);
    mounts.push(source ? { kind, path, source } : { kind, path });
  };
  for (const p of spec.hidden) add('tmpfs', p);
  for (const p of spec.writable) add('rw', p);
  const view = spec.gitView;
  if (view) {
    add('ro', view.commonDir, view.viewDir);
    add('ro', view.baseObjects);
    if (spec.gitMetadata.mode !== 'worktree-admin-writable' || spec.gitMetadata.adminDir !== view.adminDir) add('ro', view.adminDir);
  }
  if (spec.gitMetadata.mode === 'worktree-admin-writable') add('rw', spec.gitMetadata.adminDir);
  for (const p of spec.readOnly) add('ro', p);
  for (const p of [...(spec.maskedFiles ?? []), ...(view?.maskedFiles ?? [])]) add('null', p);
  // The git policy (workers/git/git-policy.ts): the worktree's `.git` file sits in the writable
  // worktree; pointed at another git dir, Polly's own `git add` would run that dir's config.
  add('ro', `${spec.cwd.replace(/\/+$/, '')}/.git`);
  return mounts
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.path) - depth(b.m.path) || KIND_ORDER[a.m.kind] - KIND_ORDER[b.m.kind] || a.i - b.i)
    .map(({ m }) => m);
}

/**
 * Every mount a process confined by `spec` gets, in the order bwrap applies them: the base (an
 * empty tmpfs root, the host's system view read-only: ./system-view.ts, without the `PATH`
 * directories, which are read-only too; a tmpfs on `/tmp`) and then {@link sandboxMounts}. The
 * mounts Polly adds when it starts the process (./sandbox.ts `confineCommand`: its install, Node
 * and the toolchains on `PATH` read-only, the network bridge's fresh socket dir) only add what is
 * read-only, or a new temp dir. Reads the system view (cached) and `exists`.
 */
export function appliedMounts(spec: SandboxSpec, exists: (path: string) => boolean): SandboxMount[] {
  const system = systemView({ hidden: spec.hidden });
  return [...baseMounts(system), ...shownCovers(sandboxMounts(spec, exists), system)];
}

/**
 * `mounts` without the covers that hide nothing: a tmpfs over a path that no bind shows and that is
 * not in a scratch dir (under the empty read-only root it is absent anyway, and the cover would
 * only make its name and parents appear: `/root/.local/state/polly`). Kept: the scratch dirs
 * themselves ({@link SCRATCH_DIRS}), and covers inside a bind or a scratch dir, where a write must
 * fail with EROFS rather than land in the sandbox's own `/tmp`. Pure.
 */
function shownCovers(mounts: readonly SandboxMount[], system: SystemView): SandboxMount[] {
  const shown = [...system.binds, ...SCRATCH_DIRS, ...mounts.filter((m) => m.kind === 'rw' || m.kind === 'ro').map((m) => m.path)];
  return mounts.filter((m) => m.kind !== 'tmpfs' || SCRATCH_DIRS.includes(m.path) || shown.some((b) => atOrUnder(m.path, b)));
}

/** The mounts every sandbox starts from: the empty root, the system view read-only, `/tmp`. */
function baseMounts(system: SystemView): SandboxMount[] {
  return [{ kind: 'tmpfs', path: '/' }, ...system.binds.map((path): SandboxMount => ({ kind: 'ro', path })), { kind: 'tmpfs', path: '/tmp' }];
}

/**
 * Whether a process run with `mounts` (in bwrap's order, {@link appliedMounts}) can change the
 * host's file at `path`: the last mount at or above `path` decides, and only a read-write bind
 * writes through to the host (a tmpfs is the sandbox's own; a read-only bind, or a mount point
 * inside a writable one, cannot be written, renamed or removed). Lexical: pass canonical paths
 * (realpath), as bwrap resolves them. Pure.
 */
export function hostWritable(mounts: readonly SandboxMount[], path: string): boolean {
  let kind: SandboxMount['kind'] | null = null;
  for (const m of mounts) {
    const base = m.path === '/' ? '/' : m.path.replace(/\/+$/, '');
    if (path === base || base === '/' || path.startsWith(`${base}/`)) kind = m.kind;
  }
  return kind === 'rw';
}

/**
 * What the bwrap in use can add beyond the baseline (./sandbox.ts `bwrapHardening` finds out).
 * `disableUserns`: `--unshare-user --disable-userns` (bubblewrap ≥ 0.8.0, not setuid): the sandbox
 * gets its own user namespace whose `user.max_user_namespaces` is 1, entered once, so nothing
 * inside can create another (bwrap(1): "--disable-userns … requires --unshare-user";
 * https://github.com/containers/bubblewrap/blob/main/bwrap.xml).
 */
export interface BwrapHardening {
  disableUserns: boolean;
}

/**
 * Hidden paths whose tmpfs stays writable: the sandbox's own scratch (`/tmp` is TMPDIR; `/var/tmp`
 * the other temp dir programs use). Every other cover is remounted read-only.
 */
export const SCRATCH_DIRS: readonly string[] = ['/tmp', '/var/tmp'];

/**
 * bubblewrap's arguments (after the `bwrap` executable, before the command) for `spec`. Pure but
 * for `exists`, which says which paths are there (bwrap fails on a missing bind source, and cannot
 * create a mount point under the read-only root).
 * `extraBinds`: paths bound read-write after everything else (the network bridge's socket dir).
 * `hardening`: what this bwrap supports beyond the baseline ({@link BwrapHardening}).
 * `hostSockets`: the host's path-bound unix sockets, canonical paths (./host-sockets.ts
 * `hostSocketPaths`); each one the sandbox would show is covered ({@link coveredSockets}).
 * `system`: what of the host the sandbox shows besides the spec's own paths (./system-view.ts;
 * default: this host's, with `process.env.PATH`'s toolchains).
 */
export function bwrapArgs(
  spec: SandboxSpec,
  exists: (path: string) => boolean,
  extraBinds: string[] = [],
  hardening: BwrapHardening = { disableUserns: false },
  hostSockets: readonly string[] = [],
  system: SystemView = systemView({ pathVar: process.env.PATH, hidden: spec.hidden }),
): string[] {
  // No `--ro-bind / /`: bwrap's root is an empty tmpfs, and only the allowlist is bound on it.
  const args: string[] = [];
  for (const p of system.binds) args.push('--ro-bind', p, p);
  for (const l of system.symlinks) args.push('--symlink', l.target, l.path);
  args.push('--dev', '/dev', '--proc', '/proc', ...(spec.limits ? ['--size', String(tmpBytes(spec.limits))] : []), '--tmpfs', '/tmp');
  for (const p of system.masked) args.push('--ro-bind', '/dev/null', p);
  for (const p of system.maskedDirs) args.push('--tmpfs', p, '--remount-ro', p);
  const mounts = shownCovers(sandboxMounts(spec, exists), system);
  for (const m of mounts) {
    if (m.kind === 'tmpfs') args.push('--tmpfs', m.path);
    else if (m.kind === 'null') args.push('--ro-bind', '/dev/null', m.path);
    else args.push(m.kind === 'rw' ? '--bind' : '--ro-bind', m.source ?? m.path, m.path);
  }
  // A socket a read-only view still shows is a way out (connect(2) writes nothing): cover each.
  for (const p of coveredSockets([...baseMounts(system), ...mounts], hostSockets, [...(spec.reachableSockets ?? []), ...extraBinds])) args.push('--ro-bind', '/dev/null', p);
  for (const p of extraBinds) args.push('--bind', p, p);
  // The tool shells last: over the root's own shells, inside the read-only gate dir.
  for (const b of spec.fileBinds ?? []) args.push('--ro-bind', b.source, b.path);
  // The covers read-only, once everything inside them is bound: a write there fails with EROFS
  // (which Polly reads as an attempt, brain/task-tools/sandbox-refusals.ts) instead of landing in a
  // tmpfs that vanishes unnoticed. Only the cover's own mount: the binds inside keep their modes.
  // The scratch dirs stay writable: they are the sandbox's own (TMPDIR), hidden or not.
  for (const m of mounts) if (m.kind === 'tmpfs' && !SCRATCH_DIRS.includes(m.path)) args.push('--remount-ro', m.path);
  // The root too: the mount points bwrap made in it stay, nothing else can be created there.
  args.push('--remount-ro', '/');
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts');
  if (hardening.disableUserns) args.push('--unshare-user', '--disable-userns');
  // `outbound`: bwrap runs inside the network namespace pasta made for it (./outbound-network.ts).
  if (spec.network.mode !== 'outbound') args.push('--unshare-net');
  args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--chdir', spec.cwd);
  return args;
}

/** True when `path` is `base` or below it (lexical). */
function atOrUnder(path: string, base: string): boolean {
  const b = base === '/' ? '/' : base.replace(/\/+$/, '');
  return path === b || b === '/' || path.startsWith(`${b}/`);
}

/**
 * Which of the host's `sockets` (canonical paths) a sandbox with `mounts` (in bwrap's order,
 * {@link appliedMounts}) must cover with `/dev/null`: those whose deciding mount (the last at or
 * above the path) is a read-only bind of the host's own path (a system dir, a toolchain dir, a
 * repository bound read-only). Not those under a tmpfs (the empty root, a cover: hidden already), a read-write bind (the worker's own dirs: a socket there
 * is its own), a bind of another path (the git read view: the host's socket is not at that path
 * inside) or an existing cover, nor those at or under `reachable` (the gate's socket, the network
 * bridge's dir). Pure.
 */
export function coveredSockets(mounts: readonly SandboxMount[], sockets: readonly string[], reachable: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const p of sockets) {
    if (reachable.some((r) => atOrUnder(p, r))) continue;
    let decider: SandboxMount | null = null;
    for (const m of mounts) if (atOrUnder(p, m.path)) decider = m;
    if (decider?.kind === 'ro' && !decider.source && !out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * The endpoint a base URL names (`http://127.0.0.1:41234/v1` → `{host: '127.0.0.1', port: 41234}`),
 * or null for a value that is not an http(s) URL.
 */
export function endpointOf(url: string): SandboxEndpoint | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return { host, port };
}

/** True for a host that names this machine's loopback (`127.0.0.0/8`, `localhost`, `::1`). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * The sandbox's keys in `.polly/config.yaml` `workers` (the config schema composes them with each
 * harness's options). Optional for configs written before they existed.
 */
export interface WorkerSandboxOptions {
  /**
   * Run workers, acceptance and setup commands without Polly's OS sandbox when it cannot start
   * (no bubblewrap, user namespaces off, macOS, Windows). Default false: Polly refuses to dispatch.
   */
  allow_unconfined?: boolean;
  /** Resource bounds per sandbox (./resource-bounds.ts); every key has a default. */
  limits?: ResourceLimits;
  /** Names of more environment variables a worker gets from Polly's environment (beyond PATH, LANG, LC_*, TERM, TZ, the model variables). */
  env_passthrough?: string[];
  /**
   * Host paths (absolute) every sandbox shows read-only besides its system view (./system-view.ts):
   * a toolchain that is not on PATH, a config under /etc a tool needs. Default none.
   */
  tool_paths?: string[];
}
