/**
 * PR fix rounds on the local forge, end to end: a ready PR's feedback goes back to the SAME
 * worker session as a bounded, model-checked fix round.
 *
 * Real everything: git with a bare origin, the real `claude` implementer and `codex` reviewer against
 * the scripted model server (the reviewer's vendor is not what is tested here, and four reviews run:
 * codex starts on ~0.3 s of CPU, pi on ~3 s; pr-fix-rounds-github keeps `pi` as the reviewer), the
 * Brain as a process (`polly run`; the Brain `polly pr request-changes` starts itself when none
 * runs; `polly brain --exit-when-idle --no-llm` after a human's merge), the human through `polly
 * pr request-changes` and git (test/helpers/human-merge.ts). One run, four PR events: a change request given while no Brain
 * runs, a base that breaks the PR without a textual conflict (the local forge's own check on the
 * merge goes red), a conflicting merge, and one past the bound. Ground truth comes from refs, files
 * and the model server's request log, never from the agents' words.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { git, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { humanMerge } from '../helpers/human-merge.js';
import { notificationFor } from '../../brain/notify/notification.js';
import { readJournalFile, readRegistryFile } from '../helpers/polly-state.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const _demo = join(process.cwd(), 'scripts/demo');

const PLAN = `goal: Fix sum()
tasks:
  - key: t1
    title: Fix sum()
    purpose: implement
    worker: claude-code
    reviewer: codex
    prompt: sum() in src/stats.js returns wrong results; make the existing tests pass without changing them.
    acceptance:
      commands: [npm test]
      known_red: [npm test]
`;

/**
 * The implementer's turns, one per human message of its ONE conversation: the task (which also adds
 * a test of mean()), the change request (fix round 1), the checks red on the merge with a main that
 * renamed mean() to average() (fix round 2), then the conflicting files of the base merge (fix round 3).
 */
const SCRIPT = `sessions:
  - name: implement-sum
    match: {role: implement, contains: ["Fix sum()"]}
    turns:
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "a - b", new: "a + b"}
          - write:
              path: test/mean.test.js
              content: |
                import { test } from 'node:test';
                import assert from 'node:assert/strict';
                import { mean } from '../src/stats.js';

                test('mean of two numbers', () => {
                  assert.equal(mean([2, 4]), 3);
                });
          - finish: "sum() adds now, and mean() has a test."
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "/** Sum of a list of numbers. */", new: "/** Sum of a list of numbers (0 for an empty list). */"}
          - finish: "Documented sum([]) === 0."
      - steps:
          - read: test/mean.test.js
          - write:
              path: test/mean.test.js
              content: |
                import { test } from 'node:test';
                import assert from 'node:assert/strict';
                import { average } from '../src/stats.js';

                test('average of two numbers', () => {
                  assert.equal(average([2, 4]), 3);
                });
          - finish: "main renamed mean() to average(); the new test uses average() now."
      - steps:
          - write:
              path: src/stats.js
              content: |
                /** Sum of the numbers in xs (0 for an empty list). */
                export function sum(xs) {
                  return xs.reduce((a, b) => a + b, 0);
                }

                /** Arithmetic mean of a non-empty list of numbers. */
                export function average(xs) {
                  if (xs.length === 0) throw new RangeError('mean of an empty list (no numbers)');
                  return sum(xs) / xs.length;
                }
          - finish: "Combined both doc comments, kept the base's RangeError message and this task's sum()."
  - name: review-sum
    match: {role: review, contains: ["Fix sum()"]}
    repeat_last: true
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": []}'
`;

const readRegistry = readRegistryFile;
const journalOf = readJournalFile;

let server: ScriptedModelServer | null = null;
afterAll(async () => {
  await server?.close();
});

describe.skipIf(!SANDBOXED)('a ready PR: feedback goes back to the same worker session, bounded (local forge, real CLIs)', () => {
  it('a change request given with no Brain running is fixed in the same session and pushed fast-forward with a reply; a base that breaks the PR without a textual conflict fails the local check and is fixed in a green merge commit; a conflict after a human merge is resolved by a merge commit; the exhausted bound parks the task', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-fix-rounds-');
    const env = gitTestEnv();
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    // Three fix rounds: the change request, the base that breaks the checks, the conflict; a fourth PR event parks the task.
    const modelEnv = useScriptedModels(repo, server.url, { extra: [[['pr', 'max_fix_rounds'], 3]] });
    const planFile = join(root, 'plan.yaml');
    writeFileSync(planFile, PLAN);
    const brainEnv = { ...env, ...modelEnv };
    // The Brain `polly run` started exits once nothing is open; wait for it before the next human action.
    const brainGone = async () => {
      for (let i = 0; i < 150 && readRegistry(repo).brain; i++) await new Promise((r) => setTimeout(r, 200));
      expect(readRegistry(repo).brain).toBeNull();
    };
    // The Brain `polly pr request-changes` started, once it has left (its log).
    const brainLog = () => readFileSync(join(repo, '.polly/brain.log'), 'utf8');
    const brainStopped = async (pid: number) => {
      const stopped = () => journalOf(repo).some((e) => e.kind === 'brain.stopped' && e.data.pid === pid);
      for (let i = 0; i < 1200 && !stopped(); i++) await new Promise((r) => setTimeout(r, 200));
      expect(stopped(), brainLog()).toBe(true);
      return brainLog();
    };
    const brain = async () => {
      await brainGone();
      // --all-prs: the goal finished with its first Brain, and a Brain acts on a finished goal's PR
      // events only when asked (issue 35 item 6); this one is run as a service that carries every PR.
      const r = await run(process.execPath, [cli, 'brain', '--exit-when-idle', '--no-llm', '--all-prs'], { cwd: repo, env: brainEnv, timeout: 240_000, maxBuffer: 16 << 20 });
      return r.stderr + r.stdout;
    };

    // 1. The plan runs to a ready PR; its run keeps watching the PR.
    const first = await run(process.execPath, [cli, 'run', planFile, '--yes', '--json'], { cwd: repo, env: brainEnv, timeout: 240_000, maxBuffer: 16 << 20 }).catch(
      (e: { stdout?: string; stderr?: string }) => {
        throw new Error(`polly run failed:\n${e.stderr}\n${e.stdout}`);
      },
    );
    let reg = readRegistry(repo);
    const task = Object.values(reg.tasks).find((t) => t.purpose === 'implement')!;
    expect(task.status, first.stderr).toBe('ready');
    const session = task.sessionId;
    expect(session).toBeTruthy();
    const branch = `polly/${task.id}`;
    const number = task.pr!.number;
    const pushed1 = git(origin, ['rev-parse', branch]);
    const mainBefore = git(origin, ['rev-parse', 'main']);

    // 2. A human requests changes on a line, through the CLI, while no Brain runs: the command starts
    //    one (detached), which routes it as fix round 1 and exits when the PR is ready again.
    await brainGone();
    const asked = await run(
      process.execPath,
      [cli, 'pr', 'request-changes', String(number), '--file', 'src/stats.js', '--line', '1', 'Say in the doc comment that sum([]) is 0.', '--json'],
      { cwd: repo, env: brainEnv },
    );
    const woke = JSON.parse(asked.stdout) as { fixRound: boolean; brain: { pid: number; started: boolean } };
    expect(woke).toMatchObject({ fixRound: true, brain: { started: true } });
    expect(asked.stderr).toContain(`no Brain was running: started one (pid ${woke.brain.pid}) to start a fix round of task ${task.id} now`);
    const log1 = await brainStopped(woke.brain.pid);
    reg = readRegistry(repo);
    let t = reg.tasks[task.id]!;
    expect(t.status, log1).toBe('ready');
    expect(t.sessionId).toBe(session); // the same session, resumed
    expect(t.fixRound).toMatchObject({ round: 1, action: 'FEEDBACK', startHead: pushed1 });
    // The model saw the change request as the SECOND human message of the implementer's one conversation.
    const fixTurn = server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 1);
    expect(fixTurn.length).toBeGreaterThan(0);
    expect(JSON.stringify(fixTurn[0]!.body)).toContain('src/stats.js:1: Say in the doc comment that sum([]) is 0.');
    // A new commit, pushed as a plain fast-forward: the old remote tip is its parent.
    const pushed2 = git(origin, ['rev-parse', branch]);
    expect(pushed2).not.toBe(pushed1);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed2]).split(' ').slice(1)).toEqual([pushed1]);
    expect(git(origin, ['log', '-1', '--format=%s', pushed2])).toMatch(/^Fix round 1: src\/stats\.js:1: Say in the doc comment/);
    expect(git(origin, ['show', `${pushed2}:src/stats.js`])).toContain('(0 for an empty list)');
    // A reply on the PR naming the commit; the PR is ready again.
    const pr1 = JSON.parse((await run(process.execPath, [cli, 'pr', 'show', String(number), '--json'], { cwd: repo, env })).stdout) as {
      state: string;
      reviews: Array<{ event: string; body: string; author?: string }>;
    };
    expect(pr1.state).toBe('ready');
    const replies = pr1.reviews.filter((r) => r.body.includes('**Polly fix round 1:**'));
    expect(replies).toHaveLength(1);
    expect(replies[0]!.body).toContain(pushed2.slice(0, 7));
    // Exactly once, across a restart: the next Brain (step 3's) routes this change request no second
    // time (checked there: its only fix round is round 2, on the red check, on top of pushed2).
    // Ready the first time, then again as fix round 1 ends: the "feedback handled" notification (brain/notify/notification.ts).
    const readyEvents = journalOf(repo).filter((e) => e.kind === 'task.pr_ready');
    expect(readyEvents.map((e) => e.data.fixRound)).toEqual([null, 1]);
    expect(notificationFor({ ...readyEvents[1]!, at: '' }, null)?.title).toBe(`Feedback on PR #${number} handled`);

    const testRepo: TestRepo = {
      dir: repo,
      remote: origin,
      root,
      git: (a) => git(repo, a),
      write: (f, c) => writeFileSync(join(repo, f), c),
      commitAll: (m) => {
        git(repo, ['commit', '-q', '-am', m]);
        return git(repo, ['rev-parse', 'HEAD']);
      },
    };

    // 3. A human renames mean() to average() on main (src/stats.js away from the PR's lines, and the
    //    old test file): no textual conflict, but the PR's new test still imports mean(). The local
    //    forge's check runs the acceptance commands on the merge: red → pr.checks_failed → fix round 2
    //    merges main in, and the same session fixes the break.
    git(repo, ['checkout', '-q', '-b', 'human/rename']);
    const before = readFileSync(join(repo, 'src/stats.js'), 'utf8');
    writeFileSync(join(repo, 'src/stats.js'), before.replace('export function mean(xs)', 'export function average(xs)'));
    const oldTest = readFileSync(join(repo, 'test/stats.test.js'), 'utf8');
    writeFileSync(join(repo, 'test/stats.test.js'), oldTest.replace('import { mean, sum }', 'import { average, sum }').replace(/\bmean\(/g, 'average('));
    git(repo, ['commit', '-q', '-am', 'Rename mean() to average()']);
    git(repo, ['checkout', '-q', 'main']);
    const renameCommit = humanMerge(testRepo, 'human/rename', 'merge');
    expect(git(origin, ['merge-tree', '--write-tree', '--name-only', renameCommit, pushed2]).split('\n')).toHaveLength(1); // no textual conflict
    const logB = await brain();
    reg = readRegistry(repo);
    t = reg.tasks[task.id]!;
    expect(t.status, logB).toBe('ready');
    expect(
      journalOf(repo)
        .filter((e) => e.kind === 'task.fix_round')
        .map((e) => [e.data.round, e.data.action]),
    ).toEqual([
      [1, 'FEEDBACK'],
      [2, 'BASE_CHECKS_FAILED'],
    ]);
    expect(t.sessionId).toBe(session);
    const red = journalOf(repo).filter((e) => e.kind === 'pr.checks_failed');
    expect(red).toHaveLength(1); // once per (head, base)
    expect(red[0]!.data).toMatchObject({ forge: 'local', number, taskId: task.id, headCommit: pushed2, base: 'main', baseCommit: renameCommit });
    const redCheck = (red[0]!.data.checks as Array<Record<string, unknown>>)[0]!;
    expect(redCheck).toMatchObject({ name: 'npm test', conclusion: 'failure' });
    expect(String(redCheck.logExcerpt)).toContain("does not provide an export named 'mean'");
    expect(t.fixRound).toMatchObject({ round: 2, action: 'BASE_CHECKS_FAILED', startHead: pushed2, baseMerge: { ref: 'origin/main', commit: renameCommit, files: [] } });
    // The worker saw the failing check's log, with main already merged into its worktree.
    const breakTurn = server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 2);
    expect(breakTurn.length).toBeGreaterThan(0);
    expect(JSON.stringify(breakTurn[0]!.body)).toContain('Polly has merged main into your worktree');
    expect(JSON.stringify(breakTurn[0]!.body)).toContain("does not provide an export named 'mean'");
    // A merge commit of the PR's head and the human's main, green, pushed fast-forward; the fix is in it.
    const pushedB = git(origin, ['rev-parse', branch]);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushedB]).split(' ').slice(1)).toEqual([pushed2, renameCommit]);
    expect(git(origin, ['show', `${pushedB}:test/mean.test.js`])).toContain("import { average } from '../src/stats.js'");
    expect(t.checks.map((c) => c.exitCode)).toEqual([0]);
    const prB = JSON.parse((await run(process.execPath, [cli, 'pr', 'show', String(number), '--json'], { cwd: repo, env })).stdout) as {
      state: string;
      status: { checks: string };
      reviews: Array<{ body: string }>;
    };
    expect(prB).toMatchObject({ state: 'ready', status: { checks: 'passing' } });
    expect(prB.reviews.filter((r) => r.body.includes('**Polly fix round 2:**'))).toHaveLength(1);
    const pushed2b = pushedB;

    // 4. A human merges another change into main that conflicts with the PR (the same lines).
    git(repo, ['checkout', '-q', '-b', 'human/message']);
    const stats = readFileSync(join(repo, 'src/stats.js'), 'utf8');
    writeFileSync(
      join(repo, 'src/stats.js'),
      stats.replace('/** Sum of a list of numbers. */', '/** Sum of the numbers in xs. */').replace("'mean of an empty list'", "'mean of an empty list (no numbers)'"),
    );
    git(repo, ['commit', '-q', '-am', 'Clearer messages']);
    git(repo, ['checkout', '-q', 'main']);
    const humanCommit = humanMerge(testRepo, 'human/message', 'merge');
    // The local forge notices the conflict on its next read (pr.conflicts); the Brain routes it.
    const list = (await run(process.execPath, [cli, 'pr', 'list', '--json'], { cwd: repo, env })).stdout;
    expect(JSON.parse(list)[0]).toMatchObject({ number, conflicts: 'conflicts' });
    const log2 = await brain();
    reg = readRegistry(repo);
    t = reg.tasks[task.id]!;
    expect(t.status, log2).toBe('ready');
    expect(t.sessionId).toBe(session);
    expect(t.fixRound).toMatchObject({ round: 3, action: 'CONFLICTS', baseMerge: { ref: 'origin/main', commit: humanCommit, files: ['src/stats.js'] } });
    const pushed3 = git(origin, ['rev-parse', branch]);
    // A merge commit with two parents: the PR's previous head and the human's main. Never a rebase.
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed3]).split(' ').slice(1)).toEqual([pushed2b, humanCommit]);
    const merged = git(origin, ['show', `${pushed3}:src/stats.js`]);
    expect(merged).not.toMatch(/^(<{7}|={7}|>{7})/m);
    expect(merged).toContain('a + b'); // this task's side
    expect(merged).toContain('(0 for an empty list)'); // this task's side of the conflicting line
    expect(merged).toContain('Sum of the numbers in xs'); // the base's side of it
    expect(merged).toContain('(no numbers)'); // the base's clean change
    // Acceptance was green on the merge, run by Polly.
    expect(t.checks.map((c) => c.exitCode)).toEqual([0]);
    expect(git(origin, ['rev-parse', 'main'])).toBe(humanCommit); // Polly merged nothing into main

    expect(journalOf(repo).filter((e) => e.kind === 'pr.checks_failed')).toHaveLength(1); // a conflict is not a check run

    // 5. The bound (3 rounds) is exhausted: the next change request parks the task.
    await brainGone();
    const past = await run(process.execPath, [cli, 'pr', 'request-changes', String(number), 'Rename sum() to total().', '--json'], { cwd: repo, env: brainEnv });
    const log3 = await brainStopped((JSON.parse(past.stdout) as { brain: { pid: number } }).brain.pid);
    reg = readRegistry(repo);
    t = reg.tasks[task.id]!;
    expect(t.status, log3).toBe('parked');
    expect(t.statusReason).toMatch(/no fix round is left \(3 fix rounds used/);
    const parked = journalOf(repo).filter((e) => e.kind === 'task.parked');
    expect(parked.map((e) => e.data.taskId)).toEqual([task.id]);
    expect(git(origin, ['rev-parse', branch])).toBe(pushed3); // nothing more was pushed
    expect(server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 4)).toHaveLength(0);
    expect(git(origin, ['rev-parse', 'main'])).not.toBe(mainBefore); // only the human moved main

    // Every run, the watching and the parked one included, replays through its admitted workflow.
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(2);
  }, 600_000);
});
