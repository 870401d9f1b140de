/**
 * Polly's seccomp filter, in the real bubblewrap sandbox: a command cannot trace another process
 * of the sandbox or take its file descriptors or memory (issue 26 item 3), while the same
 * command line under bwrap without the filter can (the control: this test fails if the filter
 * is not loaded). The system calls are made with perl's `syscall` (perl-base is Essential in
 * Debian), on a `sleep` the command started itself.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { confineCommand, probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { agentSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { bwrapArgs, type SandboxSpec } from '../../../workers/sandbox/sandbox-spec.js';
import { DENIED_SYSCALLS, filterArch, seccompProgram } from '../../../workers/sandbox/seccomp-filter.js';

const ARCH = filterArch();
const NR = ARCH ? Object.fromEntries(Object.entries(DENIED_SYSCALLS).map(([k, v]) => [k, v[ARCH]])) : {};
const PIDFD_OPEN = 434; // the same on x86_64 and aarch64

// Each line: the call and what it returned (errno 1 is EPERM).
const SCRIPT = `sleep 30 & t=$!
perl -e '
  my ($t) = @ARGV; $t += 0;
  my $r = syscall(${NR.ptrace}, 16, $t, 0, 0); print "ptrace ", ($r == -1 ? "denied ".($!+0) : "allowed"), "\\n";
  my $p = syscall(${PIDFD_OPEN}, $t, 0); print "pidfd_open ", ($p >= 0 ? "ok" : "failed ".($!+0)), "\\n";
  my $g = syscall(${NR.pidfd_getfd}, $p, 0, 0); print "pidfd_getfd ", ($g == -1 ? "denied ".($!+0) : "allowed"), "\\n";
  my $v = syscall(${NR.process_vm_readv}, $t, 0, 0, 0, 0, 0); print "process_vm_readv ", ($v == -1 ? "denied ".($!+0) : "allowed"), "\\n";
' "$t"
kill "$t"`;

function spec(): SandboxSpec {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-seccomp-test-')));
  const repo = join(root, 'repo');
  const worktree = join(repo, '.worktrees', 't1');
  const state = join(root, 'state');
  for (const d of [worktree, join(repo, '.polly'), join(state, 'home'), join(state, 'gate')]) mkdirSync(d, { recursive: true });
  return agentSandboxSpec({
    repoRoot: repo,
    cwd: worktree,
    writableCwd: true,
    agentStateDir: state,
    gateDir: join(state, 'gate'),

    endpoints: [],
    realHome: join(root, 'home'),
  });
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('the seccomp filter', () => {
  it('is a classic BPF program of one test per denied call, for x86_64 (x32 refused too) and aarch64', () => {
    const n = Object.keys(DENIED_SYSCALLS).length;
    expect(seccompProgram('x86_64').length).toBe((4 + n + 2) * 8);
    expect(seccompProgram('aarch64').length).toBe((3 + n + 2) * 8);
    // The last two instructions: allow, then EPERM.
    const p = seccompProgram('x86_64');
    expect(p.readUInt32LE(p.length - 12)).toBe(0x7fff0000);
    expect(p.readUInt32LE(p.length - 4)).toBe(0x00050001);
  });

  it.skipIf(!ARCH)(
    'in the real sandbox, ptrace, pidfd_getfd and process_vm_readv fail with EPERM; without the filter they work',
    async () => {
      const probe = probeSandbox();
      if (!probe.ok) throw new Error(`the sandbox cannot start here: ${probe.reason}`);
      const s = spec();
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
      const c = confineCommand(probe.bwrap, s, '/bin/sh', ['-c', SCRIPT], env);
      const confined = await run(c.command, c.args, c.env);
      c.dispose();
      expect(confined.out).toContain('ptrace denied 1');
      expect(confined.out).toContain('pidfd_open ok');
      expect(confined.out).toContain('pidfd_getfd denied 1');
      expect(confined.out).toContain('process_vm_readv denied 1');
      // The control: the same sandbox without the filter.
      const bare = await run(probe.bwrap, [...bwrapArgs(s, existsSync), '--', '/bin/sh', '-c', SCRIPT], { ...env, HOME: s.home });
      expect(bare.out).toContain('ptrace allowed');
      expect(bare.out).toContain('pidfd_getfd allowed');
      expect(bare.out).toContain('process_vm_readv allowed');
    },
    60_000,
  );
});
