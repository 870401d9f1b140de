/**
 * Outbound-only networking for the commands that config lets reach the network
 * (`acceptance.network: true`, `worktrees.setup_network: true`): the sandbox gets its own network
 * namespace, and a user-mode network stack, pasta (Debian/Ubuntu package `passt`,
 * https://passt.top/passt/about/, pasta(1)), connects it to the outside through ordinary sockets
 * of the host. The host's loopback is not reachable from inside.
 *
 * Why: sharing the host's network namespace (what `network: true` did) let a worker's test reach
 * every service listening on the host's loopback and its abstract unix sockets: `polly ui`, the
 * webhook receiver, a local Postgres that trusts local connections, the model server
 * (test/confinement/check-network.test.ts). Inside pasta's namespace `127.0.0.1` and `::1` are the
 * namespace's own loopback, with nothing listening.
 *
 * pasta's options (pasta(1) of passt 0.0~git20230309, Debian bookworm; confirmed by running them):
 * - `--config-net`: addresses, routes and the tap interface configured before the command starts;
 * - `-a 10.0.2.100 -n 24 -g 10.0.2.2`: the namespace's own address and gateway, slirp4netns'
 *   defaults (slirp4netns(1)), not the host's copied address, so the host's own non-loopback
 *   address is an ordinary outside address from inside (as for any machine on the network);
 * - `--no-map-gw`: connections to the gateway address are NOT translated to the host's loopback
 *   (pasta's default maps them there);
 * - `-t none -u none -T none -U none`: no port forwarding in either direction; pasta's default
 *   `-T auto`/`-U auto` forwards the namespace's loopback ports to the host's loopback;
 * - `-q`, `-l <file>`: pasta's own messages go to a log file, not into the check's output;
 * - as root: `--netns-only --runas 0:0`. Started as root, pasta otherwise drops to `nobody`, and
 *   then cannot set up the user namespace it makes ("Couldn't configure user mappings"), and
 *   bubblewrap then cannot start inside. Not root: pasta makes a user namespace too, in which
 *   bubblewrap runs as usual.
 *
 * pasta runs the command (bubblewrap) itself, in the new namespace, and exits with its exit code
 * when it ends: nothing of pasta outlives the command. Some of pasta's messages are written to
 * stderr before its log is set up; a two-line `/bin/sh` trampoline sends pasta's stderr to the log
 * and gives the command the original one back (fd 3), and prints the log when pasta ends before
 * the command started.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { whichExecutable } from './sandbox-executable.js';

/** The outcome of probing pasta: a working one, or why not and how to fix it. */
export type OutboundNetworkProbe = { ok: true; pasta: string } | { ok: false; reason: string; fix: string };

/** The namespace's own IPv4 address, netmask bits and gateway (slirp4netns' defaults). */
export const OUTBOUND_ADDRESS = { address: '10.0.2.100', prefix: 24, gateway: '10.0.2.2' } as const;

/**
 * pasta's options before `--` for a command in a new network namespace with outbound access only
 * (see the module doc). `root`: pasta is started with effective uid 0. Pure.
 */
export function pastaArgs(logFile: string, root: boolean): string[] {
  return [
    '--config-net',
    '--quiet',
    '--log-file',
    logFile,
    '--address',
    OUTBOUND_ADDRESS.address,
    '--netmask',
    String(OUTBOUND_ADDRESS.prefix),
    '--gateway',
    OUTBOUND_ADDRESS.gateway,
    '--no-map-gw',
    '--tcp-ports',
    'none',
    '--udp-ports',
    'none',
    '--tcp-ns',
    'none',
    '--udp-ns',
    'none',
    ...(root ? ['--netns-only', '--runas', '0:0'] : []),
  ];
}

/**
 * The command line that runs `inner` (a program and its arguments, e.g. bubblewrap's) in a new
 * network namespace behind pasta. `dir`: a private temp dir of Polly's (pasta's log and the
 * marker that the command started go there). Exit status: `inner`'s; 125 with pasta's log on
 * stderr when pasta ended before `inner` started. Pure.
 */
export function outboundCommand(pasta: string, dir: string, inner: readonly string[], root: boolean): { command: string; args: string[] } {
  // Outer: pasta's stderr to its log, the original stderr kept on fd 3. `$0` is `dir` in both scripts.
  const outer =
    'exec 3>&2 2>>"$0/pasta.log"; "$@"; rc=$?; ' +
    'if [ ! -e "$0/started" ]; then echo "polly sandbox: the network stack for this command (pasta) did not start (exit $rc):" >&3; cat "$0/pasta.log" >&3; exit 125; fi; exit $rc';
  // Inner, in pasta's namespace: the original stderr back, mark the start, run the command.
  const innerScript = 'exec 2>&3 3>&-; : > "$0/started"; exec "$@"';
  return { command: '/bin/sh', args: ['-c', outer, dir, pasta, ...pastaArgs(join(dir, 'pasta.log'), root), '--', '/bin/sh', '-c', innerScript, dir, ...inner] };
}

const probes = new Map<string, OutboundNetworkProbe>();

/**
 * Probe whether pasta can give a command its own network namespace here, by running it
 * (`pasta … -- true`, at most 10 s). Cached per pasta path for the life of the process.
 * @param options.pasta  the pasta executable (default: `pasta` on `PATH`); tests point it elsewhere.
 * @param options.refresh  probe again instead of using the cached answer.
 */
export function probeOutboundNetwork(options: { pasta?: string; refresh?: boolean } = {}): OutboundNetworkProbe {
  const key = options.pasta ?? '(PATH)';
  const cached = probes.get(key);
  if (cached && !options.refresh) return cached;
  const pasta = options.pasta ?? whichExecutable('pasta', process.env.PATH ?? '/usr/bin:/bin', '/');
  let probe: OutboundNetworkProbe;
  if (!pasta || !existsSync(pasta)) {
    probe = {
      ok: false,
      reason: `pasta is not installed (no ${pasta ?? 'pasta on PATH'}); Polly runs a command with network on in its own network namespace behind pasta, so that it cannot reach this machine's loopback services`,
      fix: 'install it: `apt-get install passt` (Debian, Ubuntu), `dnf install passt` (Fedora), `pacman -S passt` (Arch); or set `acceptance.network` and `worktrees.setup_network` to false',
    };
  } else {
    const root = process.geteuid?.() === 0;
    const r = spawnSync(pasta, [...pastaArgs('/dev/null', root), '--', 'true'], { encoding: 'utf8', timeout: 10_000 });
    if (r.status === 0) probe = { ok: true, pasta };
    else {
      const said = `${r.error?.message ?? ''}${r.stderr ?? ''}`
        .split('\n')
        .filter((l) => l && !/syslog|uid_map|user mappings/.test(l))
        .at(-1);
      probe = {
        ok: false,
        reason: `${pasta} cannot give a command its own network namespace here (exit ${r.status ?? r.signal}: ${said ?? 'no message'})`,
        fix: 'run Polly where pasta can create a network namespace with a tap device (a container needs /dev/net/tun), or set `acceptance.network` and `worktrees.setup_network` to false',
      };
    }
  }
  probes.set(key, probe);
  return probe;
}
