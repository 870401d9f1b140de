/**
 * After merge: a human merges with git (a merge commit, a squash) on the local forge, or on GitHub
 * (simulator); one pass of watchMerges marks the task done and removes its worktree after a backup
 * ref exists. Polly merges nothing: the default branch's new commits are the human's alone.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { existsSync } from 'node:fs';
import { watchMerges } from '../../../brain/forge/after-merge.js';
import { createGitHubForge } from '../../../brain/forge/github-forge.js';
import { createGitHubClient } from '../../../brain/forge/github-client.js';
import { createGitHubPullWatcher } from '../../../brain/forge/github-watch.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createMarkReadyTool } from '../../../brain/task-tools/mark-ready.js';
import { createOpenDraftPrTool } from '../../../brain/task-tools/open-draft-pr.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { createFakeClock, startGitHubSimulator, type GitHubSimulator } from '../../helpers/github-simulator.js';
import { humanMerge } from '../../helpers/human-merge.js';
import { commitIn, createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';

let sim: GitHubSimulator | null = null;
afterAll(async () => {
  await sim?.close();
});

describe('after merge (watchMerges, one pass)', () => {
  test('local forge: a merge commit and a squash by the human → both tasks done, worktrees removed after their backup; an unmerged PR stays open', async () => {
    const s = createPrStepSetting({ 'README.md': '# calc\n', 'src/a.js': 'a\n', 'src/b.js': 'b\n', 'src/c.js': 'c\n' });
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const base = s.repo.git(['rev-parse', 'main']);
    const tasks = [];
    for (const [id, file] of [
      ['m1', 'src/a.js'],
      ['m2', 'src/b.js'],
      ['m3', 'src/c.js'],
    ] as const) {
      tasks.push(await createGreenTask(s, id, { [file]: `${id} was here\n` }));
      for (const [name, tool] of [
        ['push', createPushTool()],
        ['open', createOpenDraftPrTool()],
        ['ready', createMarkReadyTool()],
      ] as const) {
        expect((await runner.run(tool, id, `${id}-${name}`)).outcome).toBe('ok');
      }
    }
    // Nothing merged yet: the pass reads, changes nothing.
    const idle = await watchMerges({ store: s.store, forge, worktrees: s.worktrees });
    expect(idle).toMatchObject({ checked: ['m1', 'm2', 'm3'], done: [], closed: [], errors: [] });
    expect(tasks.every((t) => existsSync(t.worktree!))).toBe(true);

    // The human merges m1 with a merge commit and squashes m2, then pushes main.
    const mergeCommit = humanMerge(s.repo, 'polly/m1', 'merge', { message: 'Merge m1 (human)' });
    const squashCommit = humanMerge(s.repo, 'polly/m2', 'squash', { message: 'Squash m2 (human)' });

    const lines: string[] = [];
    const report = await watchMerges({ store: s.store, forge, worktrees: s.worktrees, progress: (l) => lines.push(l) });
    expect(report.errors).toEqual([]);
    expect(report.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual([
      ['m1', mergeCommit],
      ['m2', squashCommit],
    ]);
    const reg = await s.store.read();
    for (const [i, id] of (['m1', 'm2'] as const).entries()) {
      const t = reg.tasks[id]!;
      expect(t).toMatchObject({ status: 'done', pr: { state: 'merged' } });
      expect(t.backupRefs).toEqual([report.done[i]!.backupRef]);
      expect(t.backupRefs[0]).toMatch(new RegExp(`^refs/polly/backup/${id}/`));
      // The backup keeps the task's commit, and the worktree is gone.
      expect(s.repo.git(['merge-base', '--is-ancestor', tasks[i]!.headCommit!, t.backupRefs[0]!]) === '').toBe(true);
      expect(existsSync(tasks[i]!.worktree!)).toBe(false);
    }
    expect(reg.tasks.m3).toMatchObject({ status: 'ready', pr: { state: 'ready' } });
    expect(existsSync(tasks[2]!.worktree!)).toBe(true);
    expect(lines).toHaveLength(2);
    const kinds = (await s.store.journal()).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'task.merged' || k === 'task.done')).toEqual(['task.merged', 'task.done', 'task.merged', 'task.done']);

    // Main's first-parent history since the base: the human's two commits, nothing else.
    s.repo.git(['fetch', '-q', 'origin']);
    expect(s.repo.git(['rev-list', '--first-parent', `${base}..origin/main`]).split('\n')).toEqual([squashCommit, mergeCommit]);
    expect(s.repo.git(['log', '--format=%s', '--first-parent', `${base}..origin/main`]).split('\n')).toEqual(['Squash m2 (human)', 'Merge m1 (human)']);

    // A second pass finds nothing more to do.
    expect(await watchMerges({ store: s.store, forge, worktrees: s.worktrees })).toMatchObject({ checked: ['m3'], done: [], errors: [] });
  }, 60_000);

  test('local forge: two commits squashed, then another commit on main edits the same lines → task done, worktree removed after backup; an unmerged PR on the same file stays open', async () => {
    const lines10 = `${Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n')}\n`;
    const s = createPrStepSetting({ 'README.md': '# calc\n', 'src/a.js': lines10, 'src/b.js': 'b\n' });
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const edited = lines10.replace('line 2', 'line 2 (e1)');
    const task = await createGreenTask(s, 'e1', { 'src/a.js': edited });
    // A second commit on the task branch: line 7 too, and a new file.
    commitIn(task.worktree!, { 'src/a.js': edited.replace('line 7', 'line 7 (e1)'), 'src/e1.js': 'e1\n' }, 'e1: second commit');
    // Another task changes the same file elsewhere and is never merged.
    const other = await createGreenTask(s, 'e2', { 'src/a.js': lines10.replace('line 9', 'line 9 (e2)') });
    for (const id of ['e1', 'e2']) {
      for (const [name, tool] of [
        ['push', createPushTool()],
        ['open', createOpenDraftPrTool()],
        ['ready', createMarkReadyTool()],
      ] as const) {
        expect((await runner.run(tool, id, `${id}-${name}`)).outcome).toBe('ok');
      }
    }
    const head = (await s.store.read()).tasks.e1!.headCommit!;
    // The human squashes e1's two commits, then edits the same lines again on main, and pushes.
    const squashCommit = humanMerge(s.repo, 'polly/e1', 'squash', { message: 'Squash e1 (human)', push: false });
    s.repo.write('src/a.js', edited.replace('line 7', 'line 7 (e1, reworded by the human)').replace('line 2 (e1)', 'line two'));
    s.repo.commitAll('human: reword lines 2 and 7');
    s.repo.git(['push', '-q', 'origin', 'main']);
    // The tip of main no longer contains e1's change (its lines read otherwise now).
    expect(s.repo.git(['show', 'main:src/a.js'])).not.toContain('line 2 (e1)');

    const report = await watchMerges({ store: s.store, forge, worktrees: s.worktrees });
    expect(report.errors).toEqual([]);
    expect(report.closed).toEqual([]);
    expect(report.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual([['e1', squashCommit]]);
    const reg = await s.store.read();
    expect(reg.tasks.e1).toMatchObject({ status: 'done', pr: { state: 'merged' } });
    expect(reg.tasks.e1!.backupRefs[0]).toMatch(/^refs\/polly\/backup\/e1\//);
    expect(s.repo.git(['merge-base', '--is-ancestor', head, reg.tasks.e1!.backupRefs[0]!])).toBe('');
    expect(existsSync(task.worktree!)).toBe(false);
    expect(reg.tasks.e2).toMatchObject({ status: 'ready', pr: { state: 'ready' } });
    expect(existsSync(other.worktree!)).toBe(true);
  }, 180_000);

  test('GitHub: the human squash-merges on GitHub → the task is done and its worktree removed after a backup; Polly sent no merge request; behind the PR watcher the pass reads only what it found merged', async () => {
    const s = createPrStepSetting({ 'README.md': '# calc\n' });
    const clock = createFakeClock();
    sim = await startGitHubSimulator({ clock, branches: { main: s.repo.git(['rev-parse', 'main']) } });
    const forge = createGitHubForge({ owner: sim.owner, repo: sim.repo, token: 'ghp_FAKEtokenForTheSimulator0123456789ab', baseUrl: sim.baseUrl });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const task = await createGreenTask(s, 'gm1', { 'NOTES.md': 'notes\n' });
    expect((await runner.run(createPushTool(), 'gm1', 'o1')).outcome).toBe('ok');
    sim.setBranch('polly/gm1', task.headCommit!);
    expect((await runner.run(createOpenDraftPrTool(), 'gm1', 'o2')).outcome).toBe('ok');
    expect((await watchMerges({ store: s.store, forge, worktrees: s.worktrees })).done).toEqual([]);
    // Behind the PR watcher (the Brain on GitHub): an open PR the watcher reads costs the pass no request.
    const client = createGitHubClient({ token: 'ghp_FAKEtokenForTheSimulator0123456789ab', baseUrl: sim.baseUrl });
    const watcher = createGitHubPullWatcher({ store: s.store, client, owner: sim.owner, repo: sim.repo });
    const watched = { store: s.store, forge, worktrees: s.worktrees, githubWatched: true };
    await watcher.pass();
    const before = sim.requests.length;
    expect(await watchMerges(watched)).toMatchObject({ checked: [], done: [] });
    const merged = sim.humanMerge(1, 'squash');
    expect((await watchMerges(watched)).checked).toEqual([]); // the watcher has not seen the merge yet
    expect(sim.requests.length).toBe(before);
    await watcher.pass(); // it has now: pr.watch.final = merged
    const report = await watchMerges(watched);
    expect(report.checked).toEqual(['gm1']);
    expect(report.done).toEqual([{ taskId: 'gm1', number: 1, mergeCommitSha: merged, backupRef: expect.stringMatching(/^refs\/polly\/backup\/gm1\//) }]);
    expect((await s.store.read()).tasks.gm1).toMatchObject({ status: 'done', pr: { state: 'merged' } });
    expect(existsSync(task.worktree!)).toBe(false);
    expect(s.repo.git(['rev-parse', report.done[0]!.backupRef!])).toMatch(/^[0-9a-f]{40}$/);
    expect(sim.mergeRequests()).toEqual([]);
  });
});
