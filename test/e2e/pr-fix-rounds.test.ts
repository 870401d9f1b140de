/**
 * Issue 16 items 2, 3, 6 on the local forge, end to end: a ready PR's feedback goes back to the SAME
 * worker session as a bounded, model-checked fix round.
 *
 * Real everything: git with a bare origin, the real `claude` implementer and `pi` reviewer against
 * the scripted model server, the Brain as a process (`polly run`, then `polly brain
 * --exit-when-idle --no-llm` after each human action), the human through `polly pr
 * request-changes` and git (test/helpers/human-merge.ts). Ground truth comes from refs, files and
 * the model server's request log, never from the agents' words.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry } from '../../brain/registry/registry-schema.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { git, gitTestEnv, type TestRepo } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { humanMerge } from '../helpers/human-merge.js';
import { notificationFor } from '../../brain/notify/notification.js';

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const _demo = join(process.cwd(), 'scripts/demo');

const PLAN = `goal: Fix sum()
tasks:
  - key: t1
    title: Fix sum()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: sum() in src/stats.js returns wrong results; make the existing tests pass without changing them.
    acceptance:
      commands: [npm test]
`;

/**
 * The implementer's turns, one per human message of its ONE conversation: the task, the change
 * request (fix round 1), then the conflicting files of the base merge (fix round 2).
 */
const SCRIPT = `sessions:
  - name: implement-sum
    match: {role: implement, contains: ["Fix sum()"]}
    turns:
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "a - b", new: "a + b"}
          - finish: "sum() adds now."
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "/** Sum of a list of numbers. */", new: "/** Sum of a list of numbers (0 for an empty list). */"}
          - finish: "Documented sum([]) === 0."
      - steps:
          - write:
              path: src/stats.js
              content: |
                /** Sum of the numbers in xs (0 for an empty list). */
                export function sum(xs) {
                  return xs.reduce((a, b) => a + b, 0);
                }

                /** Arithmetic mean of a non-empty list of numbers. */
                export function mean(xs) {
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

const readRegistry = (repo: string): Registry => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;
const journalOf = (repo: string) =>
  readFileSync(join(repo, '.polly/journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number; kind: string; data: Record<string, unknown> });

let server: ScriptedModelServer | null = null;
afterAll(async () => {
  await server?.close();
});

describe('a ready PR: feedback goes back to the same worker session, bounded (local forge, real CLIs)', () => {
  it('a change request is fixed in the same session and pushed fast-forward with a reply; a conflict after a human merge is resolved by a merge commit; the exhausted bound parks the task', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-fix-rounds-');
    const env = gitTestEnv();
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    // Two fix rounds: the change request, the conflict; a third PR event parks the task.
    const modelEnv = useScriptedModels(repo, server.url, { extra: [[['pr', 'max_fix_rounds'], 2]] });
    const planFile = join(root, 'plan.yaml');
    writeFileSync(planFile, PLAN);
    const brainEnv = { ...env, ...modelEnv };
    // The Brain `polly run` started exits once nothing is open; wait for it before the next human action.
    const brainGone = async () => {
      for (let i = 0; i < 150 && readRegistry(repo).brain; i++) await new Promise((r) => setTimeout(r, 200));
      expect(readRegistry(repo).brain).toBeNull();
    };
    const brain = async () => {
      await brainGone();
      const r = await run(process.execPath, [cli, 'brain', '--exit-when-idle', '--no-llm'], { cwd: repo, env: brainEnv, timeout: 240_000, maxBuffer: 16 << 20 });
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

    // 2. A human requests changes on a line, through the CLI; the Brain routes it as fix round 1.
    await brainGone();
    await run(process.execPath, [cli, 'pr', 'request-changes', String(number), '--file', 'src/stats.js', '--line', '1', 'Say in the doc comment that sum([]) is 0.'], {
      cwd: repo,
      env,
    });
    const log1 = await brain();
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
    // Exactly once, across a restart: a second Brain routes nothing again.
    await brain();
    expect(journalOf(repo).filter((e) => e.kind === 'task.fix_round')).toHaveLength(1);
    expect(git(origin, ['rev-parse', branch])).toBe(pushed2);
    // Ready the first time, then again as fix round 1 ends: the "feedback handled" notification (brain/notify/notification.ts).
    const readyEvents = journalOf(repo).filter((e) => e.kind === 'task.pr_ready');
    expect(readyEvents.map((e) => e.data.fixRound)).toEqual([null, 1]);
    expect(notificationFor({ ...readyEvents[1]!, at: '' }, null)?.title).toBe(`Feedback on PR #${number} handled`);

    // 3. A human merges another change into main that conflicts with the PR (the same lines).
    git(repo, ['checkout', '-q', '-b', 'human/message']);
    const stats = readFileSync(join(repo, 'src/stats.js'), 'utf8');
    writeFileSync(
      join(repo, 'src/stats.js'),
      stats.replace('/** Sum of a list of numbers. */', '/** Sum of the numbers in xs. */').replace("'mean of an empty list'", "'mean of an empty list (no numbers)'"),
    );
    git(repo, ['commit', '-q', '-am', 'Clearer messages']);
    git(repo, ['checkout', '-q', 'main']);
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
    const humanCommit = humanMerge(testRepo, 'human/message', 'merge');
    // The local forge notices the conflict on its next read (pr.conflicts); the Brain routes it.
    const list = (await run(process.execPath, [cli, 'pr', 'list', '--json'], { cwd: repo, env })).stdout;
    expect(JSON.parse(list)[0]).toMatchObject({ number, conflicts: 'conflicts' });
    const log2 = await brain();
    reg = readRegistry(repo);
    t = reg.tasks[task.id]!;
    expect(t.status, log2).toBe('ready');
    expect(t.sessionId).toBe(session);
    expect(t.fixRound).toMatchObject({ round: 2, action: 'CONFLICTS', baseMerge: { ref: 'origin/main', commit: humanCommit, files: ['src/stats.js'] } });
    const pushed3 = git(origin, ['rev-parse', branch]);
    // A merge commit with two parents: the PR's previous head and the human's main. Never a rebase.
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed3]).split(' ').slice(1)).toEqual([pushed2, humanCommit]);
    const merged = git(origin, ['show', `${pushed3}:src/stats.js`]);
    expect(merged).not.toMatch(/^(<{7}|={7}|>{7})/m);
    expect(merged).toContain('a + b'); // this task's side
    expect(merged).toContain('(0 for an empty list)'); // this task's side of the conflicting line
    expect(merged).toContain('Sum of the numbers in xs'); // the base's side of it
    expect(merged).toContain('(no numbers)'); // the base's clean change
    // Acceptance was green on the merge, run by Polly.
    expect(t.checks.map((c) => c.exitCode)).toEqual([0]);
    expect(git(origin, ['rev-parse', 'main'])).toBe(humanCommit); // Polly merged nothing into main

    // 4. The bound (2 rounds) is exhausted: the next change request parks the task.
    await run(process.execPath, [cli, 'pr', 'request-changes', String(number), 'Rename sum() to total().'], { cwd: repo, env });
    const log3 = await brain();
    reg = readRegistry(repo);
    t = reg.tasks[task.id]!;
    expect(t.status, log3).toBe('parked');
    expect(t.statusReason).toMatch(/no fix round is left \(2 fix rounds used/);
    const parked = journalOf(repo).filter((e) => e.kind === 'task.parked');
    expect(parked.map((e) => e.data.taskId)).toEqual([task.id]);
    expect(git(origin, ['rev-parse', branch])).toBe(pushed3); // nothing more was pushed
    expect(server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 3)).toHaveLength(0);
    expect(git(origin, ['rev-parse', 'main'])).not.toBe(mainBefore); // only the human moved main

    // Every run, the watching and the parked one included, replays through its admitted workflow.
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(2);
  }, 600_000);
});
