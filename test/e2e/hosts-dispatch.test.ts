// Remote worker hosts end to end: two real sshd hosts on loopback (test/helpers/ssh-hosts.ts), each
// its own user, and a plan of four tasks run by the real claude, codex and pi CLIs against the
// scripted model, which the hosts reach through ports forwarded over the SSH connection. Two tasks
// run on the two hosts (where each goes is placement's choice); Polly's own checks, commit, push, PRs and the cross-reviews stay here; four PRs.
// After a human merges one PR, polly pr sync removes its worktree here AND on its host.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollyIdentity } from '../../brain/core/polly-identity.js';
import { git } from '../helpers/git-repo.js';
import { humanMerge } from '../helpers/human-merge.js';
import { keylessEnv, polly } from '../helpers/keyless-cli.js';
import { sampleProjectWithOrigin, type SampleProject } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { startSshHosts, writeHostsConfig, type SshHosts } from '../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

const FIXTURES = join(process.cwd(), 'test/fixtures/hosts');

type Registry = {
  tasks: Record<string, { id: string; status: string; host?: string | null; worktree: string | null; title: string }>;
  workers: Record<string, { id: string; taskId: string; host?: string | null; purpose?: string; outcome?: string | null }>;
};

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url) || !hasSystemPackage('bubblewrap', import.meta.url))('a plan on two SSH hosts', () => {
  let hosts: SshHosts;
  let project: SampleProject;
  let out: { admitted: boolean; tasks: Array<{ task: string; status: string; worker: string }> };
  let stderr = '';
  const env = keylessEnv();

  beforeAll(async () => {
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b' }]);
    project = sampleProjectWithOrigin('polly-hosts-');
    clone = pollyIdentity(project.repo).id;
    await polly(['init'], project.repo, env);
    writeHostsConfig(project.repo, hosts, { capacity: 2 });
    const plan = join(project.root, 'plan.yaml');
    writeFileSync(plan, readFileSync(join(FIXTURES, 'plan.yaml')));
    const r = await polly(['try', plan, '--script', join(FIXTURES, 'script.yaml'), '--yes', '--json'], project.repo, env);
    stderr = r.stderr;
    out = JSON.parse(r.stdout);
  }, 600_000);
  afterAll(async () => {
    await stopTrackedBrains();
    await hosts?.stop();
  });

  /** This clone's key on the hosts (brain/core/polly-identity.ts). */
  let clone = '';
  const registry = (): Registry => JSON.parse(readFileSync(join(project.repo, '.polly/registry.json'), 'utf8'));

  it('runs the four tasks on the two hosts and ends with four ready PRs', async () => {
    expect(out.admitted, stderr).toBe(true);
    expect(
      out.tasks.map((t) => t.status),
      stderr.slice(-4000),
    ).toEqual(['ready', 'ready', 'ready', 'ready']);
    const reg = registry();
    // Both hosts took tasks (capacity 2 each for four tasks; which host takes which depends on when
    // each turn asks: the least loaded ready host, a task's own host first for its later turns).
    const byHost = Object.values(reg.tasks).map((t) => t.host);
    expect(
      byHost.every((h) => h === 'a' || h === 'b'),
      String(byHost),
    ).toBe(true);
    expect(new Set(byHost).size).toBe(2);
    // Every implement turn ran on a host, the task's last one on the task's host; reviews ran here.
    for (const w of Object.values(reg.workers)) {
      if (w.purpose === 'review') expect(w.host ?? null).toBeNull();
      else expect(['a', 'b']).toContain(w.host);
    }
    for (const t of Object.values(reg.tasks)) {
      const implement = Object.values(reg.workers).filter((w) => w.taskId === t.id && w.purpose !== 'review');
      expect(implement.at(-1)!.host).toBe(t.host);
    }
    const prs = JSON.parse((await polly(['pr', 'list', '--json'], project.repo, env)).stdout) as Array<{ number: number; state: string }>;
    expect(prs.map((p) => p.state)).toEqual(['ready', 'ready', 'ready', 'ready']);
    // Polly never merges: main on origin is where it was.
    expect(git(project.origin, ['log', '--oneline', 'main'])).toHaveLength(git(project.repo, ['log', '--oneline', 'main']).length);
  });

  it('the agents worked in their host worktrees, reached the model through forwarded ports, and left nothing running', async () => {
    const reg = registry();
    for (const t of Object.values(reg.tasks)) {
      const host = hosts.hosts.find((h) => h.name === t.host)!;
      const name = /Add (\w+)\(\)/.exec(t.title)![1]!;
      // On the host, this clone's worktrees are under worktrees/<repository key>/<clone key>.
      const worktrees = join(host.dir, 'worktrees');
      const [key] = readdirSync(worktrees);
      // The function the agent wrote is in the task's worktree on its host, and on the PR branch here.
      expect(readFileSync(join(worktrees, key!, clone, t.id, 'src', `${name}.js`), 'utf8')).toContain(`export function ${name}`);
      expect(git(project.repo, ['show', `polly/${t.id}:src/${name}.js`])).toContain(`export function ${name}`);
      // The turn's spec on the host names the model through a port of the host's own loopback,
      // forwarded here over SSH (not the scripted model's port on this machine).
      // The first turn a host took (a host whose slots were all taken left no spec: placed again elsewhere).
      const implement = Object.values(reg.workers).find((w) => w.taskId === t.id && w.purpose !== 'review' && w.outcome !== 'host_not_started')!;
      const turnHost = hosts.hosts.find((h) => h.name === implement.host)!;
      const spec = JSON.parse(readFileSync(join(turnHost.dir, 'workers', clone, implement.id, 'spec.json'), 'utf8')) as {
        cwd: string;
        config: { workers: { pi: { base_url: string | null }; codex: { provider: { base_url: string } | null } } };
      };
      expect(spec.cwd).toBe(join(turnHost.dir, 'worktrees', key!, clone, t.id));
      const here = JSON.parse(readFileSync(join(project.repo, '.polly/workers', implement.id, 'spec.json'), 'utf8')) as typeof spec;
      const urls = (s: typeof spec): string[] => [s.config.workers.pi.base_url, s.config.workers.codex.provider?.base_url].filter((u): u is string => !!u);
      expect(urls(spec)).toHaveLength(urls(here).length);
      expect(urls(here).length).toBeGreaterThan(0);
      urls(spec).forEach((u, i) => {
        expect(new URL(u).hostname).toBe('127.0.0.1');
        expect(new URL(u).port).not.toBe(new URL(urls(here)[i]!).port);
      });
    }
    // An SSH session's own processes take a moment to exit after its client closed: wait for them
    // a little, then name what is still there.
    for (const quiet = Date.now() + 10_000; hosts.hosts.some((h) => h.leftovers().length > 0) && Date.now() < quiet; ) await new Promise((r) => setTimeout(r, 250));
    const described = (pids: number[]): string[] => pids.map((p) => `${p}: ${readProcCmdline(p)}`);
    for (const h of hosts.hosts) expect(described(h.leftovers()), `processes left on host ${h.name}`).toEqual([]);
  });

  it('polly status and polly hosts name the host of each task', async () => {
    const status = JSON.parse((await polly(['status', '--json'], project.repo, env)).stdout) as { tasks: Array<{ id: string; host: string | null }> };
    const reg = registry();
    expect(Object.fromEntries(status.tasks.map((t) => [t.id, t.host]))).toEqual(Object.fromEntries(Object.values(reg.tasks).map((t) => [t.id, t.host])));
    const text = (await polly(['status'], project.repo, env)).stdout;
    expect(text).toMatch(/HOST/);
    const listed = JSON.parse((await polly(['hosts', '--json'], project.repo, env)).stdout) as { hosts: Array<{ name: string; tasks: Array<{ id: string }> }> };
    expect(listed.hosts.map((h) => h.tasks.length)).toEqual(['a', 'b'].map((n) => Object.values(reg.tasks).filter((t) => t.host === n).length));
  });

  it('after a human merge, polly pr sync removes the task worktree here and on its host, keeping it in a backup ref there', async () => {
    const reg = registry();
    const task = Object.values(reg.tasks).find((t) => t.host === 'b')!;
    const host = hosts.hosts.find((h) => h.name === 'b')!;
    const repo = { dir: project.repo, remote: project.origin, root: project.root, git: (args: string[]) => git(project.repo, args), write: () => {}, commitAll: () => '' };
    humanMerge(repo, `polly/${task.id}`, 'merge');
    const sync = await polly(['pr', 'sync', '--json'], project.repo, env);
    expect(sync.code, sync.stderr).toBe(0);
    const after = registry().tasks[task.id]!;
    expect(after.status).toBe('done');
    expect(after.host ?? null).toBeNull();
    const [key] = readdirSync(join(host.dir, 'worktrees'));
    expect(existsSync(join(host.dir, 'worktrees', key!, clone, task.id))).toBe(false);
    // The backup is in this clone's repository on the host (its refs; the objects are the mirror's).
    const cloneRepo = join(host.dir, 'clones', key!, clone);
    // It belongs to the host's own user: this reader (root) says it trusts it.
    const refs = git(cloneRepo, ['-c', 'safe.directory=*', 'for-each-ref', '--format=%(refname)', `refs/polly/backup/${task.id}/`]);
    expect(refs).toMatch(new RegExp(`^refs/polly/backup/${task.id}/`));
  }, 120_000);
});

/** A process's command line, or '(gone)'. */
function readProcCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '(gone)';
  }
}
