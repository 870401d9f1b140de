/**
 * Reaching a host over the user's own OpenSSH client: every call is `ssh -o BatchMode=yes …` (never
 * a prompt, so never a password), with the ssh config of `workers.ssh_config` (`-F`) or the user's
 * own, and one shared connection per host (`ControlMaster=auto`, `ControlPersist`, a control
 * socket in a private directory of this user), so a turn's commands, its git transfers and its
 * forwarded model ports ride one authenticated connection (ssh_config(5): ControlMaster,
 * ControlPath, ControlPersist; ssh(1) `-O forward`).
 *
 * What runs on the host is one POSIX shell command line, every word quoted here: Polly's own CLI
 * there (`<dir>/bin/polly` from `polly hosts install`, else `polly` on the host's PATH) as
 * `polly host <sub> …` (brain/commands/host.ts), or git's own receive-pack/upload-pack for the
 * transfers (`GIT_SSH_COMMAND`, git(1) ENVIRONMENT VARIABLES, and git-fetch(1) GIT URLS for
 * `ssh://host/~/path`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { shellQuote } from '../../gate/git/git-grammar.js';
import type { ResolvedHost, WorkerHostsOptions } from './host-config.js';

/** How this machine reaches its hosts: the ssh config file and the control sockets' directory. */
export interface SshContext {
  /** `-F` file, or null for the user's own. */
  sshConfig: string | null;
  /** A directory only this user can enter, for the control sockets. */
  controlDir: string;
  /** Seconds an idle shared connection stays open. @default 60 */
  persistSeconds?: number;
}

/**
 * The context for `workers` (its `ssh_config`), with the control sockets in
 * `<tmpdir>/polly-ssh-<uid>` (mode 0700; a socket path must stay under ~104 bytes, so not in
 * the state dir). @throws PollyError `conflict` when that directory belongs to another user.
 */
export function sshContext(workers: Pick<WorkerHostsOptions, 'ssh_config'>): SshContext {
  const uid = process.getuid?.() ?? 0;
  const controlDir = join(tmpdir(), `polly-ssh-${uid}`);
  mkdirSync(controlDir, { recursive: true, mode: 0o700 });
  const st = statSync(controlDir);
  if (st.uid !== uid || (st.mode & 0o077) !== 0)
    throw new PollyError(
      'conflict',
      `${controlDir} (Polly's ssh control sockets) is not a private directory of this user (uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)}); remove it and retry`,
    );
  return { sshConfig: workers.ssh_config ?? null, controlDir };
}

/** The ssh options of every call to `host` (no destination, no command). Pure. */
export function sshOptions(host: Pick<ResolvedHost, 'port'>, ctx: SshContext, withPort = true): string[] {
  return [
    ...(ctx.sshConfig ? ['-F', ctx.sshConfig] : []),
    '-o',
    'BatchMode=yes',
    '-o',
    'ControlMaster=auto',
    '-o',
    `ControlPath=${join(ctx.controlDir, '%C')}`,
    '-o',
    `ControlPersist=${ctx.persistSeconds ?? 60}`,
    // A dead connection is noticed by ssh itself within ~15 s; Polly's own lease sits above it.
    '-o',
    'ServerAliveInterval=5',
    '-o',
    'ServerAliveCountMax=3',
    '-o',
    'ConnectTimeout=15',
    ...(withPort && host.port ? ['-p', String(host.port)] : []),
  ];
}

/** `ssh <options> <destination> <command>` as an argv (the command is one already-quoted line). Pure. */
export function sshArgv(host: ResolvedHost, ctx: SshContext, command: string): string[] {
  return [...sshOptions(host, ctx), '--', host.ssh, command];
}

/** A path on the host as a shell word: `"$HOME"/<dir>/…` for a relative `dir`, quoted as is for an absolute one. Pure. */
export function hostPathWord(host: Pick<ResolvedHost, 'dir'>, ...parts: string[]): string {
  const rel = [host.dir, ...parts].join('/');
  return host.dir.startsWith('/') ? shellQuote(rel) : `"$HOME"/${shellQuote(rel)}`;
}

/**
 * The command line that runs `polly host <args>` on the host: its `<dir>/bin/polly` (put there by
 * `polly hosts install`) when present, else `polly` from its PATH; exit 127 with a sentence naming
 * the fix when there is neither. Pure.
 */
export function remotePollyCommand(host: Pick<ResolvedHost, 'dir' | 'name'>, args: readonly string[]): string {
  const installed = hostPathWord(host, 'bin', 'polly');
  const missing = `polly is not installed on host ${host.name}: neither ${host.dir}/bin/polly nor polly on its PATH; run "polly hosts install ${host.name}" here`;
  const script = `p=${installed}; [ -x "$p" ] || p=$(command -v polly) || { echo ${shellQuote(missing)} >&2; exit 127; }; exec "$p" host ${args.map(shellQuote).join(' ')}`;
  return `sh -c ${shellQuote(script)}`;
}

/** `GIT_SSH_COMMAND` for git transfers to `host` over the shared connection (git adds `-p` from the URL). Pure. */
export function gitSshCommand(host: ResolvedHost, ctx: SshContext): string {
  return ['ssh', ...sshOptions(host, ctx, false)].map(shellQuote).join(' ');
}

/**
 * The git URL of the repository's mirror on the host: `ssh://<dest>[:port]/~/<dir>/repos/<key>`
 * (relative `dir`) or `ssh://<dest>[:port]/<dir>/repos/<key>` (absolute). Pure.
 */
export function hostMirrorUrl(host: ResolvedHost, repoKey: string): string {
  return hostUrl(host, `repos/${repoKey}`);
}

/**
 * The git URL of one clone's repository on the host (`<dir>/clones/<key>/<clone>`, the refs of that
 * clone's tasks: workers/hosts/host-turn.ts), spelled as {@link hostMirrorUrl}. Pure.
 */
export function hostCloneUrl(host: ResolvedHost, repoKey: string, clone: string): string {
  return hostUrl(host, `clones/${repoKey}/${clone}`);
}

/** `ssh://` URL of `rel` under the host's Polly directory. Pure. */
function hostUrl(host: ResolvedHost, rel: string): string {
  const path = host.dir.startsWith('/') ? `${host.dir}/${rel}` : `/~/${host.dir}/${rel}`;
  return `ssh://${host.ssh}${host.port ? `:${host.port}` : ''}${path}`;
}

/** What one call on a host returned. */
export interface HostCallResult {
  /** ssh's exit code (255: ssh itself failed: unreachable, refused, no key), null when killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

/**
 * Run one command line on `host` and collect its output. Never rejects: a host that cannot be
 * reached is `code` 255 with ssh's reason on stderr.
 * @param input   written to the command's stdin, then closed (none: stdin is closed at once).
 * @param timeoutMs  SIGKILL after this long. @default 60 000
 */
export function runOnHost(
  host: ResolvedHost,
  ctx: SshContext,
  command: string,
  options: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<HostCallResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('ssh', sshArgv(host, ctx, command), { stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? sshEnv() });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? 60_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-64_000)));
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: 255, stdout, stderr: `${stderr}could not run ssh: ${error.message}`, durationMs: Date.now() - started, timedOut });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, durationMs: Date.now() - started, timedOut });
    });
  });
}

/** Start a command on `host` with its stdio as pipes (a turn's stream). The caller owns the process. */
export function spawnOnHost(host: ResolvedHost, ctx: SshContext, command: string): ChildProcess {
  return spawn('ssh', sshArgv(host, ctx, command), { stdio: ['pipe', 'pipe', 'pipe'], env: sshEnv() });
}

/**
 * Forward a port of the host's loopback to `127.0.0.1:<localPort>` here over the shared connection
 * (`ssh -O forward -R 0:127.0.0.1:<port>`: the host picks a free port and ssh prints it), so a
 * worker there reaches a model endpoint that only this machine can reach.
 * @returns the port on the host's loopback.
 * @throws PollyError `host_failed` when ssh refuses (no shared connection, forwarding off on the host).
 */
export async function forwardToHost(host: ResolvedHost, ctx: SshContext, localPort: number): Promise<number> {
  const r = await new Promise<HostCallResult>((resolve) => {
    const started = Date.now();
    const child = spawn('ssh', [...sshOptions(host, ctx), '-O', 'forward', '-R', `0:127.0.0.1:${localPort}`, '--', host.ssh], { stdio: ['ignore', 'pipe', 'pipe'], env: sshEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (e) => resolve({ code: 255, stdout, stderr: e.message, durationMs: Date.now() - started, timedOut: false }));
    child.on('close', (code) => resolve({ code, stdout, stderr, durationMs: Date.now() - started, timedOut: false }));
  });
  const port = Number(r.stdout.trim().split('\n').at(-1));
  if (r.code !== 0 || !Number.isInteger(port) || port <= 0)
    throw new PollyError(
      'host_failed',
      `could not forward a port of host ${host.name} to 127.0.0.1:${localPort} here (ssh -O forward -R exited ${r.code}: ${r.stderr.trim() || r.stdout.trim() || 'no output'}); the host's sshd must allow it (AllowTcpForwarding yes or remote)`,
      { details: { host: host.name } },
    );
  return port;
}

/** Close the shared connection to `host` (`ssh -O exit`); a host without one is fine. */
export async function closeHostConnection(host: ResolvedHost, ctx: SshContext): Promise<void> {
  await new Promise<void>((resolve) => {
    const child = spawn('ssh', [...sshOptions(host, ctx), '-O', 'exit', '--', host.ssh], { stdio: 'ignore', env: sshEnv() });
    child.on('error', () => resolve());
    child.on('close', () => resolve());
  });
}

/** The environment ssh runs with: this process's (its agent socket, HOME for ~/.ssh), without git's variables that would leak into a remote git. */
export function sshEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return env;
}

/** ssh's own failure (exit 255) in one line: the last line it printed. Pure. */
export function sshFailure(result: Pick<HostCallResult, 'code' | 'stderr' | 'timedOut'>): string {
  if (result.timedOut) return 'no answer (timed out)';
  const last = result.stderr.trim().split('\n').filter(Boolean).at(-1) ?? '';
  return last || `ssh exited ${result.code}`;
}
