/**
 * The PR step of polly-task against the GitHub API simulator (real Octokit forge; requests validated
 * against GitHub's OpenAPI description), with a real bare remote for the pushes and the real `pi`
 * as the cross-reviewer (scripted model server). The simulator has no git: after each push the test
 * plays GitHub receiving it (`setBranch` to the commit now on the bare remote).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { join } from 'node:path';
import { createGitHubForge } from '../../../brain/forge/github-forge.js';
import { createOpenDraftPrTool } from '../../../brain/task-tools/open-draft-pr.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { createDispatchReviewTool } from '../../../brain/task-tools/dispatch-review.js';
import { createMarkReadyTool } from '../../../brain/task-tools/mark-ready.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { recordingSupervisor } from '../../helpers/recording-supervisor.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import { createFakeClock, startGitHubSimulator, type GitHubSimulator } from '../../helpers/github-simulator.js';
import { commitIn, createGreenTask, createPrStepSetting, scriptedAgentEnv, testConfig, toolRunner, type PrStepSetting } from '../../helpers/pr-step-fixture.js';

const TOKEN = 'ghp_FAKEtokenForTheSimulator0123456789ab';
const ADD_OK = 'export function add(a, b) {\n  return a + b;\n}\n';
const ADD_BUG = 'export function add(a, b) {\n  return a - b;\n}\n';

const SCRIPT = `
sessions:
  - name: review-g1
    match: {task: g1, role: review}
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": [{"file": "src/add.js", "line": 2, "message": "consider a JSDoc"}]}'
  - name: review-g2-round1
    match: {task: g2, role: review, contains: ["review round 1"]}
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [{"file": "src/add.js", "line": 2, "message": "subtracts instead of adding"}, {"file": "README.md", "line": 1, "message": "outside the diff: document add"}], "non_blocking": []}'
  - name: review-g2-round2
    match: {task: g2, role: review, contains: ["review round 2"]}
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": []}'
`;

let server: ScriptedModelServer;
let sim: GitHubSimulator;
const clock = createFakeClock();
beforeAll(async () => {
  // One simulator for the file (starting one parses GitHub's OpenAPI description: seconds).
  [server, sim] = await Promise.all([startScriptedModelServer({ script: parseModelScript(SCRIPT) }), startGitHubSimulator({ clock })]);
});
afterAll(async () => {
  await server?.close();
  await sim?.close();
});

const push = createPushTool();
const openPr = createOpenDraftPrTool();
const review = createDispatchReviewTool();
const markReady = createMarkReadyTool();

async function setup() {
  const s = createPrStepSetting({ 'README.md': '# calc\n', 'src/add.js': 'export function add(a, b) {\n  return 0;\n}\n' });
  sim.setBranch('main', s.repo.git(['rev-parse', 'main']));
  const forge = createGitHubForge({ owner: sim.owner, repo: sim.repo, token: TOKEN, baseUrl: sim.baseUrl });
  const config = testConfig(server.url);
  const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: s.repo.dir, store: s.store, config, stateRoot: join(s.outside, 'workers') }));
  const runner = toolRunner(s, { forge, supervisor, config, agentEnv: scriptedAgentEnv(server.url, join(s.outside, 'home')) });
  /** GitHub receives what is on the bare remote. */
  const mirror = (s2: PrStepSetting, branch: string) => sim.setBranch(branch, s2.repo.git(['ls-remote', 'origin', `refs/heads/${branch}`]).split('\t')[0]!);
  return { s, forge, runner, supervisor, mirror };
}

describe('PR step against the GitHub simulator (Octokit forge, real pi reviewer, real bare remote)', () => {
  test('one task end to end: push → draft PR against the base → review posted → ready; no merge request ever', async () => {
    const { s, runner, mirror } = await setup();
    const task = await createGreenTask(s, 'g1', { 'src/add.js': ADD_OK }, { worker: 'codex' });
    expect((await runner.run(push, 'g1', 'o1')).outcome).toBe('ok');
    expect(s.repo.git(['ls-remote', 'origin', 'refs/heads/polly/g1'])).toBe(`${task.headCommit}\trefs/heads/polly/g1`);
    mirror(s, 'polly/g1');

    const opened = await runner.run(openPr, 'g1', 'o2');
    expect(opened).toMatchObject({ outcome: 'ok', data: { reviewer: 'claude-code' } });
    await s.store.update((d) => {
      d.tasks.g1!.reviewer = 'pi';
    });
    const number = (await s.store.read()).tasks.g1!.pr!.number;
    const pull = sim.pulls.get(number)!;
    expect(pull).toMatchObject({ head: 'polly/g1', base: 'main', draft: true, headSha: task.headCommit, title: 'g1: Change for g1' });
    expect(pull.body).toContain('## Acceptance contract');
    expect((await s.store.read()).tasks.g1!.pr).toEqual({ forge: 'github', number, url: `https://github.com/${sim.owner}/${sim.repo}/pull/${number}`, state: 'draft' });
    // Idempotent: a second attempt of the order returns the same PR, no second POST.
    const before = sim.requests.length;
    expect((await runner.run(openPr, 'g1', 'o2')).outcome).toBe('ok');
    expect(sim.requests.slice(before).filter((r) => r.method === 'POST')).toEqual([]);

    const r = await runner.run(review, 'g1', 'o3');
    expect(r.outcome, r.note).toBe('ok');
    expect(pull.reviews).toHaveLength(1);
    expect(pull.reviews[0]).toMatchObject({ event: 'COMMENT', comments: [{ path: 'src/add.js', line: 2, side: 'RIGHT' }] });
    expect(pull.reviews[0]!.body).toMatch(/Cross-review by `pi`, round 1: no blocking findings, 1 non-blocking/);

    expect((await runner.run(markReady, 'g1', 'o4')).outcome).toBe('ok');
    expect(pull.draft).toBe(false);
    expect((await s.store.read()).tasks.g1).toMatchObject({ status: 'ready', pr: { state: 'ready' } });
    expect((await runner.run(markReady, 'g1', 'o4')).outcome).toBe('ok');
    expect(sim.requests.filter((q) => q.graphqlFields.includes('markPullRequestReadyForReview'))).toHaveLength(1);

    expect(sim.mergeRequests()).toEqual([]);
    expect(sim.requests.some((q) => /merge/i.test(q.path) || q.graphqlFields.some((f) => /merge/i.test(f)))).toBe(false);
    expect(pull).toMatchObject({ state: 'open', merged: false });
    expect(sim.requests.length).toBeGreaterThan(5);
  }, 90_000);

  test('a blocking review goes back to the implementer; after the fix the second round is clean and the PR is ready; no merge request ever', async () => {
    const { s, runner, mirror, supervisor } = await setup();
    const task = await createGreenTask(s, 'g2', { 'src/add.js': ADD_BUG }, { worker: 'claude-code', reviewer: 'pi' });
    await runner.run(push, 'g2', 'o1');
    mirror(s, 'polly/g2');
    expect(await runner.run(openPr, 'g2', 'o2')).toMatchObject({ outcome: 'ok', data: { reviewer: 'pi' } });

    const r1 = await runner.run(review, 'g2', 'o3');
    expect(r1).toMatchObject({ outcome: 'failure', permanent: true });
    const pull = sim.pulls.get((await s.store.read()).tasks.g2!.pr!.number)!;
    // GitHub refuses REQUEST_CHANGES from the PR's author (Polly's token): a COMMENT review whose
    // line comment is marked blocking; the finding outside the diff goes into the body.
    expect(pull.reviews).toHaveLength(1);
    expect(pull.reviews[0]).toMatchObject({ event: 'COMMENT', comments: [{ path: 'src/add.js', line: 2 }] });
    expect(pull.reviews[0]!.comments[0]!.body).toMatch(/^\*\*Blocking\*\* \(pi, round 1\): subtracts instead of adding/);
    expect(pull.reviews[0]!.body).toMatch(/2 blocking findings[\s\S]*Findings outside the diff:[\s\S]*README\.md:1/);
    const feedback = (await s.store.read()).tasks.g2!.feedback!;
    expect(feedback).toContain('src/add.js:2 — subtracts instead of adding');
    expect(feedback).toContain('README.md:1 — outside the diff: document add');
    expect(pull.draft).toBe(true);

    const fix = commitIn(task.worktree!, { 'src/add.js': ADD_OK }, 'g2: add');
    expect((await runner.run(push, 'g2', 'o4')).outcome).toBe('ok');
    mirror(s, 'polly/g2');
    const r2 = await runner.run(review, 'g2', 'o5');
    expect(r2.outcome, r2.note).toBe('ok');
    expect(supervisor.requests).toHaveLength(2);
    expect((await runner.run(markReady, 'g2', 'o6')).outcome).toBe('ok');
    expect(pull).toMatchObject({ draft: false, headSha: fix, state: 'open', merged: false });
    expect(pull.reviews.map((x) => x.body.split('\n')[0])).toEqual([expect.stringMatching(/round 1: 2 blocking findings/), expect.stringMatching(/round 2: no blocking findings/)]);
    expect((await s.store.read()).tasks.g2).toMatchObject({ status: 'ready', feedback: null });
    // The PR shows the final state: a comment with both rounds, and the body (PATCH pulls/N) no longer says "pending".
    expect(pull.comments).toHaveLength(1);
    expect(pull.comments[0]!.body).toMatch(/^\*\*Final state: ready for review\.\*\*[\s\S]*### Round 1 by `pi`: 2 blocking[\s\S]*### Round 2 by `pi`: no blocking findings/);
    expect(pull.body).toMatch(/## Review\n\n### Round 1 by `pi`: 2 blocking[\s\S]*### Round 2 by `pi`: no blocking findings/);
    expect(pull.body).not.toContain('_pending_');
    expect(sim.mergeRequests()).toEqual([]);
    expect(sim.requests.some((q) => /merge/i.test(q.path) || q.graphqlFields.some((f) => /merge/i.test(f)))).toBe(false);
  }, 90_000);
});
