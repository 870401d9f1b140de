// The host's turn channel before its request (workers/hosts/host-runner.ts, `polly host turn` in
// brain/commands/host.ts), over a real sshd host (test/helpers/ssh-hosts.ts): the host's Polly says
// `ready` once the repository's mirror exists and a worker runner is booting in standby, before the
// dispatcher has sent anything; a channel that closes before the request leaves nothing running
// there. A host without Polly is refused at once, as before (exit 127, the fix named).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIdentity } from '../../../brain/core/build-identity.js';
import { resolveHost } from '../../../workers/hosts/host-config.js';
import { closeHostConnection, remotePollyCommand, sshArgv, sshEnv, type SshContext } from '../../../workers/hosts/ssh.js';
import { startSshHosts, type SshHosts } from '../../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const KEY = '0123456789abcdef';

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url))('polly host turn before its request', () => {
  let hosts: SshHosts;
  let ctx: SshContext;
  beforeAll(async () => {
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b', pollyOnPath: false }]);
    ctx = { sshConfig: hosts.sshConfig, controlDir: mkdtempSync(join(tmpdir(), 'polly-ctl-')) };
  }, 120_000);
  afterAll(async () => {
    if (ctx) for (const h of hosts.hosts) await closeHostConnection(resolved(h.name), ctx);
    await hosts?.stop();
    if (ctx) rmSync(ctx.controlDir, { recursive: true, force: true });
  });

  const resolved = (name: string) => resolveHost({ name, ssh: name, capacity: 1, dir: hosts.hosts.find((h) => h.name === name)!.dir });
  /** Standby runners of host `name` still running (their command line names the standby flag). */
  const standbys = (name: string): number[] =>
    hosts.hosts
      .find((h) => h.name === name)!
      .leftovers()
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('--standby');
        } catch {
          return false;
        }
      });
  const waitFor = async (what: string, ok: () => boolean, ms = 20_000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('says ready with the mirror made and a standby runner booting, before any request; closed then, it leaves nothing running', async () => {
    const host = resolved('a');
    const dir = hosts.hosts[0]!.dir;
    expect(existsSync(join(dir, 'repos', KEY))).toBe(false);
    const child = spawn('ssh', sshArgv(host, ctx, remotePollyCommand(host, ['turn', '--dir', dir, '--repo', KEY, '--expect-build', buildIdentity().build])), {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: sshEnv(),
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const lines: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => lines.push(l));
    await waitFor(`the ready line (stderr: ${stderr})`, () => lines.length > 0, 60_000);
    expect(JSON.parse(lines[0]!)).toEqual({ t: 'ready' });
    expect(existsSync(join(dir, 'repos', KEY, '.git', 'HEAD'))).toBe(true);
    await waitFor('a standby runner on the host', () => standbys('a').length === 1);
    expect(readdirSync(join(dir, 'state', 'standby'))).toHaveLength(1);
    child.stdin.end(); // the dispatcher went away before its request
    expect(await exited).not.toBe(0);
    expect(stderr).toContain('no request on stdin');
    await waitFor('the standby runner to end', () => standbys('a').length === 0);
    expect(readdirSync(join(dir, 'state', 'standby'))).toEqual([]);
    expect(lines).toEqual(['{"t":"ready"}']);
  }, 120_000);

  it('a host without Polly ends the channel at once with exit 127 and the fix; no ready line', async () => {
    const host = resolved('b');
    const child = spawn('ssh', sshArgv(host, ctx, remotePollyCommand(host, ['turn', '--dir', host.dir, '--repo', KEY, '--expect-build', buildIdentity().build])), {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: sshEnv(),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(127);
    expect(stdout).toBe('');
    expect(stderr).toContain('polly hosts install b');
  }, 60_000);
});
