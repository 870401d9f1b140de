/**
 * The pure parts of covering host sockets and hiding the host's XDG dirs (issue 27 items 2, 3):
 * the `/proc/net/unix` parser on captured text, which sockets a mount list must cover, which XDG
 * dirs are hidden, and where the covers go in bwrap's command line. The real sandbox is tested in
 * test/confinement/host-sockets.test.ts and agent-state.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { hostUserDirs } from '../../../workers/sandbox/agent-state-dir.js';
import { parseProcNetUnix } from '../../../workers/sandbox/host-sockets.js';
import { commonHidden } from '../../../workers/sandbox/sandbox-profiles.js';
import { bwrapArgs, coveredSockets, type SandboxMount, type SandboxSpec } from '../../../workers/sandbox/sandbox-spec.js';

// Captured from this machine's /proc/net/unix (Linux 6.x), with made-up paths.
const PROC_NET_UNIX = `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 23456 /run/systemd/private
0000000000000000: 00000002 00000000 00010000 0001 01 23457 @/tmp/.X11-unix/X0
0000000000000000: 00000003 00000000 00000000 0001 03  1090
0000000000000000: 00000002 00000000 00000000 0002 01 23458 /var/tmp/dgram.sock
0000000000000000: 00000003 00000000 00000000 0001 03 23459 /srv/my repo/.git/fsmonitor--daemon.ipc
0000000000000000: 00000003 00000000 00000000 0001 03 23460 /run/systemd/private
`;

describe('parseProcNetUnix', () => {
  it('keeps path-bound sockets of every type and state, once each; drops abstract and unbound ones', () => {
    expect(parseProcNetUnix(PROC_NET_UNIX)).toEqual(['/run/systemd/private', '/var/tmp/dgram.sock', '/srv/my repo/.git/fsmonitor--daemon.ipc']);
    expect(parseProcNetUnix('')).toEqual([]);
  });
});

describe('coveredSockets', () => {
  const mounts: SandboxMount[] = [
    { kind: 'ro', path: '/' },
    { kind: 'tmpfs', path: '/tmp' },
    { kind: 'tmpfs', path: '/home/dev' },
    { kind: 'ro', path: '/srv/repo' },
    { kind: 'rw', path: '/srv/repo/.worktrees/t1' },
    { kind: 'ro', path: '/home/dev/.local/bin' },
  ];
  it('covers what a read-only bind or the root shows; not what a tmpfs hides, nor the worker’s own dirs, nor the reachable ones', () => {
    const sockets = [
      '/var/lib/app.sock',
      '/srv/repo/.git/fsmonitor--daemon.ipc',
      '/srv/other/app.sock',
      '/home/dev/.local/bin/agent.sock',
      '/home/dev/.gnupg/S.gpg-agent',
      '/tmp/x.sock',
      '/srv/repo/.worktrees/t1/own.sock',
      '/srv/repo/.polly/workers/t1/gate/gate.sock',
      '/var/lib/app.sock',
    ];
    expect(coveredSockets(mounts, sockets, ['/srv/repo/.polly/workers/t1/gate/gate.sock'])).toEqual([
      '/var/lib/app.sock',
      '/srv/repo/.git/fsmonitor--daemon.ipc',
      '/srv/other/app.sock',
      '/home/dev/.local/bin/agent.sock',
    ]);
  });
});

describe('hostUserDirs', () => {
  it('hides every absolute XDG dir and TMPDIR but system ones, and always Polly’s state root', () => {
    expect(
      hostUserDirs({
        HOME: '/home/dev',
        XDG_STATE_HOME: '/srv/state/',
        XDG_CONFIG_HOME: 'relative/config',
        XDG_DATA_HOME: '/usr',
        XDG_CACHE_HOME: '/',
        XDG_RUNTIME_DIR: '/run/user/1000',
        TMPDIR: '/srv/tmp',
      }),
    ).toEqual(['/srv/state', '/run/user/1000', '/srv/tmp', '/srv/state/polly']);
    expect(hostUserDirs({ HOME: '/home/dev' })).toEqual(['/home/dev/.local/state/polly']);
  });
  it('commonHidden drops the ones under HOME, /run or /tmp (hidden already) and hides /var/tmp', () => {
    const hidden = commonHidden('/srv/repo', '/home/dev', undefined, ['/home/dev/.local/state/polly', '/run/user/1000', '/tmp/x', '/srv/state']);
    expect(hidden).toEqual(['/home/dev', '/srv/repo/.polly', '/srv/repo/.worktrees', '/run', '/var/tmp', '/srv/state']);
  });
});

describe('bwrapArgs with host sockets', () => {
  const spec: SandboxSpec = {
    cwd: '/srv/repo/.worktrees/t1',
    writable: ['/srv/repo/.worktrees/t1'],
    readOnly: ['/srv/repo'],
    hidden: ['/var/tmp', '/home/dev'],
    home: '/srv/state/home',
    tmpDir: null,
    network: { mode: 'none' },
    gitMetadata: { mode: 'read-only' },
  };
  it('covers each shown socket with /dev/null after the mounts and before the bridge dir; /var/tmp stays a writable scratch', () => {
    const sockets = ['/srv/repo/app.sock', '/srv/other/app.sock', '/var/tmp/x.sock', '/run/polly-net-x/bridge.sock'];
    const args = bwrapArgs(spec, () => true, ['/run/polly-net-x'], { disableUserns: false }, sockets, { binds: ['/usr'], symlinks: [], masked: [], maskedDirs: [] });
    // The repository is bound read-only: its socket is covered. /srv/other is not in the sandbox at all (the root is empty).
    const cover = args.indexOf('/srv/repo/app.sock');
    expect(args.slice(cover - 2, cover + 1)).toEqual(['--ro-bind', '/dev/null', '/srv/repo/app.sock']);
    expect(args).not.toContain('/srv/other/app.sock');
    expect(cover).toBeGreaterThan(args.lastIndexOf('/srv/repo/.worktrees/t1/.git'));
    expect(cover).toBeLessThan(args.indexOf('/run/polly-net-x'));
    expect(args.filter((a) => a === '/dev/null')).toHaveLength(1);
    // /home/dev is under no bind (the root is empty): no cover is needed there; the root itself is remounted read-only.
    expect(args.flatMap((a, i) => (a === '--remount-ro' ? [args[i + 1]] : []))).toEqual(['/']);
    expect(args.filter((a, i) => a === '/var/tmp' && args[i - 1] === '--remount-ro')).toEqual([]);
  });
});
