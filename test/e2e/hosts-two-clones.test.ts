// Two clones of one origin on one SSH host: each clone runs its own plan, and both plans have a
// task of the same id (each registry numbers its plans p1, p2, …). The host keys a task's worktree,
// agent state and lock by the clone as well as the task (workers/hosts/host-turn.ts): judged by
// ground truth on the host's directories, the two tasks get two worktrees and two agent state
// directories, each holding its own clone's work and its own agent session; and when one clone
// cleans its task up (a human merged its PR, `polly pr sync`), the other clone's stays.
//
// Each clone pushes its task branch where its developer does: the second one's fetches and pushes
// go to a fork of the origin (`url.<fork>.insteadOf <origin>`), because a task branch `polly/<id>`
// on one origin is one plan's task (Polly refuses to push over another plan's). Its
// `remote.origin.url`, which keys the host's mirror (workers/hosts/worktree-transfer.ts
// `repoKeyFor`), is the origin's, as the first clone's: both share one mirror on the host.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollyIdentity } from '../../brain/core/polly-identity.js';
import { git } from '../helpers/git-repo.js';
import { humanMerge } from '../helpers/human-merge.js';
import { keylessEnv, polly, type PollyOut } from '../helpers/keyless-cli.js';
import { sampleProjectWithOrigin, type SampleProject } from '../helpers/sample-project.js';
import { stopTrackedBrains, trackBrains } from '../helpers/brain-cleanup.js';
import { startSshHosts, writeHostsConfig, type SshHosts } from '../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

const SCRIPT = join(process.cwd(), 'test/fixtures/hosts/script.yaml');

type Registry = {
  tasks: Record<string, { id: string; status: string; host?: string | null; sessionId?: string | null }>;
  workers: Record<string, { id: string; taskId: string; host?: string | null; purpose?: string; sessionId?: string | null }>;
};

/** A plan of one task `t1` by claude-code that adds `name()` (test/fixtures/hosts/script.yaml has its model turns). */
function plan(name: string): string {
  return `goal: Add ${name}
tasks:
  - key: t1
    title: Add ${name}()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: Add ${name}(xs) in src/${name}.js with a test in test/${name}.test.js.
    acceptance:
      commands: [node --test test/${name}.test.js]
      criteria: ["${name}() is exported and tested"]
`;
}

/** Every file path under `dir` (relative), or [] when it does not exist. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

/** The worktrees of task `id` anywhere under the host's `worktrees/` (directories named `id` holding a `.git` file). */
function worktreesOf(hostDir: string, id: string): string[] {
  const root = join(hostDir, 'worktrees');
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name === id)
    .map((e) => join(e.parentPath, e.name))
    .filter((d) => existsSync(join(d, '.git')));
}

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url) || !hasSystemPackage('bubblewrap', import.meta.url))(
  'two clones of one origin, a task of the same id each, on one SSH host',
  () => {
    let hosts: SshHosts;
    let project: SampleProject;
    let clones: Array<{ repo: string; fn: string; id: string }>;
    const outs: PollyOut[] = [];
    const env = keylessEnv();
    const registry = (repo: string): Registry => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8'));

    beforeAll(async () => {
      hosts = await startSshHosts([{ name: 'a' }]);
      project = sampleProjectWithOrigin('polly-clones-');
      const second = join(project.root, 'stats-2');
      git(project.root, ['clone', '-q', project.origin, second]);
      const fork = join(project.root, 'fork.git');
      git(project.root, ['clone', '-q', '--bare', project.origin, fork]);
      git(second, ['config', `url.${fork}.insteadOf`, project.origin]);
      git(second, ['fetch', '-q', 'origin']);
      trackBrains(second);
      clones = [
        { repo: project.repo, fn: 'max', id: pollyIdentity(project.repo).id },
        { repo: second, fn: 'min', id: pollyIdentity(second).id },
      ];
      // One after the other: the second clone's task finds the first one's directories on the host.
      for (const c of clones) {
        await polly(['init'], c.repo, env);
        writeHostsConfig(c.repo, hosts, { capacity: 2 });
        const file = join(project.root, `plan-${c.fn}.yaml`);
        writeFileSync(file, plan(c.fn));
        outs.push(await polly(['try', file, '--script', SCRIPT, '--yes', '--json'], c.repo, env));
      }
    }, 900_000);
    afterAll(async () => {
      await stopTrackedBrains();
      await hosts?.stop();
    });

    const host = (): SshHosts['hosts'][number] => hosts.hosts[0]!;
    const repoKey = (): string => readdirSync(join(host().dir, 'repos'))[0]!;
    const taskId = (repo: string): string => Object.keys(registry(repo).tasks)[0]!;

    it('both tasks ran on the host, under the same task id, each to a ready PR of its own clone', () => {
      for (const [i, o] of outs.entries()) expect(o.code, `polly try in clone ${i}: ${o.stderr.slice(-4000)}`).toBe(0);
      const ids = clones.map((c) => taskId(c.repo));
      expect(ids[0]).toBe(ids[1]);
      // One origin as far as the host goes: the key of its mirror is made of this URL.
      expect(git(clones[0]!.repo, ['config', '--get', 'remote.origin.url'])).toBe(git(clones[1]!.repo, ['config', '--get', 'remote.origin.url']));
      for (const c of clones) {
        const t = registry(c.repo).tasks[ids[0]!]!;
        expect(t.status, JSON.stringify(t)).toBe('ready');
        expect(t.host).toBe('a');
      }
      // One mirror: both clones share its objects.
      expect(readdirSync(join(host().dir, 'repos'))).toHaveLength(1);
    });

    it("ground truth on the host: two worktrees and two agent state directories, each with its own clone's work and session", () => {
      const id = taskId(clones[0]!.repo);
      const key = repoKey();
      // Whatever the layout: two worktrees of the task on the host, one with each clone's function.
      const worktrees = worktreesOf(host().dir, id);
      expect(worktrees, JSON.stringify(worktrees)).toHaveLength(2);
      expect(clones.map((c) => worktrees.filter((w) => existsSync(join(w, 'src', `${c.fn}.js`))).length)).toEqual([1, 1]);
      expect(readdirSync(join(host().dir, 'worktrees', key)).sort()).toEqual(clones.map((c) => c.id).sort());
      for (const [i, c] of clones.entries()) {
        const other = clones[1 - i]!;
        const wt = join(host().dir, 'worktrees', key, c.id, id);
        // The clone's function is in its worktree there, the other clone's is not.
        expect(readFileSync(join(wt, 'src', `${c.fn}.js`), 'utf8')).toContain(`export function ${c.fn}`);
        expect(existsSync(join(wt, 'src', `${other.fn}.js`))).toBe(false);
        // Its result here is its own work: the task branch holds its function and not the other's.
        expect(git(c.repo, ['show', `polly/${id}:src/${c.fn}.js`])).toContain(`export function ${c.fn}`);
        expect(git(c.repo, ['ls-tree', '-r', '--name-only', `polly/${id}`]).split('\n')).not.toContain(`src/${other.fn}.js`);
        // Its agent's session lives in its own state directory there, and only there.
        const reg = registry(c.repo);
        const sessions = Object.values(reg.workers)
          .filter((w) => w.taskId === id && w.purpose !== 'review' && w.host === 'a' && w.sessionId)
          .map((w) => w.sessionId!);
        expect(sessions.length, JSON.stringify(reg.workers)).toBeGreaterThan(0);
        const mine = filesUnder(join(host().dir, 'agents', key, c.id, id, 'claude-code'));
        const theirs = filesUnder(join(host().dir, 'agents', key, other.id, id, 'claude-code'));
        for (const s of sessions) {
          expect(
            mine.some((f) => f.includes(s)),
            `session ${s} of clone ${i} in ${JSON.stringify(mine)}`,
          ).toBe(true);
          expect(theirs.some((f) => f.includes(s))).toBe(false);
        }
      }
    });

    it("cleanup of one clone's task (its PR merged, polly pr sync) removes its worktree and agent state on the host and leaves the other clone's", async () => {
      const [a, b] = clones as [(typeof clones)[0], (typeof clones)[0]];
      const id = taskId(a.repo);
      const key = repoKey();
      const repo = { dir: a.repo, remote: project.origin, root: project.root, git: (args: string[]) => git(a.repo, args), write: () => {}, commitAll: () => '' };
      humanMerge(repo, `polly/${id}`, 'merge');
      const sync = await polly(['pr', 'sync', '--json'], a.repo, env);
      expect(sync.code, sync.stderr).toBe(0);
      expect(registry(a.repo).tasks[id]!.status, `${sync.stdout}\n${sync.stderr}`).toBe('done');
      expect(existsSync(join(host().dir, 'worktrees', key, a.id, id))).toBe(false);
      expect(existsSync(join(host().dir, 'agents', key, a.id, id))).toBe(false);
      // Whatever the layout: the other clone's work is still in a worktree of the task on the host.
      expect(worktreesOf(host().dir, id).filter((w) => existsSync(join(w, 'src', `${b.fn}.js`)))).toHaveLength(1);
      // The other clone's worktree, its work and its agent state are where they were.
      expect(readFileSync(join(host().dir, 'worktrees', key, b.id, id, 'src', `${b.fn}.js`), 'utf8')).toContain(`export function ${b.fn}`);
      expect(filesUnder(join(host().dir, 'agents', key, b.id, id, 'claude-code')).length).toBeGreaterThan(0);
      // The removed work is kept in a backup ref of the first clone's repository on the host.
      const refs = git(join(host().dir, 'clones', key, a.id), ['-c', 'safe.directory=*', 'for-each-ref', '--format=%(refname)', `refs/polly/backup/${id}/`]);
      expect(refs).toMatch(new RegExp(`^refs/polly/backup/${id}/`));
    }, 120_000);
  },
);
