/**
 * Tool shells: every shell the agent CLI starts inside its sandbox runs its command in a Landlock
 * domain of its own, so that no command the agent ran can reach the agent's process through
 * `/proc`: not `/proc/<agent>/mem` (code injection: the text pages are writable through it), not
 * `/proc/<agent>/fd/N` (its stdout, the stream Polly reads), not `environ`, `maps` or `syscall`.
 *
 * Why Landlock: the commands run in the agent's PID namespace as the same user, so neither the
 * seccomp filter (open(2) of a /proc path cannot be told apart) nor the mode bits stop them; a
 * nested PID namespace needs a fresh /proc, which the kernel refuses inside the sandbox's user
 * namespace (bubblewrap covers /proc/sys, so a new proc mount is "too revealing"). A Landlock
 * domain, in contrast, scopes ptrace-mode access: a process in a domain may only reach processes
 * in the same domain or one nested in it (https://docs.kernel.org/userspace-api/landlock.html,
 * "Ptrace restrictions"); /proc/<pid>/mem, fd/, environ, maps and pidfd_getfd all pass that check.
 * The agent itself is in no domain, so a command in one cannot reach it. The domain handles one
 * access right only, making block devices (`LANDLOCK_ACCESS_FS_MAKE_BLOCK`, which no sandboxed
 * process may do anyway): it restricts nothing else a command does.
 *
 * How: inside the agent's sandbox, each shell binary (bash, dash/sh, zsh and rbash where
 * installed: the CLIs' tool shells: claude's Bash tool runs bash or zsh, pi's `bash` tool
 * /bin/bash, codex `/bin/bash`, the user's login shell) is covered by a small Perl program
 * (Perl is part of every Debian system, `perl-base` is Essential) that enters a new domain
 * (`landlock_create_ruleset`, `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`) and execs
 * the real shell, bound read-only at `<dir>/real/<name>`, with the same argv[0]. If the domain
 * cannot be made, the wrapper refuses to run the command (exit 126, the reason on stderr).
 *
 * Where Landlock is missing (Linux < 5.13, or not in the kernel's LSM list) or the machine is not
 * x86-64/aarch64, {@link toolShellSupport} says why and the sandbox runs without tool shells: the
 * worker runner says so at run time (a warning in the turn's events), docs/security.md.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { basename, join } from 'node:path';

/** The shells a CLI may start (by absolute path or PATH lookup); those installed here are covered. */
export const TOOL_SHELL_CANDIDATES: readonly string[] = [
  '/bin/bash',
  '/usr/bin/bash',
  '/bin/sh',
  '/usr/bin/sh',
  '/bin/dash',
  '/usr/bin/dash',
  '/bin/zsh',
  '/usr/bin/zsh',
  '/bin/rbash',
  '/usr/bin/rbash',
  '/usr/local/bin/bash',
  '/usr/local/bin/zsh',
];

/** The Perl interpreter the wrappers run on. */
export const PERL = '/usr/bin/perl';

/** `prctl` by architecture (the Landlock calls are 444-446 on every architecture: include/uapi/asm-generic/unistd.h). */
const PRCTL: Record<string, number> = { x64: 157, arm64: 167 };

/** Whether tool shells can run here: `ok` with the Landlock ABI version, or why not. */
export type ToolShellSupport = { ok: true; abi: number } | { ok: false; why: string };

let support: ToolShellSupport | null = null;

/**
 * Probe once per process: Perl present, a known architecture, and Landlock's ABI version
 * (`landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`).
 */
export function toolShellSupport(): ToolShellSupport {
  if (support) return support;
  const prctl = PRCTL[arch()];
  if (!prctl) return (support = { ok: false, why: `tool shells know the system calls of x86-64 and aarch64 only; this machine is ${arch()}` });
  if (!existsSync(PERL)) return (support = { ok: false, why: `${PERL} is missing (Debian: perl-base)` });
  const r = spawnSync(PERL, ['-e', 'my $v = syscall(444, 0, 0, 1); print $v < 0 ? "-$!" : $v'], { encoding: 'utf8', timeout: 10_000 });
  const out = (r.stdout ?? '').trim();
  const abi = Number(out);
  if (r.status !== 0 || !Number.isInteger(abi) || abi < 1) {
    return (support = {
      ok: false,
      why: `Landlock is not available in this kernel (${out.replace(/^-/, '') || r.stderr?.trim() || 'no answer'}): Linux 5.13 or later with landlock in its LSM list`,
    });
  }
  return (support = { ok: true, abi });
}

/** The wrapper program that covers a shell: enter a Landlock domain of its own, then exec `real` with the caller's argv[0]. */
export function toolShellProgram(real: string, prctl = PRCTL[arch()] ?? 157): string {
  const q = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `#!${PERL}
# Polly's tool shell (workers/sandbox/tool-shell.ts): run this shell's command in a Landlock domain
# of its own, so that it cannot reach the agent CLI through /proc (mem, fd, environ), then exec the
# real shell.
my $real = ${q(real)};
sub refuse { print STDERR "polly tool shell: $_[0]: $!; the command is not run (it could reach the agent's process: docs/security.md)\\n"; exit 126 }
# struct landlock_ruleset_attr { __u64 handled_access_fs; }: LANDLOCK_ACCESS_FS_MAKE_BLOCK (1 << 11).
my $attr = pack('Q', 1 << 11);
my $fd = syscall(444, $attr, 8, 0);
refuse('landlock_create_ruleset') if $fd < 0;
syscall(${prctl}, 38, 1, 0, 0, 0) == 0 or refuse('prctl(PR_SET_NO_NEW_PRIVS)');
syscall(446, $fd, 0) == 0 or refuse('landlock_restrict_self');
syscall(3, $fd) if ${prctl} == 157;
syscall(57, $fd) if ${prctl} == 167;
exec { $real } $0, @ARGV;
print STDERR "polly tool shell: cannot run $real: $!\\n";
exit 127;
`;
}

/** One read-only bind of a host file at another path inside the sandbox. */
export interface FileBind {
  source: string;
  path: string;
}

/**
 * Write the wrappers into `dir` (a directory the sandbox binds read-only: the run's gate dir) and
 * return the binds that put them in place: each installed shell's real file bound at
 * `<dir>/real/<i>/<name>`, then the wrapper bound over the shell's own path. Shells reached through a
 * symlink (`/bin` → `usr/bin`, `sh` → `dash`) are covered once, at the real file.
 */
export function prepareToolShells(dir: string): FileBind[] {
  const reals = new Set<string>();
  for (const c of TOOL_SHELL_CANDIDATES) {
    try {
      if (existsSync(c)) reals.add(realpathSync(c));
    } catch {
      /* a dangling link: nothing to cover */
    }
  }
  const binds: FileBind[] = [];
  for (const [i, shell] of [...reals].sort().entries()) {
    // The real file keeps its name (a process's comm and $0 say `bash`, not something of Polly's).
    mkdirSync(join(dir, 'real', String(i)), { recursive: true });
    const real = join(dir, 'real', String(i), basename(shell));
    const wrapper = join(dir, `${i}-${basename(shell)}`);
    writeFileSync(real, '');
    writeFileSync(wrapper, toolShellProgram(real));
    chmodSync(wrapper, 0o755);
    binds.push({ source: shell, path: real }, { source: wrapper, path: shell });
  }
  return binds;
}
