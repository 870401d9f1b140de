// Several Pollys, one queue (issue 28 step 4): two clones of one origin, each with its own Polly
// (two `polly try` runs, so two Brain processes at once), on one real PostgreSQL run store (a
// temporary cluster) and the same two real sshd hosts of capacity 1, are given the same plan of four
// tasks. Judged by ground truth, not by the store: every task's implement turn ran exactly once on
// the hosts (the hosts' worker directories), one task branch per task on origin, one PR per task
// across both clones; each host ran one turn at a time though two Pollys placed on it; and each
// Polly's registry says which tasks the other ran.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/git-repo.js';
import { keylessEnv, polly, type PollyOut } from '../helpers/keyless-cli.js';
import { sampleProjectWithOrigin, type SampleProject } from '../helpers/sample-project.js';
import { stopTrackedBrains, trackBrains } from '../helpers/brain-cleanup.js';
import { startSshHosts, writeHostsConfig, type SshHosts } from '../helpers/ssh-hosts.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres-server.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

const FIXTURES = join(process.cwd(), 'test/fixtures/hosts');

type Task = { id: string; status: string; statusReason: string | null; host?: string | null; workClaim?: { key: string; holder: string; mine: boolean } | null };
type Registry = { tasks: Record<string, Task>; workers: Record<string, { id: string; taskId: string; host?: string | null; purpose?: string }> };

const ready = hasSystemPackage('openssh-server', import.meta.url) && hasSystemPackage('bubblewrap', import.meta.url) && hasSystemPackage('postgresql', import.meta.url);

describe.skipIf(!ready)('two Pollys on one Postgres run store and two SSH hosts', () => {
  let hosts: SshHosts;
  let pg: PostgresServer;
  let project: SampleProject;
  let clones: string[];
  let outs: PollyOut[];
  const env = { ...keylessEnv() };

  beforeAll(async () => {
    pg = await startPostgres();
    env.POLLY_RUNS_URL = pg.url;
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b' }]);
    project = sampleProjectWithOrigin('polly-two-');
    const second = join(project.root, 'stats-2');
    git(project.root, ['clone', '-q', project.origin, second]);
    trackBrains(second);
    clones = [project.repo, second];
    const plan = join(project.root, 'plan.yaml');
    writeFileSync(plan, readFileSync(join(FIXTURES, 'plan.yaml')));
    for (const repo of clones) {
      await polly(['init'], repo, env);
      writeHostsConfig(repo, hosts, { capacity: 1 });
      const path = join(repo, '.polly', 'config.yaml');
      writeFileSync(
        path,
        readFileSync(path, 'utf8')
          .replace(/^ {2}store: lmdb$/m, '  store: postgres')
          .replace(/^ {2}schema: polly$/m, '  schema: two_pollys'),
      );
    }
    // Both at once: two Brains, one queue.
    outs = await Promise.all(clones.map((repo) => polly(['try', plan, '--script', join(FIXTURES, 'script.yaml'), '--yes', '--json'], repo, env)));
  }, 900_000);
  afterAll(async () => {
    await stopTrackedBrains();
    await hosts?.stop();
    await pg?.stop();
  });

  const registry = (repo: string): Registry => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8'));

  it('each task was claimed by exactly one Polly, which made its ready PR; the other Polly settled it as run there', async () => {
    for (const [i, o] of outs.entries()) expect(o.code, `polly try in clone ${i}: ${o.stderr.slice(-4000)}`).toBe(0);
    const regs = clones.map(registry);
    const ids = Object.keys(regs[0]!.tasks).sort();
    expect(ids).toHaveLength(4);
    expect(Object.keys(regs[1]!.tasks).sort()).toEqual(ids);
    const ranIn: Record<string, number[]> = {};
    for (const id of ids) {
      const pair = regs.map((r) => r.tasks[id]!);
      expect(pair[0]!.workClaim!.key, id).toBe(pair[1]!.workClaim!.key);
      ranIn[id] = pair.flatMap((t, i) => (t.workClaim?.mine ? [i] : []));
      expect(ranIn[id], `${id}: ${JSON.stringify(pair)}`).toHaveLength(1);
      const here = pair[ranIn[id]![0]!]!;
      const there = pair[1 - ranIn[id]![0]!]!;
      expect(here.status, JSON.stringify(here)).toBe('ready');
      expect(there.status, JSON.stringify(there)).toBe('done');
      expect(there.statusReason).toMatch(/run by another Polly .*it ended ready/);
      expect(there.workClaim!.holder).toBe(here.workClaim!.holder);
      // Nothing of it ran in the Polly that followed it: no worker row, no worktree.
      expect(Object.values(regs[1 - ranIn[id]![0]!]!.workers).filter((w) => w.taskId === id)).toEqual([]);
    }
    // One PR per task across both clones, each in the clone that ran the task.
    const prs = await Promise.all(
      clones.map(async (repo) => JSON.parse((await polly(['pr', 'list', '--json'], repo, env)).stdout) as Array<{ branch?: string; head?: string; state: string }>),
    );
    const all = prs.flat();
    expect(all.map((p) => p.state)).toEqual(['ready', 'ready', 'ready', 'ready']);
    for (const [i, list] of prs.entries()) expect(list).toHaveLength(ids.filter((id) => ranIn[id]![0] === i).length);
  });

  it('ground truth: one implement turn per task on the hosts, one at a time per host, and one task branch per task on origin', () => {
    // Every implement turn that ran on a host left its worker directory there, with its spec.
    const turns: Array<{ host: string; task: string; start: number; end: number }> = [];
    for (const h of hosts.hosts) {
      // workers/<clone key>/<worker>: each Polly's turns under its own clone's key.
      const dir = join(h.dir, 'workers');
      for (const w of readdirSync(dir).flatMap((c) => readdirSync(join(dir, c)).map((x) => join(c, x)))) {
        const spec = JSON.parse(readFileSync(join(dir, w, 'spec.json'), 'utf8')) as { cwd: string };
        const files = readdirSync(join(dir, w)).map((f) => statSync(join(dir, w, f)).mtimeMs);
        turns.push({ host: h.name, task: spec.cwd.split('/').at(-1)!, start: statSync(join(dir, w, 'spec.json')).mtimeMs, end: Math.max(...files) });
      }
    }
    const perTask = new Map<string, number>();
    for (const t of turns) perTask.set(t.task, (perTask.get(t.task) ?? 0) + 1);
    expect(Object.fromEntries(perTask), JSON.stringify(turns)).toEqual(Object.fromEntries(Object.keys(registry(clones[0]!).tasks).map((id) => [id, 1])));
    // Capacity 1 per host, counted on the host across both Pollys: its turns never overlapped.
    for (const h of hosts.hosts) {
      const mine = turns.filter((t) => t.host === h.name).sort((x, y) => x.start - y.start);
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.start, `${h.name}: ${JSON.stringify(mine)}`).toBeGreaterThanOrEqual(mine[i - 1]!.end - 50);
    }
    // Origin: exactly one task branch per task.
    const branches = git(project.origin, ['for-each-ref', '--format=%(refname:short)', 'refs/heads/polly/']).split('\n').filter(Boolean).sort();
    expect(branches).toEqual(
      Object.keys(registry(clones[0]!).tasks)
        .map((id) => `polly/${id}`)
        .sort(),
    );
    // Polly never merges: main on origin is where it was.
    expect(git(project.origin, ['rev-parse', 'main'])).toBe(git(project.repo, ['rev-parse', 'main']));
  });
});
