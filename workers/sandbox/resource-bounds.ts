/**
 * Resource bounds per sandbox (`.polly/config.yaml` `workers.limits`): processes, memory, the
 * private `/tmp`'s size, the size of one file, and an agent turn's output (one line, and all of it).
 *
 * Mechanisms, best first, found by trying them on this machine ({@link probeBoundsMechanism},
 * cached per process; `polly doctor` prints {@link describeBoundsMechanism}):
 * - **cgroup v2**: Polly makes one cgroup per sandbox under its own (v2 refuses to enable
 *   controllers below a cgroup that holds processes, so this works where Polly's cgroup is the
 *   root of a writable hierarchy or was delegated to it empty: root on a host, a container with a
 *   private writable cgroup namespace). `pids.max` and `memory.max`; a hit is read from
 *   `pids.events` `max` and `memory.events` `oom_kill` (Documentation/admin-guide/cgroup-v2.rst).
 * - **cgroup v1** (a hybrid hierarchy; root only): the `pids` and `memory` hierarchies, one child of
 *   Polly's own cgroup in each (`pids.max`, `memory.limit_in_bytes`; hits from `pids.events` and
 *   `memory.oom_control` `oom_kill`: Documentation/admin-guide/cgroup-v1/).
 *   `systemd-run --user --scope` is not used: it needs a user manager on a D-Bus (none for root in
 *   a container or a CI job) and names no cgroup Polly could read the hits from afterwards.
 * - **rlimits**, where no cgroup can be made: RLIMIT_NPROC and RLIMIT_DATA, set inside the
 *   sandbox's own user namespace (bwrap `--unshare-user`), so since Linux 5.14 the process count is
 *   the sandbox's own (ucounts per user namespace), not the uid's. The kernel never applies
 *   RLIMIT_NPROC to uid 0 (kernel/fork.c: `real_cred->user != INIT_USER`), so as root without a
 *   cgroup processes are NOT bounded, and the probe says so. RLIMIT_DATA bounds each process's
 *   private writable memory, not the sandbox's sum.
 * Always: `/tmp` is a tmpfs of `tmp_mib` (`bwrap --size`, bubblewrap ≥ 0.5), one file at most
 * `file_size_mib` (RLIMIT_FSIZE: a write past it fails with EFBIG and SIGXFSZ kills the writer),
 * both set with util-linux `prlimit` inside the sandbox; the output bounds are Polly's own reader
 * (workers/agents/agent-process.ts).
 *
 * Not bounded: the worktree's total size (a file system quota would be needed); a full disk is
 * item 6's (brain/core/io-fault.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** `.polly/config.yaml` `workers.limits`: every key optional, each defaulting to {@link DEFAULT_RESOURCE_LIMITS}. */
export interface ResourceLimits {
  /** Processes and threads alive at once in one sandbox. @default 1024 */
  max_processes?: number;
  /** Memory of one sandbox, MiB (cgroup: the sum; rlimit fallback: each process's data). @default 8192 */
  memory_mib?: number;
  /** Size of the sandbox's private `/tmp` (a tmpfs), MiB. @default 1024 */
  tmp_mib?: number;
  /** Largest file a sandboxed process may write, MiB. @default 1024 */
  file_size_mib?: number;
  /** Longest line of an agent turn's stdout kept, KiB; a longer one fails the turn. @default 4096 */
  output_line_kib?: number;
  /** All of an agent turn's stdout, MiB; more fails the turn. @default 256 */
  output_total_mib?: number;
}

/** The defaults of {@link ResourceLimits}. */
export const DEFAULT_RESOURCE_LIMITS: Readonly<Required<ResourceLimits>> = {
  max_processes: 1024,
  memory_mib: 8192,
  tmp_mib: 1024,
  file_size_mib: 1024,
  output_line_kib: 4096,
  output_total_mib: 256,
};

/** `limits` with every default filled in. Pure. */
export function resolveLimits(limits: ResourceLimits | undefined | null): Required<ResourceLimits> {
  const out = { ...DEFAULT_RESOURCE_LIMITS };
  for (const [k, v] of Object.entries(limits ?? {})) if (typeof v === 'number' && v > 0) (out as Record<string, number>)[k] = v;
  return out;
}

/** Which bound was hit. */
export type BoundName = 'processes' | 'memory' | 'tmp' | 'file_size' | 'output_line' | 'output_total';

const BOUND_KEY: Record<BoundName, keyof ResourceLimits> = {
  processes: 'max_processes',
  memory: 'memory_mib',
  tmp: 'tmp_mib',
  file_size: 'file_size_mib',
  output_line: 'output_line_kib',
  output_total: 'output_total_mib',
};

const BOUND_WHAT: Record<BoundName, string> = {
  processes: 'processes bound',
  memory: 'memory bound',
  tmp: '/tmp size bound',
  file_size: 'file size bound',
  output_line: 'output line bound',
  output_total: 'total output bound',
};

/** A bound one sandboxed run hit: which, its limit as configured, the config key that raises it, and the sentence to record. */
export interface BoundHit {
  bound: BoundName;
  /** The limit in force, e.g. `1024 processes`, `1024 MiB`. */
  limit: string;
  /** The config key, e.g. `workers.limits.max_processes`. */
  key: string;
  /** `the sandbox hit its processes bound (1024 processes): …; raise workers.limits.max_processes …`. */
  message: string;
}

/** The {@link BoundHit} for `bound` under `limits`. Pure. */
export function boundHit(bound: BoundName, limits: ResourceLimits | undefined | null): BoundHit {
  const l = resolveLimits(limits);
  const k = BOUND_KEY[bound];
  const unit = k === 'max_processes' ? 'processes' : k === 'output_line_kib' ? 'KiB' : 'MiB';
  const limit = `${l[k]} ${unit}`;
  const key = `workers.limits.${k}`;
  return {
    bound,
    limit,
    key,
    message: `the sandbox hit its ${BOUND_WHAT[bound]} (${limit}, ${key}): the run was stopped or its writes failed. If the task needs more, raise ${key} in .polly/config.yaml; otherwise the work itself is at fault (a runaway loop, a fork bomb, a huge file or output)`,
  };
}

/** One cgroup hierarchy Polly can make per-sandbox cgroups in: its own cgroup's directory there. */
interface CgroupBase {
  controller: 'pids' | 'memory';
  /** Polly's own cgroup directory in that hierarchy (children are made here). */
  dir: string;
}

/** What is in force on this machine (see the module doc). */
export interface BoundsMechanism {
  /** `cgroup-v2`, `cgroup-v1`, or `rlimit` for processes and memory. */
  kind: 'cgroup-v2' | 'cgroup-v1' | 'rlimit';
  /** Where per-sandbox cgroups are made (empty for `rlimit`). */
  cgroups: CgroupBase[];
  /** util-linux `prlimit`, or null (then no rlimit is set: file size and the rlimit fallback are off). */
  prlimit: string | null;
  /** True when processes are bounded (false: rlimit as uid 0, or no prlimit). */
  processesBounded: boolean;
  /** Why `cgroup` was not used, for `polly doctor` (null when a cgroup is in use). */
  cgroupWhyNot: string | null;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Mount points of cgroup file systems, from /proc/self/mountinfo (proc(5)): v2 and each v1 controller. */
function cgroupMounts(): { v2: string | null; v1: Map<string, string> } {
  const v1 = new Map<string, string>();
  let v2: string | null = null;
  for (const line of (read('/proc/self/mountinfo') ?? '').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4];
    const [fstype, , superOpts] = right.split(' ');
    if (!mountPoint) continue;
    if (fstype === 'cgroup2' && v2 === null) v2 = mountPoint;
    if (fstype === 'cgroup') for (const opt of (superOpts ?? '').split(',')) if (opt === 'pids' || opt === 'memory') v1.set(opt, mountPoint);
  }
  return { v2, v1 };
}

/** Polly's own cgroup paths, from /proc/self/cgroup (`0::/path` for v2, `N:pids:/path` for v1). */
function ownCgroups(): { v2: string | null; v1: Map<string, string> } {
  const v1 = new Map<string, string>();
  let v2: string | null = null;
  for (const line of (read('/proc/self/cgroup') ?? '').split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3]!;
    for (const c of m[2]!.split(',')) if (c === 'pids' || c === 'memory') v1.set(c, m[3]!);
  }
  return { v2, v1 };
}

/**
 * Try to make a child cgroup under `dir` with `file` in it and move a process into it, as every
 * sandbox start will (a shell writing its own pid to `cgroup.procs`), then remove it: true when all
 * of that works. A cgroup that can be made but not joined (v2 outside a delegated subtree) would
 * otherwise fail every sandbox start instead of falling back to rlimits.
 */
function canMakeChild(dir: string, file: string): boolean {
  const probe = join(dir, `polly-probe-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    mkdirSync(probe);
  } catch {
    return false;
  }
  const ok = existsSync(join(probe, file)) && spawnSync('/bin/sh', ['-c', 'echo $$ > "$1"', 'polly-probe', join(probe, 'cgroup.procs')], { stdio: 'ignore' }).status === 0;
  removeCgroup(probe);
  return ok;
}

function findPrlimit(): string | null {
  for (const p of ['/usr/bin/prlimit', '/bin/prlimit', '/usr/local/bin/prlimit']) if (existsSync(p)) return p;
  return null;
}

/** `dir` as the base of per-sandbox v2 cgroups, or null with the reason pushed to `reasons`. */
function v2Base(dir: string, prlimit: string | null, reasons: string[]): BoundsMechanism | null {
  const controllers = (read(join(dir, 'cgroup.controllers')) ?? '').split(/\s+/);
  if (!controllers.includes('pids') || !controllers.includes('memory')) {
    reasons.push(`cgroup v2 at ${dir} has no pids and memory controllers (${controllers.join(' ').trim() || 'none'})`);
    return null;
  }
  try {
    // v2 refuses (EBUSY) when this cgroup holds processes and is not the root.
    writeFileSync(join(dir, 'cgroup.subtree_control'), '+pids +memory');
  } catch (error) {
    reasons.push(`cgroup v2: cannot enable pids and memory below ${dir} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}: not delegated)`);
    return null;
  }
  if (!canMakeChild(dir, 'pids.max') || !canMakeChild(dir, 'memory.max')) {
    reasons.push(`cgroup v2: cannot make a child cgroup in ${dir}`);
    return null;
  }
  return { kind: 'cgroup-v2', cgroups: [{ controller: 'pids', dir }], prlimit, processesBounded: true, cgroupWhyNot: null };
}

let cached: BoundsMechanism | null = null;

/**
 * Find what can bound a sandbox here (see the module doc), by making a probe cgroup. Cached for
 * the life of the process unless `refresh`.
 */
export function probeBoundsMechanism(options: { refresh?: boolean } = {}): BoundsMechanism {
  if (cached && !options.refresh) return cached;
  const prlimit = findPrlimit();
  const mounts = cgroupMounts();
  const own = ownCgroups();
  const reasons: string[] = [];
  let result: BoundsMechanism | null = null;
  if (mounts.v2 && own.v2 !== null) {
    const ownDir = join(mounts.v2, own.v2);
    result = v2Base(ownDir, prlimit, reasons);
    // Root, with Polly's own cgroup holding processes (a service, a session): a `polly` cgroup at
    // the top of the hierarchy, empty, can have children with controllers.
    if (!result && process.geteuid?.() === 0 && own.v2 !== '/') {
      const top = join(mounts.v2, 'polly');
      try {
        mkdirSync(top, { recursive: true });
        result = v2Base(top, prlimit, reasons);
      } catch (error) {
        reasons.push(`cgroup v2: cannot make ${top} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      }
    }
  } else reasons.push('no cgroup v2 hierarchy');
  if (!result && mounts.v1.has('pids')) {
    const bases: CgroupBase[] = [];
    for (const c of ['pids', 'memory'] as const) {
      const m = mounts.v1.get(c);
      const p = own.v1.get(c);
      if (m && p !== undefined && canMakeChild(join(m, p), c === 'pids' ? 'pids.max' : 'memory.limit_in_bytes')) bases.push({ controller: c, dir: join(m, p) });
    }
    if (bases.some((b) => b.controller === 'pids')) result = { kind: 'cgroup-v1', cgroups: bases, prlimit, processesBounded: true, cgroupWhyNot: null };
    else reasons.push('cgroup v1: cannot make a child cgroup in the pids hierarchy (not root?)');
  }
  if (!result) {
    const root = process.geteuid?.() === 0;
    result = { kind: 'rlimit', cgroups: [], prlimit, processesBounded: prlimit !== null && !root, cgroupWhyNot: reasons.join('; ') };
  }
  cached = result;
  return result;
}

/** Lines for `polly doctor`: which mechanism bounds what here, and what is not bounded. Pure. */
export function describeBoundsMechanism(m: BoundsMechanism, limits: ResourceLimits | undefined | null): string[] {
  const l = resolveLimits(limits);
  const lines: string[] = [];
  if (m.kind === 'rlimit') {
    lines.push(`processes and memory: rlimits (no cgroup can be made here: ${m.cgroupWhyNot})`);
    if (!m.prlimit) lines.push('NOT bounded: processes, memory and file size (util-linux prlimit is missing: apt-get install util-linux)');
    else if (!m.processesBounded)
      lines.push(
        `NOT bounded: processes (RLIMIT_NPROC does not apply to uid 0; run Polly as a user, or where it can make a cgroup); memory: RLIMIT_DATA ${l.memory_mib} MiB per process`,
      );
    else lines.push(`processes: RLIMIT_NPROC ${l.max_processes} in the sandbox's user namespace; memory: RLIMIT_DATA ${l.memory_mib} MiB per process`);
  } else {
    const where = m.cgroups.map((c) => `${c.controller} in ${c.dir}`).join(', ');
    lines.push(
      `processes: ${m.kind} pids.max ${l.max_processes}; memory: ${m.cgroups.some((c) => c.controller === 'memory') || m.kind === 'cgroup-v2' ? `${m.kind} ${l.memory_mib} MiB` : 'NOT bounded (no memory hierarchy)'} (${where})`,
    );
  }
  lines.push(
    `/tmp: tmpfs of ${l.tmp_mib} MiB; file size: ${m.prlimit ? `RLIMIT_FSIZE ${l.file_size_mib} MiB` : 'NOT bounded'}; agent output: lines ≤ ${l.output_line_kib} KiB, ≤ ${l.output_total_mib} MiB a turn`,
  );
  return lines;
}

/** The marker the sandbox's bounds wrapper prints on stderr when the command ended with `/tmp` full. */
export const TMP_FULL_MARKER = '[polly] bound: /tmp is full';

/**
 * The argv prefix that runs a command inside the sandbox (after bwrap's `--`) under the rlimits of
 * `limits`, and prints {@link TMP_FULL_MARKER} on stderr when the command ends with `/tmp` (nearly)
 * full. Its exit status is the command's. Pure.
 */
export function insideBoundsArgv(m: BoundsMechanism, limits: ResourceLimits | undefined | null): string[] {
  const l = resolveLimits(limits);
  const mib = 1024 * 1024;
  const script =
    '"$@"; rc=$?; set -- $(stat -f -c "%a %S %b" /tmp 2>/dev/null); ' +
    `if [ -n "$3" ] && [ $(($1 * $2)) -lt $(( $2 * $3 / 100 + ${mib} )) ]; then echo "${TMP_FULL_MARKER}" >&2; fi; exit $rc`;
  const sh = ['/bin/sh', '-c', script, 'polly-bounds'];
  if (!m.prlimit) return sh;
  const rl = [`--fsize=${l.file_size_mib * mib}`];
  if (m.kind === 'rlimit') rl.push(`--nproc=${l.max_processes}`, `--data=${l.memory_mib * mib}`);
  return [m.prlimit, ...rl, '--', ...sh];
}

/** `--size BYTES --tmpfs /tmp`'s size for `limits`, in bytes. Pure. */
export function tmpBytes(limits: ResourceLimits | undefined | null): number {
  return resolveLimits(limits).tmp_mib * 1024 * 1024;
}

/** One sandbox's cgroups: the argv prefix that joins them, the hits read after it ended, and removal. */
export interface RunCgroup {
  /** Put in front of the whole command: `/bin/sh -c 'echo $$ >…/cgroup.procs …; exec "$@"'`. */
  prefix: string[];
  /** Bounds the cgroup counted as hit (read `pids.events`, `memory.events` / `memory.oom_control`). */
  hits(): BoundName[];
  /** Kill what is left in the cgroups and remove them (idempotent). */
  dispose(): void;
}

/**
 * Make the cgroups of one sandbox under `m` with `limits`, or null with the `rlimit` mechanism
 * (or when making them fails now: then the rlimits are the only bound, as the doctor reports).
 */
export function createRunCgroup(m: BoundsMechanism, limits: ResourceLimits | undefined | null): RunCgroup | null {
  if (m.kind === 'rlimit') return null;
  const l = resolveLimits(limits);
  const name = `polly-${process.pid}-${randomBytes(4).toString('hex')}`;
  const dirs: Array<{ controller: string; dir: string }> = [];
  try {
    if (m.kind === 'cgroup-v2') {
      const dir = join(m.cgroups[0]!.dir, name);
      mkdirSync(dir);
      dirs.push({ controller: 'v2', dir });
      writeFileSync(join(dir, 'pids.max'), String(l.max_processes));
      writeFileSync(join(dir, 'memory.max'), String(l.memory_mib * 1024 * 1024));
      try {
        writeFileSync(join(dir, 'memory.swap.max'), '0');
      } catch {
        /* no swap accounting */
      }
    } else {
      for (const base of m.cgroups) {
        const dir = join(base.dir, name);
        mkdirSync(dir);
        dirs.push({ controller: base.controller, dir });
        if (base.controller === 'pids') writeFileSync(join(dir, 'pids.max'), String(l.max_processes));
        else writeFileSync(join(dir, 'memory.limit_in_bytes'), String(l.memory_mib * 1024 * 1024));
      }
    }
  } catch {
    for (const d of dirs) removeCgroup(d.dir);
    return null;
  }
  const procs = dirs.map((d) => join(d.dir, 'cgroup.procs'));
  const script = `${procs.map((_, i) => `echo $$ > "$${i + 1}" &&`).join(' ')} shift ${procs.length} && exec "$@"`;
  let disposed = false;
  return {
    prefix: ['/bin/sh', '-c', script, 'polly-cgroup', ...procs],
    hits() {
      const out: BoundName[] = [];
      for (const d of dirs) {
        const pidsEvents = d.controller === 'pids' || d.controller === 'v2' ? read(join(d.dir, 'pids.events')) : null;
        if (pidsEvents && /^max [1-9]/m.test(pidsEvents)) out.push('processes');
        const mem = d.controller === 'v2' ? read(join(d.dir, 'memory.events')) : d.controller === 'memory' ? read(join(d.dir, 'memory.oom_control')) : null;
        if (mem && /^oom_kill [1-9]/m.test(mem)) out.push('memory');
      }
      return out;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const d of dirs) removeCgroup(d.dir);
    },
  };
}

/** Kill every process left in a cgroup directory, then remove it (best effort; a busy one is retried briefly). */
function removeCgroup(dir: string): void {
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') return;
    }
    if (existsSync(join(dir, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dir, 'cgroup.kill'), '1');
      } catch {
        /* already empty */
      }
    } else {
      for (const pid of (read(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    spawnSync('sleep', ['0.02']);
  }
}

/**
 * Bounds named by a sandboxed command's own end: SIGXFSZ (file size), the `/tmp` marker in its
 * output, and with the `rlimit` mechanism a shell's failed fork (`fork: Resource temporarily
 * unavailable`, dash's `Cannot fork`, bash's `fork: retry`). Pure.
 */
export function exitBoundHits(exit: { exitCode: number | null; signal?: string | null }, output: string, m?: Pick<BoundsMechanism, 'kind'>): BoundName[] {
  const out: BoundName[] = [];
  if (m?.kind === 'rlimit' && exit.exitCode !== 0 && /fork: (Resource temporarily unavailable|retry)|Cannot fork/.test(output)) out.push('processes');
  // 153 = 128 + SIGXFSZ (25): the shell's status for a child the kernel killed for a too-large file.
  if (exit.signal === 'SIGXFSZ' || exit.exitCode === 153 || /File size limit exceeded/.test(output)) out.push('file_size');
  if (output.includes(TMP_FULL_MARKER)) out.push('tmp');
  return out;
}
