// `polly hosts` and `polly doctor` against real hosts: Debian's sshd on loopback, one per host, each
// with its own user (as root), host key, keys and directory (test/helpers/ssh-hosts.ts).
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';
import { pathWithoutBwrap } from '../../helpers/no-bwrap-path.js';
import { defaultHostPath, startSshHosts, writeHostsConfig, type SshHosts } from '../../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const CLI = join(process.cwd(), 'dist/brain/cli.js');
const run = promisify(execFile);

async function polly(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [CLI, ...args], { cwd, env, timeout: 240_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

type Check = { id: string; status: string; detail: string; fix?: string };

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url))('polly hosts over real sshd hosts', () => {
  let hosts: SshHosts;
  let repo: TestRepo;
  const env = { ...gitTestEnv(), ANTHROPIC_API_KEY: 'test-key', OPENAI_API_KEY: 'test-key' };

  beforeAll(async () => {
    // a: this Polly on its PATH, bubblewrap present. b: no Polly, and a PATH without bubblewrap.
    const noBwrap = pathWithoutBwrap();
    chmodSync(noBwrap, 0o755); // readable by b's own user
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b', pollyOnPath: false, path: noBwrap }]);
    repo = createTestRepo();
    await polly(['init'], repo.dir, env);
    writeHostsConfig(repo.dir, hosts);
  }, 120_000);
  afterAll(async () => {
    await hosts?.stop();
  });

  it('checks each host: a is ready; b has no Polly, and says to install it', async () => {
    // Host b's PATH ends with the system's directories: a polly installed there (a global `npm link`) is found by b.
    const systemPolly = ['/usr/local/bin', '/usr/bin', '/bin'].map((d) => join(d, 'polly')).filter((f) => existsSync(f));
    expect(systemPolly, 'a polly on the system PATH gives host b one: remove it (npm unlink -g polly) to run this test').toEqual([]);
    const r = await polly(['hosts', 'check', '--json'], repo.dir, env);
    const out = JSON.parse(r.stdout) as { ok: boolean; hosts: Array<{ host: string; checks: Check[] }> };
    expect(r.code, r.stderr).toBe(1);
    const a = out.hosts.find((h) => h.host === 'a')!.checks;
    expect(
      a.filter((c) => c.status !== 'ok'),
      JSON.stringify(a, null, 1),
    ).toEqual([]);
    expect(a.map((c) => c.id)).toEqual(
      expect.arrayContaining(['host:a:reachable', 'host:a:polly', 'host:a:node', 'host:a:git', 'host:a:agent:claude-code', 'host:a:sandbox', 'host:a:keys:codex', 'host:a:clock']),
    );
    expect(a.find((c) => c.id === 'host:a:polly')!.detail).toContain('the same build as here');
    // Names only: the key's value never appears.
    expect(r.stdout).not.toContain('test-key');
    const b = out.hosts.find((h) => h.host === 'b')!.checks;
    expect(b).toEqual([expect.objectContaining({ id: 'host:b:reachable', status: 'problem', fix: 'run "polly hosts install b"' })]);
    expect(b[0]!.detail).toContain('polly is not installed on host b');
  }, 120_000);

  it('installs this build on b, which then answers with the same build and is refused for its missing sandbox, with the fix', async () => {
    const inst = await polly(['hosts', 'install', 'b', '--json'], repo.dir, env);
    expect(inst.code, inst.stderr + inst.stdout).toBe(0);
    const b = hosts.hosts.find((h) => h.name === 'b')!;
    expect(existsSync(join(b.dir, 'bin', 'polly'))).toBe(true);
    const r = await polly(['hosts', 'check', 'b', '--json'], repo.dir, env);
    const checks = (JSON.parse(r.stdout) as { hosts: Array<{ checks: Check[] }> }).hosts[0]!.checks;
    expect(checks.find((c) => c.id === 'host:b:polly')).toMatchObject({ status: 'ok' });
    expect(checks.find((c) => c.id === 'host:b:sandbox')).toMatchObject({ status: 'problem', fix: expect.stringContaining('apt-get install bubblewrap') });
    expect(r.code).toBe(1);
  }, 240_000);

  it('polly doctor carries the host lines', async () => {
    const r = await polly(['doctor', '--json'], repo.dir, env);
    const report = JSON.parse(r.stdout) as { checks: Check[] };
    expect(report.checks.find((c) => c.id === 'host:a:sandbox')).toMatchObject({ status: 'ok' });
    expect(report.checks.find((c) => c.id === 'host:a:reachable')).toMatchObject({ status: 'ok' });
  }, 240_000);

  it('refuses a destination with a password, naming file:line and the fix', async () => {
    const other = createTestRepo();
    await polly(['init'], other.dir, env);
    const config = readFileSync(join(other.dir, '.polly/config.yaml'), 'utf8');
    writeFileSync(join(other.dir, '.polly/config.yaml'), config.replace(/^ {2}hosts: \[\]$/m, '  hosts:\n    - {name: x, ssh: "me:hunter2@box"}'));
    const r = await polly(['hosts', 'check'], other.dir, env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/config\.yaml:\d+:\d+: workers\.hosts\[0\]\.ssh: .*never takes a password/);
    expect(r.stderr).not.toContain('hunter2');
  }, 60_000);

  it('the default test host PATH gives node and the agent CLIs', () => {
    expect(defaultHostPath('/tmp/x', false)).toContain('node_modules/.bin');
  });
});
