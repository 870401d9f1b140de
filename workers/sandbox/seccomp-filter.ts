/**
 * The seccomp filter every sandboxed process runs under: the system calls that reach into another
 * process (trace it, read or write its memory, take its file descriptors) fail with EPERM.
 *
 * Why: inside one sandbox the agent CLI and the commands it runs share a uid and a PID namespace,
 * and without Yama (kernel.yama.ptrace_scope) the kernel lets a process trace any dumpable process
 * of its uid. A command the worker ran could then take the agent's stream or model socket
 * (`pidfd_getfd`), read its memory (`process_vm_readv`, `ptrace`) or change it, and forge what
 * Polly reads from the worker's stream.
 *
 * Denied (EPERM): `ptrace`, `process_vm_readv`, `process_vm_writev`, `pidfd_getfd`, `kcmp`,
 * `perf_event_open`, `userfaultfd`, `bpf`, `keyctl`, `add_key`, `request_key` (the kernel
 * keyrings: a sandbox must not reach the session's keys). On x86_64 every x32 call and every
 * call of another architecture (i386 through `int 0x80`, whose numbers differ) is denied too,
 * so the list cannot be walked around. Everything else is allowed.
 *
 * Left to other layers: `/proc/<pid>/mem` and `/proc/<pid>/fd/*` are opened with open(2), which a
 * filter cannot tell from any other open (it cannot read the path); the sandbox's own PID
 * namespace keeps other sandboxes and the host out of reach.
 *
 * Format: a classic BPF program (`struct sock_filter`, 8 bytes each, native byte order) as
 * bubblewrap's `--seccomp FD` reads it (bwrap(1); the program `seccomp_export_bpf` writes).
 * Sources: linux/filter.h, linux/seccomp.h (struct seccomp_data: nr at offset 0, arch at 4),
 * linux/audit.h (AUDIT_ARCH_*), the syscall tables arch/x86/entry/syscalls/syscall_64.tbl and
 * include/uapi/asm-generic/unistd.h (aarch64), https://www.kernel.org/doc/html/latest/userspace-api/seccomp_filter.html
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The system calls denied, by name, with their numbers on each architecture Polly filters. */
export const DENIED_SYSCALLS: Readonly<Record<string, { x86_64: number; aarch64: number }>> = {
  ptrace: { x86_64: 101, aarch64: 117 },
  process_vm_readv: { x86_64: 310, aarch64: 270 },
  process_vm_writev: { x86_64: 311, aarch64: 271 },
  pidfd_getfd: { x86_64: 438, aarch64: 438 },
  kcmp: { x86_64: 312, aarch64: 272 },
  perf_event_open: { x86_64: 298, aarch64: 241 },
  userfaultfd: { x86_64: 323, aarch64: 282 },
  bpf: { x86_64: 321, aarch64: 280 },
  keyctl: { x86_64: 250, aarch64: 219 },
  add_key: { x86_64: 248, aarch64: 217 },
  request_key: { x86_64: 249, aarch64: 218 },
};

const AUDIT_ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7 } as const;
const X32_SYSCALL_BIT = 0x40000000;
// linux/filter.h opcodes
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K
// linux/seccomp.h return values
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO_EPERM = 0x00050000 | 1;

/** The architectures Polly has a filter for, by Node's `process.arch`. */
export type FilterArch = keyof typeof AUDIT_ARCH;

/** The filter's architecture for Node's `process.arch` (`x64`, `arm64`), or null where Polly has none. */
export function filterArch(nodeArch: string = process.arch): FilterArch | null {
  return nodeArch === 'x64' ? 'x86_64' : nodeArch === 'arm64' ? 'aarch64' : null;
}

/**
 * The compiled filter for `arch` (pure): `struct sock_filter[]` in little-endian byte order (both
 * architectures here are little-endian), ready for `bwrap --seccomp FD`.
 */
export function seccompProgram(arch: FilterArch): Buffer {
  const numbers = Object.values(DENIED_SYSCALLS).map((n) => n[arch]);
  // Layout: load arch · arch matches? · load nr · (x86_64) x32? · one test per denied call · allow · deny.
  const count = 3 + (arch === 'x86_64' ? 1 : 0) + numbers.length + 2;
  const DENY = count - 1;
  const ins: Array<[code: number, jt: number, jf: number, k: number]> = [];
  // A jump's offset counts the instructions skipped after it.
  const toDeny = () => DENY - ins.length - 1;
  ins.push([LD_W_ABS, 0, 0, 4]);
  ins.push([JEQ_K, 0, toDeny(), AUDIT_ARCH[arch]]); // another architecture: deny
  ins.push([LD_W_ABS, 0, 0, 0]);
  if (arch === 'x86_64') ins.push([JGE_K, toDeny(), 0, X32_SYSCALL_BIT]); // an x32 call: deny
  for (const nr of numbers) ins.push([JEQ_K, toDeny(), 0, nr]);
  ins.push([RET_K, 0, 0, RET_ALLOW]);
  ins.push([RET_K, 0, 0, RET_ERRNO_EPERM]);
  const out = Buffer.alloc(ins.length * 8);
  ins.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

let written: string | null = null;

/**
 * The path of a file holding this machine's filter, written once per process into a directory of
 * its own under the OS temp dir (removed when the process exits), or null on an architecture
 * Polly has no filter for.
 */
export function seccompProgramFile(): string | null {
  const arch = filterArch();
  if (!arch) return null;
  if (written) return written;
  const dir = mkdtempSync(join(tmpdir(), 'polly-seccomp-'));
  const file = join(dir, `${arch}.bpf`);
  writeFileSync(file, seccompProgram(arch), { mode: 0o444 });
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  written = file;
  return file;
}

/**
 * `argv` (a bwrap command line: bwrap's path first, then its options) run with the filter: through
 * `/bin/sh`, which opens the filter file on fd 9 and execs bwrap with `--seccomp 9` as its first
 * option (bwrap reads the program, closes the fd and applies the filter just before it runs the
 * sandboxed command). Unchanged when there is no filter for this machine.
 */
export function withSeccomp(argv: readonly string[]): string[] {
  const file = seccompProgramFile();
  if (!file) return [...argv];
  const [bwrap, ...rest] = argv;
  return ['/bin/sh', '-c', 'exec 9<"$1" && shift && exec "$@"', 'polly-seccomp', file, bwrap!, '--seccomp', '9', ...rest];
}
