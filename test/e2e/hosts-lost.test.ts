// A host that drops mid-task, and a host that cannot run Polly's sandbox (issue 28's acceptance):
// real sshd hosts on loopback (test/helpers/ssh-hosts.ts), the real claude and pi CLIs against the
// scripted model.
// - Killing host a's sshd (the listener and its sessions) while the task's worker sleeps there: host
//   a stops its worker on its own (its channel closed), this machine waits out the lease, and the
//   task is re-offered to host b as a new attempt (a HOST_LOST step of its checked workflow); one
//   PR; nothing left running on either host.
// - A host without bubblewrap is refused for dispatch, the task failing with the host's fix, as
//   this machine would be; nothing runs here instead (workers.local_fallback is false).
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keylessEnv, polly } from '../helpers/keyless-cli.js';
import { pathWithoutBwrap } from '../helpers/no-bwrap-path.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { startSshHosts, writeHostsConfig, type SshHosts } from '../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../helpers/system-packages.js';
import { storedRunJournal } from '../helpers/stored-runs.js';

const FIXTURES = join(process.cwd(), 'test/fixtures/hosts');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Registry = {
  tasks: Record<string, { id: string; status: string; host?: string | null; attempts: number; statusReason: string | null }>;
  workers: Record<string, { id: string; taskId: string; host?: string | null; purpose?: string; state?: string; outcome?: string | null; stateDir?: string }>;
};

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url) || !hasSystemPackage('bubblewrap', import.meta.url))('hosts that fail', () => {
  const started: SshHosts[] = [];
  const env = keylessEnv();
  afterAll(async () => {
    await stopTrackedBrains();
    for (const h of started) await h.stop();
  });

  it('a host killed mid-task: the task is re-offered to the other host as a new attempt; one PR; nothing left running', async () => {
    const hosts = await startSshHosts([{ name: 'a' }, { name: 'b' }]);
    started.push(hosts);
    const project = sampleProjectWithOrigin('polly-hosts-lost-');
    await polly(['init'], project.repo, env);
    writeHostsConfig(project.repo, hosts, { capacity: 1, leaseSeconds: 5 });
    const plan = join(project.root, 'plan.yaml');
    writeFileSync(plan, readFileSync(join(FIXTURES, 'slow-plan.yaml')));
    const running = polly(['try', plan, '--script', join(FIXTURES, 'slow-script.yaml'), '--yes', '--json'], project.repo, env);
    const regPath = join(project.repo, '.polly/registry.json');
    const registry = (): Registry => JSON.parse(readFileSync(regPath, 'utf8'));
    // Wait until the worker on host a is inside its turn (its first tool call came back over SSH).
    const deadline = Date.now() + 240_000;
    let onA: Registry['workers'][string] | undefined;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no worker started its turn on host a: ${JSON.stringify(existsSync(regPath) ? registry().workers : {})}`);
      onA = existsSync(regPath) ? Object.values(registry().workers).find((w) => w.host === 'a' && w.state === 'running') : undefined;
      if (onA?.stateDir && existsSync(join(onA.stateDir, 'events.jsonl')) && readFileSync(join(onA.stateDir, 'events.jsonl'), 'utf8').includes('"tool_call"')) break;
      await sleep(200);
    }
    const a = hosts.hosts.find((h) => h.name === 'a')!;
    expect(a.leftovers().length).toBeGreaterThan(0);
    a.kill();
    const r = await running;
    const out = JSON.parse(r.stdout) as { tasks: Array<{ task: string; status: string }> };
    expect(
      out.tasks.map((t) => t.status),
      r.stderr.slice(-4000),
    ).toEqual(['ready']);
    const reg = registry();
    const task = Object.values(reg.tasks)[0]!;
    expect(task.host).toBe('b');
    const implement = Object.values(reg.workers).filter((w) => w.purpose !== 'review');
    expect(implement.map((w) => [w.host, w.outcome])).toEqual([
      ['a', 'host_lost'],
      ['b', 'ok'],
    ]);
    // The lost turn counts as an attempt.
    expect(task.attempts).toBe(2);
    // One PR, and the run's journal holds the HOST_LOST step of its admitted workflow.
    const prs = JSON.parse((await polly(['pr', 'list', '--json'], project.repo, env)).stdout) as unknown[];
    expect(prs).toHaveLength(1);
    const journal = readFileSync(join(project.repo, '.polly/journal.jsonl'), 'utf8');
    expect(journal).toContain('"task.host_lost"');
    const steps = (await storedRunJournal(join(project.repo, '.polly'))).filter((e) => e.kind === 'run.action').map((e) => [e.data.action, e.data.from, e.data.to]);
    expect(steps).toContainEqual(['HOST_LOST', 'implementing', 'reoffered']);
    expect(steps.filter((s) => s[0] === 'START' || s[0] === 'HOST_LOST').length).toBeGreaterThanOrEqual(2);
    // Host a stopped its worker when its channel closed: nothing of it runs; host b is idle too.
    const quiet = Date.now() + 20_000;
    while (hosts.hosts.some((h) => h.leftovers().length > 0) && Date.now() < quiet) await sleep(250);
    for (const h of hosts.hosts)
      expect(
        h.leftovers().map((p) => `${p}: ${procCmdline(p)}`),
        `processes left on host ${h.name}`,
      ).toEqual([]);
  }, 600_000);

  it('a host without bubblewrap is refused for dispatch with the fix, and nothing runs here instead', async () => {
    const noBwrap = pathWithoutBwrap();
    chmodSync(noBwrap, 0o755);
    const hosts = await startSshHosts([{ name: 'nobw', path: noBwrap }]);
    started.push(hosts);
    const project = sampleProjectWithOrigin('polly-hosts-nobw-');
    await polly(['init'], project.repo, env);
    writeHostsConfig(project.repo, hosts, { capacity: 1 });
    const plan = join(project.root, 'plan.yaml');
    writeFileSync(plan, readFileSync(join(FIXTURES, 'plan.yaml')).toString().split('  - key: t2')[0]!);
    const r = await polly(['try', plan, '--script', join(FIXTURES, 'script.yaml'), '--yes', '--json'], project.repo, env);
    const out = JSON.parse(r.stdout) as { tasks: Array<{ status: string }> };
    expect(out.tasks.map((t) => t.status)).toEqual(['failed']);
    const reg = JSON.parse(readFileSync(join(project.repo, '.polly/registry.json'), 'utf8')) as Registry;
    const task = Object.values(reg.tasks)[0]!;
    expect(task.statusReason).toMatch(/no host can take this claude-code turn: host nobw: Polly's sandbox cannot start on the host: bubblewrap is not installed/);
    expect(task.statusReason).toMatch(/apt-get install bubblewrap/);
    expect(task.statusReason).toMatch(/workers\.local_fallback/);
    // No worker ran, here or there.
    expect(Object.values(reg.workers)).toEqual([]);
  }, 300_000);
});

/** A process's command line (to name a leftover), or '(gone)'. */
function procCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '(gone)';
  }
}
