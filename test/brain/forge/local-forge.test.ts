/**
 * The local forge with real git: a temp repository, a bare `origin`, the real registry store.
 * The human's merges (merge commit, fast-forward, squash, rebase) are done with git, as a human would.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { createLocalForge, type LocalForge } from '../../../brain/forge/local-forge.js';
import { detectMerge, watchForMerges } from '../../../brain/forge/merge-detection.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';
import { humanMerge } from '../../helpers/human-merge.js';

const testGit = () => createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });

interface Setup {
  repo: TestRepo;
  forge: LocalForge;
  store: ReturnType<typeof createFileRegistryStore>;
  /** A task branch polly/<id> with `files` committed in its own worktree; returns the head sha. */
  task(id: string, files: Record<string, string>, from?: string): string;
  remoteSha(ref: string): string | null;
}

function setup(): Setup {
  const repo = createTestRepo({ 'README.md': '# demo\n', 'src/a.txt': 'one\ntwo\nthree\n' });
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const forge = createLocalForge({ repoRoot: repo.dir, store, remote: 'origin', git: testGit() });
  mkdirSync(join(repo.root, 'wt'), { recursive: true });
  return {
    repo,
    forge,
    store,
    task(id, files, from = 'main') {
      const wt = join(repo.root, 'wt', id);
      repo.git(['worktree', 'add', '-q', '-b', `polly/${id}`, wt, from]);
      for (const [p, c] of Object.entries(files)) {
        mkdirSync(join(wt, p, '..'), { recursive: true });
        writeFileSync(join(wt, p), c);
      }
      git(wt, ['add', '-A']);
      git(wt, ['commit', '-q', '-m', `task ${id}`]);
      return git(wt, ['rev-parse', 'HEAD']);
    },
    remoteSha(ref) {
      try {
        return git(repo.remote, ['rev-parse', '--verify', '--quiet', ref]);
      } catch {
        return null;
      }
    },
  };
}

describe('local forge', () => {
  test('one PR end to end: pushed branch, draft against the base, review, ready, list; the human merges; Polly never touched main', async () => {
    const s = setup();
    const mainBefore = s.remoteSha('refs/heads/main');
    const head = s.task('t1', { 'src/b.txt': 'new\n' });
    expect(s.remoteSha('refs/heads/polly/t1')).toBeNull();

    const opened = await s.forge.openDraftPullRequest({ head: 'polly/t1', base: 'main', title: 'Task t1', body: '## Task t1\n' });
    expect(opened).toMatchObject({ forge: 'local', number: 1, state: 'draft', headSha: head, url: 'polly-local:pr/1' });
    expect(s.remoteSha('refs/heads/polly/t1')).toBe(head); // the branch is on the bare remote

    await s.forge.postReview(1, { event: 'REQUEST_CHANGES', body: 'one blocking finding', comments: [{ path: 'src/b.txt', line: 1, body: 'say why' }] });
    await s.forge.comment(1, 'checks green');
    expect((await s.forge.getPullRequest(1)).state).toBe('draft');
    await s.forge.markReady(1);
    const info = await s.forge.getPullRequest(1);
    expect(info).toMatchObject({ state: 'ready', merged: false, mergeCommitSha: null, head: 'polly/t1', base: 'main', headSha: head });
    expect((await s.forge.listPullRequests()).map((p) => [p.number, p.state])).toEqual([[1, 'ready']]);
    expect(await s.forge.findOpenPullRequest('polly/t1', 'main')).toMatchObject({ number: 1, state: 'ready', head: 'polly/t1' });
    expect(await s.forge.findOpenPullRequest('polly/t1', 'release')).toBeNull();
    expect(await s.forge.diff(1)).toMatch(/\+\+\+ b\/src\/b\.txt\n@@ -0,0 \+1 @@\n\+new/);

    const record = await s.forge.record(1);
    expect(record.taskId).toBe('t1');
    expect(record.reviews).toEqual([
      expect.objectContaining({ event: 'REQUEST_CHANGES', comments: [{ file: 'src/b.txt', line: 1, message: 'say why' }] }),
      expect.objectContaining({ event: 'COMMENT', body: 'checks green', comments: [] }),
    ]);
    expect(s.remoteSha('refs/heads/main')).toBe(mainBefore); // Polly never commits to the default branch

    // The human merges with a merge commit in their checkout and pushes.
    const mergeCommit = humanMerge(s.repo, 'polly/t1', 'merge');
    expect(await s.forge.getPullRequest(1)).toMatchObject({ state: 'merged', merged: true, mergeCommitSha: mergeCommit });
    expect(await s.forge.listPullRequests()).toEqual([]);
    expect(await s.forge.findOpenPullRequest('polly/t1', 'main')).toBeNull(); // merged: not open
    expect((await s.forge.listPullRequests({ state: 'closed' })).map((p) => p.number)).toEqual([1]);
    expect(await s.forge.diff(1)).toMatch(/\+new/); // still shows what the PR brought
    await expect(s.forge.markReady(1)).rejects.toMatchObject({ code: 'conflict' });
    const kinds = (await s.store.journal()).map((e) => e.kind);
    expect(kinds).toEqual(['pr.opened', 'pr.review', 'pr.comment', 'pr.ready', 'pr.merged']);
  });

  test('a fast-forward merge on the remote is detected, with the head itself as the merge commit', async () => {
    const s = setup();
    const head = s.task('ff', { 'src/ff.txt': 'ff\n' });
    await s.forge.openDraftPullRequest({ head: 'polly/ff', base: 'main', title: 'ff', body: '' });
    // The human fast-forwards main on the remote directly (e.g. from another clone).
    git(s.repo.remote, ['update-ref', 'refs/heads/main', head]);
    expect(await s.forge.getPullRequest(1)).toMatchObject({ state: 'merged', mergeCommitSha: head });
  });

  test('a squash merge is detected even after main moved on, and even after the head branch was deleted', async () => {
    const s = setup();
    s.task('sq', { 'src/sq.txt': 'first\n' });
    const wt = join(s.repo.root, 'wt', 'sq');
    writeFileSync(join(wt, 'src/sq2.txt'), 'second\n');
    git(wt, ['add', '-A']);
    git(wt, ['commit', '-q', '-m', 'second commit']);
    await s.forge.openDraftPullRequest({ head: 'polly/sq', base: 'main', title: 'sq', body: '' });
    // main moves on with an unrelated change, then the human squashes the PR onto it.
    s.repo.write('README.md', '# demo, moved on\n');
    s.repo.commitAll('unrelated');
    const squash = humanMerge(s.repo, 'polly/sq', 'squash', { push: false });
    s.repo.write('src/a.txt', 'one\ntwo\nthree\nfour\n');
    s.repo.commitAll('later work');
    s.repo.git(['push', '-q', 'origin', 'main']);
    git(s.repo.remote, ['branch', '-D', 'polly/sq']); // the human deletes the merged branch
    expect(await s.forge.getPullRequest(1)).toMatchObject({ state: 'merged', merged: true, mergeCommitSha: squash });
  });

  test('an open PR whose head and base did not move is not examined again; its squash merge afterwards is still found', async () => {
    const s = setup();
    const calls: string[][] = [];
    const inner = testGit();
    const counted = {
      ...inner,
      run: (args: readonly string[], o: Parameters<typeof inner.run>[1]) => {
        calls.push([...args]);
        return inner.run(args, o);
      },
    };
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store, remote: 'origin', git: counted });
    s.task('memo', { 'src/memo.txt': 'memo\n' });
    await forge.openDraftPullRequest({ head: 'polly/memo', base: 'main', title: 'memo', body: '' });
    const detection = () => calls.filter((a) => ['merge-base', 'merge-tree', 'cherry', 'rev-list'].includes(a[0]!)).length;

    expect((await forge.getPullRequest(1)).state).toBe('draft');
    const first = detection();
    expect(first).toBeGreaterThan(0); // examined once
    await forge.listPullRequests();
    expect((await forge.getPullRequest(1)).state).toBe('draft');
    expect(detection()).toBe(first); // nothing moved: not examined again

    // The base moves (unrelated work): examined again, still open.
    s.repo.write('README.md', '# demo, moved on\n');
    s.repo.commitAll('unrelated');
    s.repo.git(['push', '-q', 'origin', 'main']);
    expect((await forge.getPullRequest(1)).state).toBe('draft');
    expect(detection()).toBeGreaterThan(first);

    // The human squashes it: the next refresh finds it, as a forge without the memo would.
    const squash = humanMerge(s.repo, 'polly/memo', 'squash', { push: true });
    expect(await forge.getPullRequest(1)).toMatchObject({ state: 'merged', merged: true, mergeCommitSha: squash });
  });

  test('a rebase merge is recognised patch by patch; an unmerged branch stays open until its branch is deleted (closed)', async () => {
    const s = setup();
    s.task('rb', { 'src/rb.txt': 'rb\n' });
    s.task('open', { 'src/open.txt': 'still open\n' });
    await s.forge.openDraftPullRequest({ head: 'polly/rb', base: 'main', title: 'rb', body: '' });
    await s.forge.openDraftPullRequest({ head: 'polly/open', base: 'main', title: 'open', body: '' });
    s.repo.write('README.md', '# moved\n');
    s.repo.commitAll('unrelated');
    const picked = humanMerge(s.repo, 'polly/rb', 'rebase', { push: false });
    s.repo.write('src/rb.txt', 'rb changed again later\n');
    s.repo.commitAll('rb changed again'); // tree equality no longer holds; the patch-id still does
    s.repo.git(['push', '-q', 'origin', 'main']);
    expect(await s.forge.getPullRequest(1)).toMatchObject({ state: 'merged', mergeCommitSha: picked });
    expect(await s.forge.getPullRequest(2)).toMatchObject({ state: 'draft', merged: false });
    git(s.repo.remote, ['branch', '-D', 'polly/open']); // the human deletes an unmerged branch: closed, as on GitHub
    expect(await s.forge.getPullRequest(2)).toMatchObject({ state: 'closed', merged: false });
    expect((await s.store.journal()).map((e) => e.kind).slice(-1)).toEqual(['pr.closed']);
    const d = await detectMerge(testGit(), s.repo.dir, { head: 'polly/open', baseRefs: ['refs/heads/main', 'refs/heads/nope'] });
    expect(d).toEqual({ merged: false, how: null, baseRef: null, mergeCommitSha: null });
  });

  test('a fix pushed to the branch moves the PR head; watchForMerges notices the merge', async () => {
    const s = setup();
    s.task('fx', { 'src/fx.txt': 'v1\n' });
    await s.forge.openDraftPullRequest({ head: 'polly/fx', base: 'main', title: 'fx', body: '' });
    const wt = join(s.repo.root, 'wt', 'fx');
    writeFileSync(join(wt, 'src/fx.txt'), 'v2\n');
    git(wt, ['commit', '-q', '-am', 'fix round']);
    const v2 = git(wt, ['rev-parse', 'HEAD']);
    git(wt, ['push', '-q', 'origin', 'polly/fx']); // the PR step's plain push of the fix
    expect((await s.forge.getPullRequest(1)).headSha).toBe(v2);
    let t = 0;
    let round = 0;
    const clock = {
      now: () => t,
      async sleep(ms: number) {
        t += ms;
        if (++round === 2) {
          humanMerge(s.repo, 'polly/fx', 'ff');
        }
      },
    };
    const seen: string[] = [];
    const last = await watchForMerges(s.forge, [1], { clock, intervalMs: 30_000, onChange: (i) => void seen.push(i.state) });
    expect(seen).toEqual(['draft', 'merged']);
    expect(last.get(1)).toMatchObject({ state: 'merged', mergeCommitSha: v2 });
    expect(t).toBe(60_000);
  });

  test('refusals: the default branch, a branch with nothing new, a duplicate PR, a push that would need force — nothing is forced, main is untouched', async () => {
    const s = setup();
    const mainBefore = s.remoteSha('refs/heads/main');
    s.repo.write('src/a.txt', 'local change on main\n');
    s.repo.commitAll('local main commit');
    const err = await s.forge.openDraftPullRequest({ head: 'main', base: 'release', title: 'x', body: '' }).catch((e: unknown) => e);
    expect(isPollyError(err, 'bad_input')).toBe(true);
    expect((err as Error).message).toMatch(/default branch/);
    await expect(s.forge.openDraftPullRequest({ head: 'polly/x', base: 'polly/x', title: 'x', body: '' })).rejects.toMatchObject({ code: 'bad_input' });
    await expect(s.forge.openDraftPullRequest({ head: 'polly/nope', base: 'main', title: 'x', body: '' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(s.forge.openDraftPullRequest({ head: 'polly/t', base: '-delete', title: 'x', body: '' })).rejects.toMatchObject({ code: 'bad_input' });
    s.repo.git(['branch', 'polly/empty', mainBefore!]);
    await expect(s.forge.openDraftPullRequest({ head: 'polly/empty', base: 'main', title: 'x', body: '' })).rejects.toMatchObject({
      code: 'forge_failed',
      message: expect.stringMatching(/no commits between/),
    });

    s.task('dup', { 'src/dup.txt': 'x\n' });
    await s.forge.openDraftPullRequest({ head: 'polly/dup', base: 'main', title: 'dup', body: '' });
    await expect(s.forge.openDraftPullRequest({ head: 'polly/dup', base: 'main', title: 'dup', body: '' })).rejects.toMatchObject({ code: 'conflict' });

    // Someone else pushed a different polly/div to the remote: a plain push is rejected, not forced.
    const theirs = s.task('div', { 'src/div.txt': 'theirs\n' });
    git(s.repo.dir, ['push', '-q', 'origin', 'polly/div']);
    const wt = join(s.repo.root, 'wt', 'div');
    git(wt, ['reset', '-q', '--hard', 'HEAD~1']);
    writeFileSync(join(wt, 'src/div.txt'), 'ours\n');
    git(wt, ['add', '-A']);
    git(wt, ['commit', '-q', '-m', 'ours']);
    const pushErr = await s.forge.openDraftPullRequest({ head: 'polly/div', base: 'main', title: 'div', body: '' }).catch((e: unknown) => e);
    expect(isPollyError(pushErr, 'forge_failed')).toBe(true);
    expect((pushErr as Error).message).toMatch(/rejected.*never force-pushes/s);
    expect(s.remoteSha('refs/heads/polly/div')).toBe(theirs);
    expect(s.remoteSha('refs/heads/main')).toBe(mainBefore);
    expect((await s.forge.listPullRequests()).map((p) => p.head)).toEqual(['polly/dup']);
    await expect(s.forge.getPullRequest(42)).rejects.toMatchObject({ code: 'not_found' });
  });
});
