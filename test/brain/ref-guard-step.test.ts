/**
 * The ref guard around a task step, when a person works in the main checkout meanwhile. Inside
 * Polly's sandbox the repository's git metadata is read-only to the step, so a commit on `main`, a
 * new tag, `git config` or a hooks path written by `npm install` during the step are the person's:
 * they stay, and the task goes on. Polly's own refs are guarded either way, and without the
 * sandbox (`workers.allow_unconfined`) every change counts, as before.
 *
 * Real git on a temp repository with a bare origin; the step is plain git run by the test, which is
 * what a person (or, unconfined, a worker) does.
 */
import { describe, expect, it } from 'vitest';
import { withRefGuard } from '../../brain/task-tools/ref-guard-step.js';
import { createMemoryRegistryStore } from '../../brain/registry/registry-store.js';
import { registryWithTasks } from '../helpers/registry-sample.js';
import { createTestRepo, git } from '../helpers/git-repo.js';

function setup(allowUnconfined: boolean) {
  const repo = createTestRepo();
  git(repo.dir, ['branch', 'polly/t2']);
  const reg = registryWithTasks(1);
  reg.tasks.t1!.status = 'running';
  reg.tasks.t1!.branch = 'polly/t1';
  const store = createMemoryRegistryStore({ initial: reg });
  const lines: string[] = [];
  const ctx = {
    repoRoot: repo.dir,
    store,
    progress: (l: string) => lines.push(l),
    task: { id: 't1', branch: 'polly/t1' },
    order: { id: 'o1' },
    config: { workers: { allow_unconfined: allowUnconfined } },
  };
  return { repo, store, ctx, lines };
}

/** What a person does in the main checkout while a task's step runs. */
function personWorks(dir: string): string {
  git(dir, ['commit', '-q', '--allow-empty', '-m', 'my own work on main']);
  git(dir, ['tag', 'v0.1']);
  git(dir, ['config', 'core.hooksPath', '.husky/_']);
  git(dir, ['push', '-q', 'origin', 'main']);
  return git(dir, ['rev-parse', 'main']);
}

describe('the ref guard beside a person working in the main checkout', () => {
  it("a sandboxed step: the person's commit, tag, push and config stay, the task goes on, and it is journaled", async () => {
    const { repo, store, ctx, lines } = setup(false);
    let mine = '';
    const { violation } = await withRefGuard(ctx, 'the pi implementer turn', async () => {
      mine = personWorks(repo.dir);
    });
    expect(violation).toBeNull();
    expect(git(repo.dir, ['rev-parse', 'main'])).toBe(mine);
    expect(git(repo.remote, ['rev-parse', 'main'])).toBe(mine);
    expect(git(repo.dir, ['tag', '--list', 'v0.1'])).toBe('v0.1');
    expect(git(repo.dir, ['config', 'core.hooksPath'])).toBe('.husky/_');
    expect((await store.read()).tasks.t1!.status).toBe('running');
    const events = (await store.journal()).filter((e) => e.kind === 'guard.outside_change');
    expect(events).toHaveLength(1);
    const names = (events[0]!.data.changes as Array<{ name: string; scope: string }>).map((c) => `${c.scope} ${c.name}`);
    expect(names).toEqual(expect.arrayContaining(['local refs/heads/main', 'local refs/tags/v0.1', 'remote:origin refs/heads/main', 'local config']));
    expect(lines.join('\n')).toMatch(/outside the sandboxed the pi implementer turn .*left as it is/);
  });

  it("a sandboxed step: another task's branch moved is still restored and fails the task", async () => {
    const { repo, store, ctx } = setup(false);
    const before = git(repo.dir, ['rev-parse', 'polly/t2']);
    const { violation } = await withRefGuard(ctx, 'the pi implementer turn', async () => {
      personWorks(repo.dir);
      git(repo.dir, ['branch', '-f', 'polly/t2', 'main']);
    });
    expect(violation?.reason).toMatch(/refs\/heads\/polly\/t2 changed/);
    expect(violation?.reason).not.toMatch(/refs\/heads\/main/);
    expect(git(repo.dir, ['rev-parse', 'polly/t2'])).toBe(before);
    expect((await store.read()).tasks.t1!.status).toBe('failed');
  });

  it('an unconfined step (workers.allow_unconfined): a moved main is put back and fails the task, the value kept in quarantine', async () => {
    const { repo, store, ctx } = setup(true);
    const main0 = git(repo.dir, ['rev-parse', 'main']);
    let mine = '';
    const { violation } = await withRefGuard(ctx, 'the pi implementer turn', async () => {
      mine = personWorks(repo.dir);
    });
    expect(violation?.reason).toMatch(/refs\/heads\/main changed/);
    expect(git(repo.dir, ['rev-parse', 'main'])).toBe(main0);
    expect(git(repo.dir, ['for-each-ref', '--format=%(objectname)', 'refs/polly/quarantine/'])).toContain(mine);
    expect((await store.read()).tasks.t1!.status).toBe('failed');
  });
});
