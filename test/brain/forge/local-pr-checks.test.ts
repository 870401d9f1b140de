/**
 * The local forge's CI (brain/forge/local-pr-checks.ts) with real git, the real registry store and
 * the real acceptance runner in Polly's sandbox: a base that moves under a ready PR without a
 * textual conflict is checked on the merge, once per (head, base) pair; a semantic break (a function
 * renamed on main, still imported by the PR) journals `pr.checks_failed`, which the Brain routes as
 * BASE_CHECKS_FAILED; a check program that is not there (exit 127) is reported, not routed. The
 * task's branch, worktree and refs are never written.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createLocalPrChecks } from '../../../brain/forge/local-pr-checks.js';
import { pullRequestStatus } from '../../../brain/forge/pr-status.js';
import { actionablePrEvents, fixRoundFeedback } from '../../../brain/process/pr-events.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { newTaskRecord } from '../../../brain/registry/task-record.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';

const testGit = () => createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });

const A = `export function oldName(x) {\n  return x + 1;\n}\n`;

describe('the local forge checks a ready PR on the merge with its moved base', () => {
  test('nothing while the base is in the head; a harmless move is green once; a rename on main breaks the merge: pr.checks_failed once, routed as BASE_CHECKS_FAILED; the task branch is untouched', async () => {
    const repo = createTestRepo({ 'README.md': '# demo\n', 'src/a.mjs': A });
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store, git: testGit() });
    // The task's work, in its own worktree: a new module that imports oldName.
    const wt = join(repo.root, 'wt', 't1');
    mkdirSync(join(repo.root, 'wt'), { recursive: true });
    repo.git(['worktree', 'add', '-q', '-b', 'polly/p1-t1', wt, 'main']);
    writeFileSync(join(wt, 'src/b.mjs'), `import { oldName } from './a.mjs';\nif (oldName(1) !== 2) process.exit(1);\nconsole.log('b ok');\n`);
    git(wt, ['add', '-A']);
    git(wt, ['commit', '-q', '-m', 'task t1']);
    const head = git(wt, ['rev-parse', 'HEAD']);
    const { number } = await forge.openDraftPullRequest({ head: 'polly/p1-t1', base: 'main', title: 'Add b', body: 'b' });
    await forge.markReady(number);
    await store.update((draft) => {
      const t = newTaskRecord(
        {
          id: 'p1-t1',
          planId: 'p1',
          title: 'Add b',
          purpose: 'implement',
          worker: 'claude-code',
          model: null,
          reviewer: 'pi',
          prompt: 'add b',
          acceptance: { commands: ['node src/b.mjs'], criteria: [] },
          dependsOn: [],
        },
        new Date().toISOString(),
      );
      t.status = 'ready';
      t.pr = { forge: 'local', number, url: `polly-local:pr/${number}`, state: 'ready' };
      draft.tasks[t.id] = t;
    });
    const checks = createLocalPrChecks({ repoRoot: repo.dir, store, config: DEFAULT_CONFIG, git: testGit(), scratchRoot: join(repo.root, 'scratch') });
    const failedEvents = async () => (await store.journal()).filter((e) => e.kind === 'pr.checks_failed');
    const refsBefore = repo.git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/polly']);
    const worktrees = () =>
      repo
        .git(['worktree', 'list', '--porcelain'])
        .split('\n')
        .filter((l) => l.startsWith('worktree '));
    const worktreesBefore = worktrees();

    // 1. The base has not moved: the task's own acceptance run covered the head.
    let report = await checks.pass();
    expect(report.checked).toEqual([]);
    expect(report.skipped[0]).toMatchObject({ number, reason: expect.stringMatching(/already in the head/) });

    // 2. A harmless change lands on main: checked on the merge, green, once.
    repo.write('README.md', '# demo\n\nMore words.\n');
    const harmless = repo.commitAll('docs');
    repo.git(['push', '-q', 'origin', 'main']);
    report = await checks.pass();
    expect(report.checked).toEqual([{ number, taskId: 'p1-t1', headCommit: head, baseCommit: harmless, conclusion: 'success' }]);
    expect((await checks.pass()).skipped[0]!.reason).toMatch(/checked before: success/);
    expect(await failedEvents()).toEqual([]);

    // 3. A human renames oldName on main (a.mjs only; the PR's b.mjs still imports the old name): no textual conflict.
    repo.write('src/a.mjs', A.replace('oldName', 'newName'));
    const rename = repo.commitAll('Rename oldName to newName');
    repo.git(['push', '-q', 'origin', 'main']);
    report = await checks.pass();
    expect(report.errors).toEqual([]);
    expect(report.checked).toEqual([{ number, taskId: 'p1-t1', headCommit: head, baseCommit: rename, conclusion: 'failure' }]);
    const events = await failedEvents();
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      forge: 'local',
      number,
      taskId: 'p1-t1',
      headCommit: head,
      base: 'main',
      baseCommit: rename,
      checks: [{ name: 'node src/b.mjs', conclusion: 'failure', summary: expect.stringContaining('exited 1') }],
    });
    const excerpt = String((events[0]!.data.checks as Array<Record<string, unknown>>)[0]!.logExcerpt);
    expect(excerpt).toMatch(/does not provide an export named 'oldName'/);
    // Once per (head, base): the next pass journals nothing new.
    await checks.pass();
    expect(await failedEvents()).toHaveLength(1);

    // Shown: the PR's checks are failing although the task's own run was green.
    const pr = (await store.read()).pullRequests[String(number)]!;
    expect(pr.localCheck).toMatchObject({ headCommit: head, baseCommit: rename, conclusion: 'failure' });
    expect(pullRequestStatus(pr, [{ command: 'node src/b.mjs', exitCode: 0, timedOut: false, durationMs: 5, output: 'b ok' }]).checks).toBe('failing');
    // Routed as a fix round that merges the base in first, with the log excerpt for the worker.
    const signals = actionablePrEvents(await store.journal(), 'p1-t1', 0);
    expect(signals.map((s) => s.action)).toEqual(['BASE_CHECKS_FAILED']);
    const feedback = fixRoundFeedback((await store.read()).tasks['p1-t1']!, 'BASE_CHECKS_FAILED', signals, 1, 3);
    expect(feedback).toContain('Polly has merged main into your worktree');
    expect(feedback).toContain("does not provide an export named 'oldName'");

    // No write to the task's branch or worktree, no ref, no worktree registration.
    expect(git(wt, ['rev-parse', 'HEAD'])).toBe(head);
    expect(git(wt, ['status', '--porcelain'])).toBe('');
    expect(repo.git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/polly'])).toBe(
      refsBefore.replace(/^\S+ refs\/heads\/main$/m, `${rename} refs/heads/main`),
    );
    expect(worktrees()).toEqual(worktreesBefore);

    // 3b. A check program that is not there (exit 127) is the environment, not the PR: recorded and
    // reported, but no pr.checks_failed, so no agent turn is spent on it.
    await store.update((d) => {
      d.tasks['p1-t1']!.acceptance.commands = ['no-such-program-polly-test'];
    });
    repo.write('NOTES.txt', 'unrelated\n');
    const unrelated = repo.commitAll('notes');
    repo.git(['push', '-q', 'origin', 'main']);
    report = await checks.pass();
    expect(report.checked).toEqual([{ number, taskId: 'p1-t1', headCommit: head, baseCommit: unrelated, conclusion: 'failure' }]);
    expect(report.errors).toEqual([
      {
        number,
        message: expect.stringMatching(
          /^the check "no-such-program-polly-test" cannot run here \(exit 127: the program "no-such-program-polly-test" is missing\): .*no fix round was started$/,
        ),
      },
    ]);
    expect(await failedEvents()).toHaveLength(1);
    await store.update((d) => {
      d.tasks['p1-t1']!.acceptance.commands = ['node src/b.mjs'];
    });

    // 4. A conflicting change on main is pr.conflicts' business: no check runs.
    writeFileSync(join(wt, 'README.md'), '# demo from the task\n');
    git(wt, ['commit', '-q', '-am', 'task readme']);
    git(wt, ['push', '-q', 'origin', 'polly/p1-t1']);
    await forge.record(number); // the forge notices the new head (and the conflict with main's README)
    report = await checks.pass();
    expect(report.checked).toEqual([]);
    expect(report.skipped[0]!.reason).toMatch(/conflicts in README\.md/);
  }, 60_000);
});
