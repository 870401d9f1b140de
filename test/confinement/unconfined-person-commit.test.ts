/**
 * A person's commit during a worker's step, without Polly's sandbox (`workers.allow_unconfined`).
 * Confined, the ref guard tells it apart by capability (the sandbox cannot write the common git
 * dir; test/confinement/person-commit-during-turn.test.ts). Unconfined nothing separates them: the
 * worker runs as the same user with the same rights, and can forge a commit's author and time and
 * a reflog's message. So the guard puts the change back like a worker's and fails the task, and
 * the user must be told, before (the warning at every unconfined dispatch) and after (the task's
 * reason says so and where the commit went). Ground truth: refs and the quarantine ref.
 *
 * The guard in-process around a step in which "the person" commits on `main` with git, the way the
 * Brain wraps a turn (`withRefGuard` with the step's mounts: none, unconfined). Cheap: no CLI.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryRegistryStore } from '../../brain/registry/registry-store.js';
import { withRefGuard } from '../../brain/task-tools/ref-guard-step.js';
import { createGitRunner } from '../../workers/git/git.js';
import { decideConfinement } from '../../workers/sandbox/sandbox.js';
import { createTestRepo, git, gitTestEnv } from '../helpers/git-repo.js';

describe("unconfined, a person's commit during a step", () => {
  it('is put back and kept under refs/polly/quarantine/, and Polly says it cannot tell it from a worker, before and after', async () => {
    // Before: the warning printed at every unconfined dispatch says it.
    const { warning } = decideConfinement(true, { ok: false, reason: 'bubblewrap is not installed', fix: 'apt-get install bubblewrap' });
    expect(warning).toMatch(/cannot tell a worker's ref change from yours/);
    expect(warning).toMatch(/refs\/polly\/quarantine\//);

    const repo = createTestRepo();
    const mainBefore = git(repo.dir, ['rev-parse', 'refs/heads/main']);
    const store = createMemoryRegistryStore();
    const progress: string[] = [];
    const ctx = { repoRoot: repo.dir, store, progress: (l: string) => progress.push(l), clock: () => new Date(), task: { id: 'u1', branch: 'polly/u1' }, order: { id: 'u1:turn' } };
    let personCommit = '';
    const { violation } = await withRefGuard(
      ctx,
      'the pi implementer turn',
      async () => {
        // The person, in the main checkout, while the (unconfined) worker's turn runs.
        git(repo.dir, ['commit', '-q', '--allow-empty', '-m', 'my own work']);
        personCommit = git(repo.dir, ['rev-parse', 'HEAD']);
        return { sandboxMounts: null };
      },
      { git: createGitRunner({ baseEnv: gitTestEnv() }), confinement: (r) => r.sandboxMounts },
    );

    // Put back (unconfined: no way to know it was not the worker), and kept.
    expect(git(repo.dir, ['rev-parse', 'refs/heads/main'])).toBe(mainBefore);
    expect(violation?.report.quarantined).toHaveLength(1);
    expect(git(repo.dir, ['rev-parse', violation!.report.quarantined[0]!])).toBe(personCommit);
    // After: the reason says why and where the commit is.
    expect(violation?.reason).toMatch(/^ref guard: during the pi implementer turn: refs\/heads\/main changed/);
    expect(violation?.reason).toMatch(/without Polly's sandbox, where a worker's ref change and yours cannot be told apart/);
    expect(violation?.reason).toMatch(/its value is under refs\/polly\/quarantine\/ \(git update-ref <ref> <that value> restores it\)/);
    expect(progress.join('\n')).toContain('cannot be told apart');
  });
});
