/**
 * The PR step of polly-task on the local forge, through the real tools: push (real git, bare
 * remote) → open_draft_pr → dispatch_review (the real `pi` as reviewer, driven by the scripted
 * model server) → mark_ready; a blocking review that goes back to the implementer and a second
 * clean round; idempotency of each tool per order; the refusals (non-fast-forward, same-vendor
 * reviewer, no JSON).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { chooseReviewer, createOpenDraftPrTool } from '../../../brain/task-tools/open-draft-pr.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { createDispatchReviewTool, type PollyReviewRecord } from '../../../brain/task-tools/dispatch-review.js';
import { createMarkReadyTool } from '../../../brain/task-tools/mark-ready.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { recordingSupervisor } from '../../helpers/recording-supervisor.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import { git } from '../../helpers/git-repo.js';
import { commitIn, createGreenTask, createPrStepSetting, noAgents, scriptedAgentEnv, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';

const ADD_OK = 'export function add(a, b) {\n  return a + b;\n}\n';
const ADD_BUG = 'export function add(a, b) {\n  return a - b;\n}\n';

const SCRIPT = `
sessions:
  - name: review-l1
    match: {task: l1, role: review}
    turns:
      - steps:
          - read: DIFF.patch
          - call: {tool: ls, input: {path: .}}
          - finish: |
              The change matches the contract.
              \`\`\`json
              {"blocking": [], "non_blocking": [{"file": "src/add.js", "line": 1, "message": "document add()"}]}
              \`\`\`
  - name: review-l2-round1
    match: {task: l2, role: review, contains: ["review round 1"]}
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [{"file": "src/add.js", "line": 2, "message": "subtracts; the contract says add(a, b) returns the sum"}], "non_blocking": []}'
  - name: review-l2-round2
    match: {task: l2, role: review, contains: ["review round 2"]}
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": []}'
  - name: review-l5-prose
    match: {task: l5, role: review}
    turns:
      - steps:
          - finish: "Looks good to me, no problems."
      - steps:
          - finish: '{"blocking": [], "non_blocking": []}'
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server?.close();
});

function setup() {
  const s = createPrStepSetting({ 'README.md': '# calc\n', 'src/add.js': 'export function add(a, b) {\n  return 0;\n}\n' });
  const config = testConfig(server.url);
  const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
  const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: s.repo.dir, store: s.store, config, stateRoot: join(s.outside, 'workers') }));
  const runner = toolRunner(s, { forge, supervisor, config, agentEnv: scriptedAgentEnv(server.url, join(s.outside, 'home')) });
  return { s, config, forge, supervisor, runner };
}

const push = createPushTool();
const openPr = createOpenDraftPrTool();
const markReady = createMarkReadyTool();

function sessionBodies(prefix: string): string {
  return JSON.stringify(server.requests.filter((r) => r.session?.startsWith(prefix)).map((r) => r.body));
}

describe('PR step on the local forge (real git, real pi reviewer)', () => {
  test('push → draft PR against the base → review posted → ready; the reviewer never sees the worktree path; every tool is idempotent', async () => {
    const { s, forge, supervisor, runner } = setup();
    const kept: string[] = [];
    const review = createDispatchReviewTool({ keepSandbox: true, onSandbox: (sb) => kept.push(sb.dir) });
    const task = await createGreenTask(s, 'l1', { 'src/add.js': ADD_OK }, { worker: 'claude-code' });

    expect(await runner.run(push, 'l1', 'o-push')).toMatchObject({ outcome: 'ok' });
    expect(s.repo.git(['ls-remote', 'origin', 'refs/heads/polly/l1'])).toBe(`${task.headCommit}\trefs/heads/polly/l1`);
    const again = await runner.run(push, 'l1', 'o-push');
    expect(again.outcome).toBe('ok');
    expect(again.note).toMatch(/already has polly\/l1/);

    const opened = await runner.run(openPr, 'l1', 'o-open');
    expect(opened).toMatchObject({ outcome: 'ok', data: { reviewer: 'codex' } });
    // The plan had no reviewer: the first of review.pairs['claude-code'] is codex; use pi for this test.
    await s.store.update((d) => {
      d.tasks.l1!.reviewer = 'pi';
    });
    const reopened = await runner.run(openPr, 'l1', 'o-open');
    expect(reopened).toMatchObject({ outcome: 'ok', data: { reviewer: 'pi' } });
    let reg = await s.store.read();
    expect(Object.keys(reg.pullRequests)).toEqual(['1']);
    expect(reg.pullRequests['1']).toMatchObject({ head: 'polly/l1', base: 'main', state: 'draft', headCommit: task.headCommit, taskId: 'l1' });
    expect(reg.pullRequests['1']!.body).toContain('add(a, b) returns the sum');
    expect(reg.tasks.l1).toMatchObject({ status: 'pr_open', pr: { forge: 'local', number: 1, state: 'draft' } });

    const reviewed = await runner.run(review, 'l1', 'o-review');
    expect(reviewed.outcome, reviewed.note).toBe('ok');
    reg = await s.store.read();
    const pr = reg.pullRequests['1']!;
    expect(pr.reviews).toHaveLength(1);
    expect(pr.reviews[0]).toMatchObject({ event: 'COMMENT', comments: [{ file: 'src/add.js', line: 1 }] });
    expect(pr.reviews[0]!.comments[0]!.message).toMatch(/Non-blocking \(pi, round 1\): document add\(\)/);
    expect(reg.tasks.l1!.reviews).toMatchObject([{ reviewer: 'pi', round: 1, blocking: [], nonBlocking: [{ file: 'src/add.js', line: 1 }] }]);
    // The same order again: no second reviewer run, no second review on the PR.
    expect((await runner.run(review, 'l1', 'o-review')).outcome).toBe('ok');
    expect((await s.store.read()).pullRequests['1']!.reviews).toHaveLength(1);
    expect(supervisor.requests).toHaveLength(1);

    // The reviewer ran as role review in a scratch dir outside the repository that names no worktree.
    const req = supervisor.requests[0]!;
    expect(req).toMatchObject({ harness: 'pi', purpose: 'review', role: 'review', taskId: 'l1' });
    expect(req.prompt.split('\n')[0]).toBe('[polly task=l1 role=review]');
    expect(req.cwd.startsWith(tmpdir())).toBe(true);
    expect(req.cwd.startsWith(s.repo.dir)).toBe(false);
    expect(req.cwd).toBe(kept[0]);
    expect(readdirSync(req.cwd).sort()).toEqual(['CONTRACT.md', 'DIFF.patch']);
    const wt = task.worktree!;
    for (const f of ['CONTRACT.md', 'DIFF.patch']) expect(readFileSync(join(req.cwd, f), 'utf8')).not.toContain(wt);
    expect(readFileSync(join(req.cwd, 'DIFF.patch'), 'utf8')).toBe(`${git(s.repo.dir, ['diff', '--no-color', '--no-renames', 'origin/main...polly/l1'])}\n`);
    // What reached the model: nothing names the worktree (prompt, system prompt, tool results).
    const bodies = sessionBodies('review-l1');
    expect(bodies.length).toBeGreaterThan(100);
    expect(bodies).toContain('DIFF.patch');
    expect(bodies).not.toContain(wt);
    expect(bodies).not.toContain('.worktrees/l1');
    // It read the diff and listed its dir; nothing was written anywhere. (A reviewer that calls a tool
    // its role lacks fails its task: test/confinement/reviewer-attacks.test.ts.)
    const events = supervisor.results[0]!.events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    expect(events.map((e) => e.isError)).toEqual([false, false]);
    expect(events[0]!.output).toContain('+  return a + b;');
    expect(git(wt, ['status', '--porcelain'])).toBe('');

    expect(await runner.run(markReady, 'l1', 'o-ready')).toMatchObject({ outcome: 'ok' });
    expect(await runner.run(markReady, 'l1', 'o-ready')).toMatchObject({ outcome: 'ok' });
    reg = await s.store.read();
    expect(reg.pullRequests['1']!.state).toBe('ready');
    expect(reg.tasks.l1).toMatchObject({ status: 'ready', pr: { state: 'ready' } });
    // One final-state comment (the local forge keeps it as a COMMENT review without line comments), not one per attempt.
    const finals = reg.pullRequests['1']!.reviews.filter((r) => r.body.startsWith('**Final state'));
    expect(finals).toHaveLength(1);
    expect(finals[0]!.body).toMatch(/### Round 1 by `pi`: no blocking findings/);
    expect(finals[0]!.body).toContain('✅ passed');
    // The description written at the draft ("Review: _pending_") now carries the review too.
    expect(reg.pullRequests['1']!.body).toMatch(/## Review\n\n### Round 1 by `pi`: no blocking findings/);
    expect(reg.pullRequests['1']!.body).not.toContain('_pending_');
    expect((await forge.getPullRequest(1)).merged).toBe(false);
    expect(s.repo.git(['rev-parse', 'origin/main'])).toBe(task.baseCommit);
  }, 90_000);

  test('a blocking finding goes back to the implementer as feedback (REQUEST_CHANGES with a line comment); after the fix a second round is clean and the PR goes ready', async () => {
    const { s, runner, supervisor } = setup();
    const review = createDispatchReviewTool();
    const task = await createGreenTask(s, 'l2', { 'src/add.js': ADD_BUG }, { worker: 'claude-code', reviewer: 'pi' });
    expect((await runner.run(push, 'l2', 'o1')).outcome).toBe('ok');
    expect(await runner.run(openPr, 'l2', 'o2')).toMatchObject({ outcome: 'ok', data: { reviewer: 'pi' } });

    const r1 = await runner.run(review, 'l2', 'o3');
    expect(r1).toMatchObject({ outcome: 'failure', permanent: true });
    expect(r1.note).toMatch(/1 blocking/);
    let reg = await s.store.read();
    expect(reg.tasks.l2!.feedback).toContain('src/add.js:2 — subtracts; the contract says add(a, b) returns the sum');
    expect(reg.tasks.l2!.status).toBe('fixing');
    expect(reg.pullRequests['1']!.reviews).toMatchObject([{ event: 'REQUEST_CHANGES', comments: [{ file: 'src/add.js', line: 2 }] }]);
    expect(reg.pullRequests['1']!.reviews[0]!.comments[0]!.message).toMatch(/^\*\*Blocking\*\* \(pi, round 1\)/);
    expect((reg.tasks.l2!.reviews as PollyReviewRecord[])[0]).toMatchObject({ orderId: 'o3', forgeReviewId: 1 });

    // The implementer's fix (send_followup's turn, simulated): a new commit in the worktree.
    const fix = commitIn(task.worktree!, { 'src/add.js': ADD_OK }, 'l2: add, not subtract');
    expect((await runner.run(push, 'l2', 'o4')).outcome).toBe('ok');
    expect(s.repo.git(['ls-remote', 'origin', 'refs/heads/polly/l2'])).toBe(`${fix}\trefs/heads/polly/l2`);
    const r2 = await runner.run(review, 'l2', 'o5');
    expect(r2.outcome, r2.note).toBe('ok');
    expect(supervisor.requests.map((q) => q.prompt.split('\n')[1])).toEqual([expect.stringContaining('review round 1'), expect.stringContaining('review round 2')]);
    expect((await runner.run(markReady, 'l2', 'o6')).outcome).toBe('ok');
    reg = await s.store.read();
    expect(reg.tasks.l2).toMatchObject({ status: 'ready', feedback: null, reviewRounds: 2 });
    expect(reg.pullRequests['1']).toMatchObject({ state: 'ready', headCommit: fix });
    expect(reg.pullRequests['1']!.reviews.map((r) => [r.event, r.body.split('\n')[0]])).toEqual([
      ['REQUEST_CHANGES', expect.stringMatching(/round 1: 1 blocking finding\.$/)],
      ['COMMENT', expect.stringMatching(/round 2: no blocking findings/)],
      ['COMMENT', '**Final state: ready for review.**'],
    ]);
    expect(sessionBodies('review-l2')).not.toContain(task.worktree!);
  }, 90_000);

  test('a reviewer that answers without JSON is asked once more in the same session', async () => {
    const { s, runner, supervisor } = setup();
    await createGreenTask(s, 'l5', { 'src/add.js': ADD_OK }, { worker: 'codex', reviewer: 'pi' });
    await runner.run(push, 'l5', 'o1');
    await runner.run(openPr, 'l5', 'o2');
    const r = await runner.run(createDispatchReviewTool(), 'l5', 'o3');
    expect(r.outcome, r.note).toBe('ok');
    expect(supervisor.requests.map((q) => [q.orderId, q.resumeSessionId !== null])).toEqual([
      ['o3', false],
      ['o3#json-retry', true],
    ]);
    expect(supervisor.requests[1]!.resumeSessionId).toBe(supervisor.results[0]!.sessionId);
    expect(supervisor.requests[1]!.prompt).toMatch(/no JSON object/);
  }, 90_000);

  test('dispatch_review after a crash between recording the findings and posting them: the review is posted once, no reviewer runs again', async () => {
    const { s, config, forge } = setup();
    const runner = toolRunner(s, { forge, supervisor: noAgents, config, agentEnv: {} });
    await createGreenTask(s, 'l6', { 'src/add.js': ADD_BUG }, { worker: 'codex', reviewer: 'pi' });
    await runner.run(push, 'l6', 'o1');
    await runner.run(openPr, 'l6', 'o2');
    const finding = { file: 'src/add.js', line: 2, message: 'subtracts' };
    await s.store.update((d) => {
      const rec: PollyReviewRecord = { reviewer: 'pi', round: 1, blocking: [finding], nonBlocking: [], at: new Date().toISOString(), orderId: 'o3', forgeReviewId: null };
      d.tasks.l6!.reviews.push(rec);
    });
    for (let i = 0; i < 2; i++) {
      const r = await runner.run(createDispatchReviewTool(), 'l6', 'o3');
      expect(r).toMatchObject({ outcome: 'failure', permanent: true });
    }
    const reg = await s.store.read();
    expect(reg.pullRequests['1']!.reviews).toMatchObject([{ event: 'REQUEST_CHANGES', comments: [{ file: 'src/add.js', line: 2 }] }]);
    expect((reg.tasks.l6!.reviews as PollyReviewRecord[])[0]!.forgeReviewId).toBe(1);
    expect(reg.tasks.l6!.feedback).toContain('src/add.js:2 — subtracts');
  });

  test("a non-fast-forward push is a permanent failure with git's reason, never forced; the remote keeps its commit", async () => {
    const { s, runner } = setup();
    const task = await createGreenTask(s, 'l3', { 'src/add.js': ADD_OK });
    // Someone else pushed another commit to polly/l3 first.
    s.repo.git(['push', '-q', 'origin', `${task.baseCommit}:refs/heads/polly/l3`]);
    const other = s.repo.git(['commit-tree', `${task.baseCommit}^{tree}`, '-p', task.baseCommit!, '-m', 'someone else']);
    s.repo.git(['push', '-q', 'origin', `${other}:refs/heads/polly/l3`]);
    const r = await runner.run(push, 'l3', 'o1');
    expect(r).toMatchObject({ outcome: 'failure', permanent: true });
    expect(r.note).toMatch(/non-fast-forward/);
    expect(r.note).toMatch(/rejected/);
    expect(r.note).toMatch(/never force-pushes/);
    expect(s.repo.git(['ls-remote', 'origin', 'refs/heads/polly/l3'])).toBe(`${other}\trefs/heads/polly/l3`);
  });

  test("a reviewer of the worker's own vendor is refused before any PR is opened", async () => {
    const { s, config, forge } = setup();
    const runner = toolRunner(s, { forge, supervisor: noAgents, config, agentEnv: {} });
    await createGreenTask(s, 'l4', { 'src/add.js': ADD_OK }, { worker: 'pi', reviewer: 'pi' });
    await runner.run(push, 'l4', 'o1');
    const r = await runner.run(openPr, 'l4', 'o2');
    expect(r).toMatchObject({ outcome: 'failure', permanent: true });
    expect(r.note).toMatch(/reviewer pi .* is the same vendor as the worker pi/);
    expect(Object.keys((await s.store.read()).pullRequests)).toEqual([]);

    expect(chooseReviewer({ id: 't', worker: 'codex', reviewer: null }, DEFAULT_CONFIG)).toEqual({ reviewer: 'claude-code' });
    const bad = structuredClone(DEFAULT_CONFIG);
    bad.review.pairs.codex = ['codex', 'pi'];
    expect(chooseReviewer({ id: 't', worker: 'codex', reviewer: null }, bad)).toEqual({
      error: expect.stringMatching(/review\.pairs\.codex in \.polly\/config\.yaml\) is the same vendor/),
    });
    bad.review.pairs.codex = [];
    expect(chooseReviewer({ id: 't', worker: 'codex', reviewer: null }, bad)).toEqual({ error: expect.stringMatching(/is empty/) });
  });
});
