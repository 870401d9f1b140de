/**
 * Real SSH hosts on loopback, for tests (test/helpers/ssh-hosts.ts) and `npm run bench -- dispatch --host`: one Debian `sshd` per host on a free loopback port, started by the test
 * with its own host key, `authorized_keys`, client key and directory, and stopped (every process it
 * started) after.
 *
 * As root, each host logs in as its own user, created here with `useradd` (home under the host's
 * temp directory) and removed at `stop()`, so what a worker leaves running on one host is seen by
 * its uid. Where the tests do not run as root (or where the checkout is not readable by another
 * user, so a host user could not run this Polly and its agent CLIs), the host's `sshd` runs as the
 * current user and logs in as that user: each host still has its own port, host key, keys and
 * directory, and its processes are told apart by that directory.
 *
 * The client side is an ssh_config(5) file per test (`sshConfig`) with one `Host` entry per host
 * (HostName 127.0.0.1, Port, User, IdentityFile, a known_hosts file holding the host's key,
 * `StrictHostKeyChecking yes`): the `workers.ssh_config` Polly is pointed at. No password anywhere.
 *
 * `sshd -D -e` (sshd(8)); `SetEnv PATH=…` gives the host's sessions a PATH of the test's choosing
 * (sshd_config(5), OpenSSH 8.7+): the agent CLIs, node, and `polly` (unless `pollyOnPath` is false).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** This checkout's root: the nearest directory up from this file (scripts/ in the sources, dist/scripts/ compiled) with Polly's package.json. */
const ROOT = ((): string => {
  for (let dir = dirname(new URL(import.meta.url).pathname); ; dir = dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'polly') return dir;
    } catch {
      // no package.json here
    }
    if (dirname(dir) === dir) return resolve(dirname(new URL(import.meta.url).pathname), '..');
  }
})();
const SSHD = '/usr/sbin/sshd';

/** One running test host. */
export interface SshHost {
  /** The `Host` alias in {@link SshHosts.sshConfig} (also the host's name in `workers.hosts`). */
  name: string;
  /** The login user. */
  user: string;
  uid: number;
  port: number;
  /** The host's own directory (Polly's `dir` on it: its mirrors, worktrees, state). Absolute. */
  dir: string;
  /** The host's home (its user's home as root; the current user's otherwise). */
  home: string;
  /** True when this host has a user of its own (root mode). */
  ownUser: boolean;
  /** The PATH the host's sessions get. */
  path: string;
  /** SIGKILL the host's sshd and every sshd process it forked (the sessions), as a host that drops off the network. */
  kill(): void;
  /** Pids of processes on this host still running (its uid in root mode, sshd's own session processes left out; else those whose cwd or command line is under {@link dir}). */
  leftovers(): number[];
}

export interface SshHosts {
  hosts: SshHost[];
  /** The client's ssh_config(5) file naming every host. */
  sshConfig: string;
  /** Stop every host, kill what is left of them, remove their users and files. */
  stop(): Promise<void>;
}

export interface SshHostOptions {
  name: string;
  /** A PATH of the host's own (e.g. one without bwrap), after the bin dir with `polly` unless `pollyOnPath` is false; default: that, node_modules/.bin and the system's. */
  path?: string;
  /** Put this checkout's `polly` on the host's PATH (default true); false: the host has none until `polly hosts install`. */
  pollyOnPath?: boolean;
}

/** Whether `sshd` is installed (Debian's openssh-server). */
export function hasSshd(): boolean {
  return existsSync(SSHD) && spawnSync('sh', ['-c', 'command -v ssh && command -v ssh-keygen'], { stdio: 'ignore' }).status === 0;
}

async function freePort(): Promise<number> {
  return await new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr || r.error?.message}`);
  return r.stdout;
}

/** True when a user other than the owner can read this checkout (every parent searchable, the checkout readable). */
function checkoutReadableByOthers(): boolean {
  let dir = ROOT;
  for (;;) {
    const mode = spawnSync('stat', ['-c', '%a', dir], { encoding: 'utf8' }).stdout.trim();
    if (!/^\d+$/.test(mode) || (Number.parseInt(mode, 8) & 0o001) === 0) return false;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return (Number.parseInt(spawnSync('stat', ['-c', '%a', ROOT], { encoding: 'utf8' }).stdout.trim(), 8) & 0o004) !== 0;
}

/** Pids of every descendant of `pid` (from /proc), deepest last. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function exeOf(pid: number): string {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return '';
  }
}

function kill(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
}

/** A bin dir holding `polly` → this checkout's compiled CLI. */
function pollyBinDir(base: string): string {
  const bin = join(base, 'polly-bin');
  mkdirSync(bin, { recursive: true });
  const target = join(bin, 'polly');
  if (!existsSync(target)) symlinkSync(join(ROOT, 'dist', 'brain', 'cli.js'), target);
  return bin;
}

/** The default PATH of a test host: node, the agent CLIs of this checkout, optionally `polly`, the system. */
export function defaultHostPath(base: string, pollyOnPath = true): string {
  return [...(pollyOnPath ? [pollyBinDir(base)] : []), join(ROOT, 'node_modules', '.bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
}

/**
 * Start one sshd per host (see the module doc). Resolves once each accepts TCP connections.
 * @throws when sshd or ssh-keygen is missing, or a host cannot start.
 */
export async function startSshHosts(options: SshHostOptions[]): Promise<SshHosts> {
  const base = mkdtempSync(join(tmpdir(), 'polly-ssh-'));
  chmodSync(base, 0o755);
  const root = process.getuid?.() === 0;
  const ownUsers = root && checkoutReadableByOthers();
  const clientKey = join(base, 'client_ed25519');
  run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'polly-test-client', '-f', clientKey]);
  const sshConfig = join(base, 'ssh_config');
  const knownHosts = join(base, 'known_hosts');
  writeFileSync(sshConfig, '');
  writeFileSync(knownHosts, '');
  if (root && !existsSync('/run/sshd')) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const hosts: SshHost[] = [];
  const procs: ChildProcess[] = [];
  const users: string[] = [];
  const stopAll = async (): Promise<void> => {
    for (const h of hosts) h.kill();
    for (const h of hosts) for (const pid of h.leftovers()) kill(pid);
    for (const p of procs) kill(p.pid ?? 0);
    for (const u of users) spawnSync('userdel', ['-f', '-r', u], { stdio: 'ignore' });
    rmSync(base, { recursive: true, force: true });
  };
  try {
    for (const opt of options) {
      const hostBase = join(base, opt.name);
      mkdirSync(hostBase, { recursive: true, mode: 0o755 });
      chmodSync(hostBase, 0o755);
      let user = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
      let uid = process.getuid?.() ?? 0;
      let home = process.env.HOME ?? '/root';
      if (ownUsers) {
        user = `polly-${opt.name}-${Math.random().toString(36).slice(2, 7)}`.slice(0, 31);
        home = join(hostBase, 'home');
        // '*': no password, but not locked (sshd without PAM refuses a locked account, even for a key).
        run('useradd', ['-m', '-d', home, '-s', '/bin/sh', '-p', '*', user]);
        users.push(user);
        uid = Number(run('id', ['-u', user]).trim());
      }
      const dir = join(ownUsers ? home : hostBase, 'polly-host');
      const hostKey = join(hostBase, 'host_ed25519');
      run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `polly-test-${opt.name}`, '-f', hostKey]);
      const authorized = join(hostBase, 'authorized_keys');
      writeFileSync(authorized, readFileSync(`${clientKey}.pub`));
      chmodSync(authorized, 0o644);
      const port = await freePort();
      const path = opt.path ? [...((opt.pollyOnPath ?? true) ? [pollyBinDir(base)] : []), opt.path].join(':') : defaultHostPath(base, opt.pollyOnPath ?? true);
      const cfg = join(hostBase, 'sshd_config');
      writeFileSync(
        cfg,
        [
          `Port ${port}`,
          'ListenAddress 127.0.0.1',
          `HostKey ${hostKey}`,
          'PidFile none',
          `AuthorizedKeysFile ${authorized}`,
          'PasswordAuthentication no',
          'KbdInteractiveAuthentication no',
          'UsePAM no',
          'StrictModes no',
          `AllowUsers ${user}`,
          root && !ownUsers ? 'PermitRootLogin prohibit-password' : 'PermitRootLogin no',
          'MaxSessions 64',
          'MaxStartups 64:30:128',
          'AllowTcpForwarding yes',
          'ClientAliveInterval 0',
          `SetEnv PATH=${path}`,
          'LogLevel ERROR',
          '',
        ].join('\n'),
      );
      const sshd = spawn(SSHD, ['-D', '-e', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      sshd.stderr!.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
      procs.push(sshd);
      const pub = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
      appendFileSync(knownHosts, `[127.0.0.1]:${port} ${pub}\n`);
      appendFileSync(
        sshConfig,
        [
          `Host ${opt.name}`,
          '  HostName 127.0.0.1',
          `  Port ${port}`,
          `  User ${user}`,
          `  IdentityFile ${clientKey}`,
          '  IdentitiesOnly yes',
          `  UserKnownHostsFile ${knownHosts}`,
          '  StrictHostKeyChecking yes',
          '  LogLevel ERROR',
          '',
        ].join('\n'),
      );
      const sshdPid = sshd.pid ?? 0;
      const host: SshHost = {
        name: opt.name,
        user,
        uid,
        port,
        dir,
        home,
        ownUser: ownUsers,
        path,
        kill() {
          // The sessions first (their sshd processes), then the listener: the host's commands lose
          // their channel as when the machine drops off the network.
          for (const pid of descendants(sshdPid).filter((p) => exeOf(p) === SSHD)) kill(pid);
          kill(sshdPid);
        },
        leftovers() {
          const out: number[] = [];
          for (const e of readdirSync('/proc')) {
            if (!/^\d+$/.test(e)) continue;
            const pid = Number(e);
            if (pid === process.pid) continue;
            try {
              if (ownUsers) {
                const status = readFileSync(`/proc/${e}/status`, 'utf8');
                const realUid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
                // The SSH server's own session process of a connection Polly keeps open (its shared
                // connection, ControlPersist: port forwards ride on it) is not work left on the host.
                if (realUid === uid && !readFileSync(`/proc/${e}/cmdline`, 'utf8').startsWith('sshd:')) out.push(pid);
                continue;
              }
              const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
              let cwd = '';
              try {
                cwd = readlinkSync(`/proc/${e}/cwd`);
              } catch {
                // not ours to read
              }
              if (cmd.includes(dir) || cwd.startsWith(dir)) out.push(pid);
            } catch {
              // gone
            }
          }
          return out;
        },
      };
      hosts.push(host);
      const deadline = Date.now() + 15_000;
      for (;;) {
        if (sshd.exitCode !== null) throw new Error(`sshd for ${opt.name} exited ${sshd.exitCode}: ${log}`);
        const up = await new Promise<boolean>((res) => {
          const s = createConnection({ host: '127.0.0.1', port }, () => {
            s.destroy();
            res(true);
          });
          s.once('error', () => res(false));
        });
        if (up) break;
        if (Date.now() > deadline) throw new Error(`sshd for ${opt.name} did not listen on ${port} within 15 s: ${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  return { hosts, sshConfig, stop: stopAll };
}

/** Run `ssh -F config name cmd…` (BatchMode) and return its outcome. */
export function sshRun(sshConfig: string, name: string, command: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('ssh', ['-F', sshConfig, '-o', 'BatchMode=yes', name, command], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
