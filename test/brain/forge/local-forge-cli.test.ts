/**
 * `polly pr list|show|diff` through the real compiled CLI, over PRs opened by the real local forge
 * in a temp repository with a bare origin.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { toInboxEvents } from '../../../brain/mcp/inbox-events.js';
import { actionablePrEvents } from '../../../brain/process/pr-events.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { newTaskRecord } from '../../../brain/registry/task-record.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { runCli } from '../../helpers/registry-cli.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';

describe('polly pr (local forge)', () => {
  test('list, show and diff, human and --json; merged PRs only with --all; no merge subcommand', async () => {
    const repo = createTestRepo({ 'README.md': '# demo\n' });
    mkdirSync(join(repo.dir, '.polly'));
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store, git: createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } }) });
    const wt = join(repo.root, 'wt-t1');
    repo.git(['worktree', 'add', '-q', '-b', 'polly/t1', wt]);
    writeFileSync(join(wt, 'hello.txt'), 'hello\n');
    git(wt, ['add', '-A']);
    git(wt, ['commit', '-q', '-m', 'hello']);
    const head = git(wt, ['rev-parse', 'HEAD']);
    await forge.openDraftPullRequest({ head: 'polly/t1', base: 'main', title: 'Say hello', body: '## Task t1\nSay hello.' });
    await forge.postReview(1, { event: 'COMMENT', body: 'cross-review: 0 blocking', comments: [{ path: 'hello.txt', line: 1, body: 'nice' }] });

    const list = runCli(['pr', 'list', '--json'], repo.dir);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([
      {
        forge: 'local',
        number: 1,
        state: 'draft',
        title: 'Say hello',
        head: 'polly/t1',
        base: 'main',
        headCommit: head,
        taskId: 't1',
        url: 'polly-local:pr/1',
        review: 'commented',
        checks: 'none',
        conflicts: 'clean',
        conflictFiles: [],
      },
    ]);
    const human = runCli(['pr', 'list'], repo.dir);
    expect(human.stdout.split('\n')[0]).toMatch(/^#\s+STATE\s+BRANCH\s+REVIEW\s+CHECKS\s+CONFLICTS\s+TITLE$/);
    expect(human.stdout).toMatch(/1\s+draft\s+polly\/t1 → main\s+commented\s+none\s+clean\s+Say hello/);

    const show = runCli(['pr', 'show', '#1'], repo.dir);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('#1 Say hello');
    expect(show.stdout).toContain('branch:  polly/t1 → main');
    expect(show.stdout).toContain('  hello.txt:1: nice');
    expect(JSON.parse(runCli(['pr', 'show', '1', '--json'], repo.dir).stdout)).toMatchObject({ number: 1, headCommit: head, reviews: [{ event: 'COMMENT' }] });

    const diff = runCli(['pr', 'diff', '1'], repo.dir);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toMatch(/^diff --git a\/hello\.txt b\/hello\.txt/);
    expect(diff.stdout).toContain('+hello');

    // The human squashes and pushes; the next read shows it merged.
    repo.git(['merge', '--squash', '-q', 'polly/t1']);
    repo.git(['commit', '-q', '-m', 'Say hello (#1)']);
    repo.git(['push', '-q', 'origin', 'main']);
    expect(runCli(['pr', 'list'], repo.dir).stdout).toContain('no open pull requests');
    expect(JSON.parse(runCli(['pr', 'list', '--all', '--json'], repo.dir).stdout)).toMatchObject([{ number: 1, state: 'merged' }]);
    expect(runCli(['pr', 'show', '1'], repo.dir).stdout).toMatch(/state: {3}merged \(in [0-9a-f]{12}\)/);

    const merge = runCli(['pr', 'merge', '1'], repo.dir);
    expect(merge.code).toBe(2);
    expect(merge.stderr).toContain('Polly never merges');
  });

  test('a human comments and requests changes on a line; another PR merges first and this one shows its conflict', async () => {
    const repo = createTestRepo({ 'top.txt': 'one\ntwo\n' });
    mkdirSync(join(repo.dir, '.polly'));
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store });
    for (const [id, text] of [
      ['a', 'A\n'],
      ['b', 'B\n'],
    ] as const) {
      const wt = join(repo.root, `wt-${id}`);
      repo.git(['worktree', 'add', '-q', '-b', `polly/${id}`, wt]);
      writeFileSync(join(wt, 'top.txt'), `${text}one\ntwo\n`);
      git(wt, ['commit', '-q', '-am', `top of the file: ${id}`]);
      await forge.openDraftPullRequest({ head: `polly/${id}`, base: 'main', title: `Top ${id}`, body: id });
    }
    const comment = runCli(['pr', 'comment', '2', 'Why a capital letter?', '--json'], repo.dir);
    expect(comment.code).toBe(0);
    expect(JSON.parse(comment.stdout)).toEqual({ number: 2, id: 1, event: 'COMMENT', fixRound: false, brain: null });
    expect(comment.stderr).toContain('a comment without --file starts no fix round');
    const change = runCli(['pr', 'request-changes', '2', '--file', 'top.txt', '--line', '1', 'Use a lowercase b.'], repo.dir);
    expect(change.code).toBe(0);
    expect(change.stdout).toBe('PR #2: change request recorded on top.txt:1 (journal: pr.feedback).\n');
    expect(change.stderr).toContain('PR #2 belongs to no Polly task');
    expect(runCli(['pr', 'request-changes', '2', '--line', 'x', 'no'], repo.dir).stderr).toContain('--line "x" is not a line number');
    expect(runCli(['pr', 'request-changes', '2', '--line', '3', 'no file'], repo.dir).stderr).toContain('--line 3 needs --file');
    expect(runCli(['pr', 'comment', '2'], repo.dir).code).toBe(2);

    let list = JSON.parse(runCli(['pr', 'list', '--json'], repo.dir).stdout) as Array<Record<string, unknown>>;
    expect(list.map((p) => [p.number, p.review, p.conflicts])).toEqual([
      [2, 'changes_requested', 'clean'],
      [1, 'none', 'clean'],
    ]);
    const record = (await store.read()).pullRequests['2']!;
    expect(record.reviews.map((r) => [r.event, r.author, r.comments])).toEqual([
      ['COMMENT', 'human', []],
      ['REQUEST_CHANGES', 'human', [{ file: 'top.txt', line: 1, message: 'Use a lowercase b.' }]],
    ]);

    // The human merges PR 1; PR 2 touches the same line and no longer merges.
    repo.git(['merge', '--no-ff', '-q', '-m', 'Merge #1', 'polly/a']);
    repo.git(['push', '-q', 'origin', 'main']);
    list = JSON.parse(runCli(['pr', 'list', '--json'], repo.dir).stdout) as Array<Record<string, unknown>>;
    expect(list.map((p) => [p.number, p.conflicts, p.conflictFiles])).toEqual([[2, 'conflicts', ['top.txt']]]);
    expect(runCli(['pr', 'list'], repo.dir).stdout).toMatch(/2\s+draft\s+polly\/b → main\s+changes_requested\s+none\s+conflicts: top\.txt\s+Top b/);
    expect(runCli(['pr', 'show', '2'], repo.dir).stdout).toContain('review: changes_requested   checks: none   conflicts: conflicts (top.txt)');
    // The Brain's inbox carries both, with what the worker needs: the file and line, the conflicted paths.
    const inbox = toInboxEvents(await store.journal()).filter((e) => e.kind === 'pr.feedback' || e.kind === 'pr.conflicts');
    expect(inbox.map((e) => [e.kind, e.number, e.event ?? null, e.file ?? null, e.line ?? null, e.files ?? null])).toEqual([
      ['pr.feedback', 2, 'COMMENT', null, null, null],
      ['pr.feedback', 2, 'REQUEST_CHANGES', 'top.txt', 1, null],
      ['pr.conflicts', 2, null, null, null, ['top.txt']],
    ]);
  });

  test("a change request (and a failing check run from polly pr check) on a ready task's PR with no Brain running starts one (which routes it and exits when idle); on a parked task it says nobody acts", async () => {
    const repo = createTestRepo({ 'top.txt': 'one\n' });
    mkdirSync(join(repo.dir, '.polly'));
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store });
    const wt = join(repo.root, 'wt-t1');
    repo.git(['worktree', 'add', '-q', '-b', 'polly/p1-t1', wt]);
    writeFileSync(join(wt, 'top.txt'), 'ONE\n');
    git(wt, ['commit', '-q', '-am', 'shout']);
    const { number } = await forge.openDraftPullRequest({ head: 'polly/p1-t1', base: 'main', title: 'Shout', body: 't1' });
    await store.update((draft) => {
      const t = newTaskRecord(
        {
          id: 'p1-t1',
          planId: 'p1',
          title: 'Shout',
          purpose: 'implement',
          worker: 'pi', // pi on its default provider: no key Polly could check, so the round may start
          model: null,
          reviewer: 'codex',
          prompt: 'shout',
          acceptance: { commands: ['true'], criteria: [] },
          dependsOn: [],
        },
        new Date().toISOString(),
      );
      t.status = 'ready';
      t.pr = { forge: 'local', number, url: `polly-local:pr/${number}`, state: 'ready' };
      draft.tasks[t.id] = t;
    });
    const change = runCli(['pr', 'request-changes', String(number), '--file', 'top.txt', '--line', '1', 'Quieter, please.', '--json'], repo.dir);
    expect(change.code, change.stderr).toBe(0);
    const out = JSON.parse(change.stdout) as { fixRound: boolean; brain: { pid: number; started: boolean } };
    expect(out).toMatchObject({ number, event: 'REQUEST_CHANGES', fixRound: true, brain: { started: true } });
    expect(change.stderr).toContain(`no Brain was running: started one (pid ${out.brain.pid}) to start a fix round of task p1-t1 now`);
    // The Brain it started is a real one: it claims the repository, finds nothing more to do here (no run watches this hand-made task) and exits.
    let kinds: Array<[string, unknown]> = [];
    for (let i = 0; i < 300; i++) {
      kinds = (await store.journal()).filter((e) => e.kind.startsWith('brain.')).map((e) => [e.kind, e.data.pid]);
      if (kinds.some(([k]) => k === 'brain.stopped')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(kinds).toEqual([
      ['brain.started', out.brain.pid],
      ['brain.stopped', out.brain.pid],
    ]);
    // An outside CI reports a failing check run (the local twin of GitHub's check-runs API): journaled
    // as pr.checks_failed with its log, shown failing, routed as CHECKS_FAILED; a later success on the same head clears it.
    writeFileSync(join(repo.root, 'ci.log'), 'lint: top.txt:1: no shouting\n');
    const red = runCli(
      ['pr', 'check', String(number), '--name', 'ci/lint', '--conclusion', 'failure', '--summary', 'lint is red', '--log-file', join(repo.root, 'ci.log'), '--json'],
      repo.dir,
    );
    expect(red.code, red.stderr).toBe(0);
    const redOut = JSON.parse(red.stdout) as { headCommit: string; fixRound: boolean; brain: { pid: number; started: boolean } };
    expect(redOut).toMatchObject({ number, name: 'ci/lint', conclusion: 'failure', headCommit: git(wt, ['rev-parse', 'HEAD']), fixRound: true, brain: { started: true } });
    const failed = (await store.journal()).filter((e) => e.kind === 'pr.checks_failed');
    expect(failed.map((e) => e.data)).toEqual([
      {
        forge: 'local',
        number,
        taskId: 'p1-t1',
        headCommit: redOut.headCommit,
        checks: [{ name: 'ci/lint', conclusion: 'failure', summary: 'lint is red', logExcerpt: 'lint: top.txt:1: no shouting\n' }],
      },
    ]);
    expect(actionablePrEvents(await store.journal(), 'p1-t1', 0).map((e) => e.action)).toEqual(['FEEDBACK', 'CHECKS_FAILED']);
    expect((JSON.parse(runCli(['pr', 'list', '--json'], repo.dir).stdout) as Array<{ checks: string }>)[0]!.checks).toBe('failing');
    expect(runCli(['pr', 'show', String(number)], repo.dir).stdout).toContain('check run ci/lint: failure on');
    const green = runCli(['pr', 'check', String(number), '--name', 'ci/lint', '--conclusion', 'success', '--json'], repo.dir);
    expect(JSON.parse(green.stdout)).toMatchObject({ conclusion: 'success', fixRound: false, brain: null });
    expect((JSON.parse(runCli(['pr', 'list', '--json'], repo.dir).stdout) as Array<{ checks: string }>)[0]!.checks).toBe('none');
    expect((await store.journal()).filter((e) => e.kind === 'pr.checks_failed')).toHaveLength(1);
    expect(runCli(['pr', 'check', String(number), '--name', 'ci/lint', '--conclusion', 'neutral'], repo.dir).stderr).toContain(
      '--conclusion "neutral" is not one of success, failure, timed_out',
    );
    for (let i = 0; i < 300 && !(await store.journal()).some((e) => e.kind === 'brain.stopped' && e.data.pid === redOut.brain.pid); i++)
      await new Promise((r) => setTimeout(r, 100));

    // A parked task gets no fix round, and no Brain is started for it.
    await store.update((draft) => {
      draft.tasks['p1-t1']!.status = 'parked';
      draft.tasks['p1-t1']!.statusReason = 'no fix round is left';
    });
    const parked = runCli(['pr', 'request-changes', String(number), 'Still too loud.', '--json'], repo.dir);
    expect(JSON.parse(parked.stdout)).toMatchObject({ fixRound: false, brain: null });
    expect(parked.stderr).toContain('task p1-t1 is parked (no fix round is left): no fix round starts for this feedback');
    expect((await store.journal()).filter((e) => e.kind === 'brain.started')).toHaveLength(2);
  }, 60_000);

  test('a change request whose fix round could not start (codex with no model key) starts no Brain: the task stays ready, the reason is shown and journaled; pr sync then prints the merge once', async () => {
    const repo = createTestRepo({ 'top.txt': 'one\n' });
    mkdirSync(join(repo.dir, '.polly'));
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store });
    const wt = join(repo.root, 'wt-k1');
    repo.git(['worktree', 'add', '-q', '-b', 'polly/p1-k1', wt]);
    writeFileSync(join(wt, 'top.txt'), 'ONE\n');
    git(wt, ['commit', '-q', '-am', 'shout']);
    const { number } = await forge.openDraftPullRequest({ head: 'polly/p1-k1', base: 'main', title: 'Shout', body: 'k1' });
    await store.update((draft) => {
      const t = newTaskRecord(
        {
          id: 'p1-k1',
          planId: 'p1',
          title: 'Shout',
          purpose: 'implement',
          worker: 'codex',
          model: null,
          reviewer: 'pi',
          prompt: 'shout',
          acceptance: { commands: ['true'], criteria: [] },
          dependsOn: [],
        },
        new Date().toISOString(),
      );
      t.status = 'ready';
      t.pr = { forge: 'local', number, url: `polly-local:pr/${number}`, state: 'ready' };
      draft.tasks[t.id] = t;
    });
    const change = runCli(['pr', 'request-changes', String(number), 'Quieter, please.', '--json'], repo.dir, { OPENAI_API_KEY: '' });
    expect(change.code, change.stderr).toBe(0);
    expect(JSON.parse(change.stdout)).toMatchObject({ number, event: 'REQUEST_CHANGES', fixRound: false, brain: null });
    expect(change.stderr).toContain(
      'task p1-k1: fix round not started: codex has no model key: none of OPENAI_API_KEY is set. Fix: export OPENAI_API_KEY in the shell that runs polly',
    );
    expect(change.stderr).toContain('The task stays ready and the feedback waits');
    const reg = await store.read();
    expect(reg.tasks['p1-k1']).toMatchObject({ status: 'ready', statusReason: expect.stringMatching(/^fix round not started: codex has no model key/) });
    const journal = await store.journal();
    const feedback = journal.find((e) => e.kind === 'pr.feedback')!;
    expect(journal.filter((e) => e.kind === 'task.fix_round_not_started').map((e) => e.data)).toEqual([
      { taskId: 'p1-k1', number, journalSeq: feedback.seq, reason: reg.tasks['p1-k1']!.statusReason },
    ]);
    expect(journal.filter((e) => e.kind.startsWith('brain.'))).toEqual([]);
    // The feedback is still waiting for a round: a Brain that can start codex routes it.
    expect(actionablePrEvents(journal, 'p1-k1', 0).map((e) => e.action)).toEqual(['FEEDBACK']);

    // A human merges it anyway: polly pr sync says so once, on stdout.
    repo.git(['merge', '--squash', '-q', 'polly/p1-k1']);
    repo.git(['commit', '-q', '-m', `Shout (#${number})`]);
    repo.git(['push', '-q', 'origin', 'main']);
    const sync = runCli(['pr', 'sync'], repo.dir);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout.match(/merged by a human/g)).toHaveLength(1);
    expect(sync.stdout).toContain(`p1-k1: PR #${number} merged by a human → done`);
    expect(sync.stderr).not.toContain('merged by a human');
  }, 60_000);

  test('bad input exits 2 naming the value; an unknown PR exits 1 not_found; no .polly is not_initialized', () => {
    const repo = createTestRepo();
    const noInit = runCli(['pr', 'list', '--json'], repo.dir);
    expect(noInit.code).toBe(1);
    expect(JSON.parse(noInit.stdout).error.code).toBe('not_initialized');
    mkdirSync(join(repo.dir, '.polly'));
    const bad = runCli(['pr', 'show', 'abc'], repo.dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"abc" is not a PR number');
    const missing = runCli(['pr', 'show', '7', '--json'], repo.dir);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).error.code).toBe('not_found');
    expect(runCli(['pr', 'frobnicate'], repo.dir).code).toBe(2);
    expect(runCli(['pr', 'list', '--bogus'], repo.dir).stderr).toContain('--bogus');
  });
});
