/**
 * Token budgets with the real `pi`, `claude` and `codex` against the scripted model,
 * through the dispatch tool: every turn's usage lands in the task's ledger and its totals equal
 * what the scripted server reported for the session; a task whose budget is smaller than its
 * script's usage is stopped, parked with the reason, its work in a backup ref, and no PR is opened
 * (the rig's forge fails the test on any use). The figures are the run's metering proxy's
 * (workers/metering/, docs/metering.md), read from each model response, so every CLI is stopped
 * between model calls, codex too (its own stream reports usage only when its turn completes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { makeRig, stopAll } from '../../helpers/run-to-green.js';
import { makeTask, NPM_TEST_PROJECT, runTool, sessionRequests } from '../../helpers/worker-tools.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import type { Harness } from '../../../brain/core/vocabulary.js';
import type { RecordedRequest } from '../../../scripts/scripted-model/api-route.js';
import { createBrainTools } from '../../../brain/mcp/brain-tools.js';
import { runReadOnlyTask } from '../../../brain/process/order-executor.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

/** Write a file, run a slow command, write another, finish: four model calls in one turn. */
const turnScript = (id: string) => `  - name: ${id}
    match: {task: ${id}, role: implement}
    turns:
      - steps:
          - write: {path: notes/kept.txt, content: "written before the budget ran out\\n"}
          - run: "sleep 4"
          - write: {path: notes/late.txt, content: "written after\\n"}
          - finish: "Done."
`;

const IDS = ['pl1', 'pb1', 'cl1', 'cb1', 'xb1'] as const;
/**
 * A read-only explore session (task x1, the first ad-hoc id): six reads, then its report. A
 * read-only pi has no bash (nothing slow to stop in), and the scripted model answers at once, so
 * under load pi could make all seven calls before the stop lands (the supervisor reads the worker's
 * events by polling). Each call takes 1.5 s here, as a real model's does: the stop lands a call or
 * two after the limit is crossed (about 3 s), well before the report (10.5 s).
 */
const EXPLORE_READS = 6;
const EXPLORE_SCRIPT = `  - name: x1
    match: {task: x1, role: explore}
    latency_ms: 1500
    turns:
      - steps:
${'          - read: README.md\n'.repeat(EXPLORE_READS)}          - finish: "Read the README."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(`sessions:\n${IDS.map(turnScript).join('')}${EXPLORE_SCRIPT}`) });
});
afterAll(async () => server?.close());

/** The usage the server reported to the scripted session (side requests such as titles excluded). */
function reported(requests: RecordedRequest[], session: string): { calls: number; input: number; output: number; perCall: Array<{ inputTokens: number; outputTokens: number }> } {
  const reqs = sessionRequests(requests, session).filter((r) => r.usage);
  return {
    calls: reqs.length,
    input: reqs.reduce((s, r) => s + r.usage!.inputTokens, 0),
    output: reqs.reduce((s, r) => s + r.usage!.outputTokens, 0),
    perCall: reqs.map((r) => r.usage!),
  };
}

/** Prices for the scripted models (USD per million tokens): the metering proxy prices each request (docs/metering.md). */
const PRICES = { 'claude-sonnet-4-5': { input: 3, output: 15 } };

async function runTask(harness: Harness, id: string, budget: { tokens?: number; usd?: number } | null) {
  const repo = createTestRepo(NPM_TEST_PROJECT);
  const rig = makeRig(repo, server, (c) => {
    c.prices = PRICES;
  });
  await rig.store.update((d) => {
    d.tasks[id] = makeTask(id, harness, budget ? { budget } : {});
  });
  try {
    const outcome = await runTool(rig, dispatch, id, `${id}:dispatch:1`);
    return { repo, rig, outcome, reg: await rig.store.read() };
  } finally {
    await stopAll(rig);
  }
}

let piFirstCall = 0;
/** Input tokens of claude's first and second model call in the ledger test (cl1), as the server reported them. */
let claudeCalls: number[] = [];

/** The checks every budget stop shares: parked with the reason, the ledger's totals the sum of its turns, the work in one backup ref, journaled once. */
async function expectParkedForBudget(id: string, run: Awaited<ReturnType<typeof runTask>>, limit: number, kept = true) {
  const { outcome, reg, rig, repo } = run;
  expect(outcome).toMatchObject({ outcome: 'failure', permanent: true });
  expect(outcome.note).toMatch(/^budget: budget reached: the task budget \(\d+ tokens\): tokens \d+ ≥ limit \d+/);
  const task = reg.tasks[id]!;
  expect(task.status).toBe('parked');
  expect(task.statusReason).toContain(`≥ limit ${limit}`);
  expect(task.pr).toBeNull();
  const ledger = task.ledger!;
  expect(ledger.turns).toHaveLength(1);
  expect(ledger.totals).toMatchObject({
    turns: 1,
    inputTokens: ledger.turns.reduce((s, t) => s + t.inputTokens, 0),
    outputTokens: ledger.turns.reduce((s, t) => s + t.outputTokens, 0),
  });
  expect(task.backupRefs).toHaveLength(1);
  const ref = task.backupRefs[0]!;
  expect(ref).toMatch(new RegExp(`^refs/polly/backup/${id}/`));
  if (kept) expect(repo.git(['show', `${ref}:notes/kept.txt`])).toBe('written before the budget ran out');
  const journal = await rig.store.journal();
  expect(journal.filter((e) => e.kind === 'budget.reached').map((e) => e.data)).toEqual([expect.objectContaining({ taskId: id, scope: 'task', kind: 'tokens', limit })]);
  expect(journal.filter((e) => e.kind === 'task.parked').map((e) => e.data)).toEqual([
    { taskId: id, reason: task.statusReason, backupRef: ref, worktree: task.worktree, budget: true },
  ]);
  return { task, ref };
}

describe.skipIf(!SANDBOXED)('the cost ledger with the real CLIs', () => {
  it('pi: the ledger totals of a task equal the sum of the usage the model reported, call by call', async () => {
    const { outcome, reg, rig } = await runTask('pi', 'pl1', null);
    expect(outcome, outcome.note).toMatchObject({ outcome: 'ok' });
    const r = reported(server.requests, 'pl1');
    expect(r.calls).toBe(4);
    const ledger = reg.tasks.pl1!.ledger!;
    expect(ledger.turns).toHaveLength(1);
    expect(ledger.turns[0]).toMatchObject({ role: 'implement', harness: 'pi', status: 'ok', reported: true });
    // The scripted endpoint is a custom provider without prices: pi says $0, Polly says unknown.
    expect(ledger.totals).toMatchObject({ turns: 1, inputTokens: r.input, outputTokens: r.output, costUsd: 0, unknownCostTurns: 1 });
    expect(ledger.byRole.implement).toEqual(ledger.totals);
    // Journaled once, as the audit trail.
    expect((await rig.store.journal()).filter((e) => e.kind === 'task.turn_usage').map((e) => e.data)).toEqual([{ taskId: 'pl1', ...ledger.turns[0] }]);
    piFirstCall = r.perCall[0]!.inputTokens + r.perCall[0]!.outputTokens;
  }, 120_000);

  it('claude: the turn total equals the usage the model reported for the session, priced from config prices', async () => {
    const { outcome, reg, rig } = await runTask('claude-code', 'cl1', null);
    expect(outcome, outcome.note).toMatchObject({ outcome: 'ok' });
    const r = reported(server.requests, 'cl1');
    expect(r.calls).toBeGreaterThanOrEqual(4);
    const ledger = reg.tasks.cl1!.ledger!;
    expect(ledger.totals).toMatchObject({ turns: 1, inputTokens: r.input, outputTokens: r.output, unknownCostTurns: 0 });
    // Polly's price, not claude's list: $3 in / $15 out per million tokens.
    expect(ledger.totals.costUsd).toBeCloseTo((r.input * 3 + r.output * 15) / 1e6, 10);
    expect(ledger.turns[0]).toMatchObject({ source: 'proxy' });
    const usage = (await rig.store.journal()).filter((e) => e.kind === 'task.turn_usage');
    expect(usage).toHaveLength(1);
    expect(usage[0]!.data).toMatchObject({ taskId: 'cl1', role: 'implement', inputTokens: r.input, outputTokens: r.output });
    claudeCalls = sessionRequests(server.requests, 'cl1')
      .filter((q) => q.usage)
      .map((q) => q.usage!.inputTokens);
  }, 180_000);

  it('claude: a budget smaller than the script stops the turn between model calls, parks the task with the reason, keeps the work in a backup ref', async () => {
    expect(claudeCalls.length, 'the claude ledger test measures the calls').toBeGreaterThanOrEqual(2);
    // claude's stream reports each call's input tokens (output 1 until its turn result): a limit
    // above the first call and well below the first two is crossed by the second call (the `sleep 4`).
    const limit = claudeCalls[0]! + Math.floor(claudeCalls[1]! / 2);
    const run = await runTask('claude-code', 'cb1', { tokens: limit });
    const { task, ref } = await expectParkedForBudget('cb1', run, limit);
    const r = reported(server.requests, 'cb1');
    expect(r.calls).toBe(2);
    expect(task.ledger!.turns[0]!.status).toBe('cancelled');
    expect(task.ledger!.totals.inputTokens).toBe(r.input);
    expect(run.repo.git(['ls-tree', '-r', '--name-only', ref])).not.toContain('notes/late.txt');
  }, 180_000);

  it('codex: the metering proxy counts each model request, so the turn is stopped after the first one crossed the budget, before acceptance or a PR', async () => {
    const limit = 1;
    const run = await runTask('codex', 'xb1', { tokens: limit });
    const { task } = await expectParkedForBudget('xb1', run, limit, false);
    const r = reported(server.requests, 'xb1');
    // codex reports usage only when its turn completes; the proxy reads each response: the first
    // call crossed the limit and no other call reached the model (before the proxy, all four did).
    expect(r.calls).toBe(1);
    expect(task.ledger!.totals).toMatchObject({ inputTokens: r.input, outputTokens: r.output, unknownCostTurns: 1 });
    expect(task.ledger!.turns[0]).toMatchObject({ source: 'proxy', status: 'cancelled' });
    expect(task.checks).toEqual([]);
  }, 180_000);

  it('pi, read-only outside a plan: an explore task dispatched by the Brain gets config budgets.per_task and is stopped and parked when it reaches it', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const rig = makeRig(repo, server);
    const config = { ...rig.config, budgets: { per_task: { tokens: 1 }, per_goal: null } };
    const gateContext = { repoRoot: repo.dir, worktree: repo.dir, branch: 'main', defaultBranch: 'main', home: process.env.HOME ?? '/root' };
    const sessionSend = createBrainTools({ store: rig.store, config, gateContext }).find((t) => t.name === 'sys_session_send')!;
    const sent = (await sessionSend.handler({ title: 'Map the project', purpose: 'explore', worker: 'pi', prompt: 'Read README.md and report.' } as never)) as {
      structured: { task_id: string };
    };
    const id = sent.structured.task_id;
    expect(id).toBe('x1');
    expect((await rig.store.read()).tasks[id]!.budget).toEqual({ tokens: 1 });
    try {
      await runReadOnlyTask(
        { ...rig, config, gateContext },
        id,
        () => {},
        () => new Date(),
      );
    } finally {
      await stopAll(rig);
    }
    const task = (await rig.store.read()).tasks[id]!;
    expect(task.status).toBe('parked');
    expect(task.statusReason).toMatch(/^budget reached: the task budget \(1 tokens\): tokens \d+ ≥ limit 1\. The worker was stopped; its report so far is on the task\./);
    expect(task.budget).toEqual({ tokens: 1 });
    expect(task.finishedAt).toBeTruthy();
    // Crossed by the first model call (any usage reaches 1 token); stopped before the report.
    const r = reported(server.requests, id);
    expect(r.calls).toBeGreaterThanOrEqual(1);
    expect(r.calls, 'the report (the last call) was never asked for').toBeLessThan(EXPLORE_READS + 1);
    expect(task.ledger!.turns).toHaveLength(1);
    expect(task.ledger!.turns[0]!.status).toBe('cancelled');
    expect(task.report).not.toContain('Read the README.');
    // The ledger has every call the stream reported before the stop, and its totals are their sum.
    expect(task.ledger!.totals).toMatchObject({ turns: 1, inputTokens: task.ledger!.turns[0]!.inputTokens, outputTokens: task.ledger!.turns[0]!.outputTokens });
    expect(task.ledger!.totals.inputTokens).toBeGreaterThan(0);
    const journal = await rig.store.journal();
    expect(journal.filter((e) => e.kind === 'budget.reached').map((e) => e.data)).toEqual([expect.objectContaining({ taskId: id, scope: 'task', kind: 'tokens', limit: 1 })]);
    expect(journal.filter((e) => e.kind === 'task.parked').map((e) => e.data)).toEqual([{ taskId: id, reason: task.statusReason, backupRef: null, budget: true }]);
    expect(journal.filter((e) => e.kind === 'task.finished' || e.kind === 'task.failed')).toEqual([]);
  }, 120_000);

  it('pi: a budget smaller than the script stops the turn between model calls, parks the task with the reason, keeps the work in a backup ref, opens no PR', async () => {
    expect(piFirstCall, 'the pi ledger test measures the first call').toBeGreaterThan(0);
    // Reached by the second model call (the one that asks for `sleep 4`): the first call's tokens + 1.
    const limit = piFirstCall + 1;
    const { outcome, reg, rig, repo } = await runTask('pi', 'pb1', { tokens: limit });
    expect(outcome).toMatchObject({ outcome: 'failure', permanent: true });
    expect(outcome.note).toMatch(/^budget: budget reached: the task budget \(\d+ tokens\): tokens \d+ ≥ limit \d+/);
    const task = reg.tasks.pb1!;
    expect(task.status).toBe('parked');
    expect(task.statusReason).toContain(`≥ limit ${limit}`);
    expect(task.pr).toBeNull();
    // Stopped during the `sleep 4` of the second call: the third model call never happened.
    const r = reported(server.requests, 'pb1');
    expect(r.calls).toBe(2);
    // The ledger holds the stopped turn (per-call usage).
    expect(task.ledger!.totals).toMatchObject({ turns: 1, inputTokens: r.input, outputTokens: r.output });
    expect(task.ledger!.turns[0]!.status).toBe('cancelled');
    // The work is in the backup ref: the first write is there, the late one is not.
    expect(task.backupRefs).toHaveLength(1);
    const ref = task.backupRefs[0]!;
    expect(ref).toMatch(/^refs\/polly\/backup\/pb1\//);
    expect(repo.git(['show', `${ref}:notes/kept.txt`])).toBe('written before the budget ran out');
    expect(repo.git(['ls-tree', '-r', '--name-only', ref])).not.toContain('notes/late.txt');
    const journal = await rig.store.journal();
    const reached = journal.filter((e) => e.kind === 'budget.reached');
    expect(reached).toHaveLength(1);
    expect(reached[0]!.data).toMatchObject({ taskId: 'pb1', scope: 'task', kind: 'tokens', limit });
    // How long from the model's answer that crossed the limit to the task parked (the stop and the backup).
    const crossed = sessionRequests(server.requests, 'pb1').at(-1)!.at;
    const stopMs = Date.parse(reached[0]!.at) - Date.parse(crossed);
    process.stderr.write(`[cost-budget-real] budget stop: ${stopMs} ms from the crossing answer to budget.reached\n`);
    expect(stopMs).toBeGreaterThan(0);
    expect(stopMs, 'stopped well before the scripted sleep 4 would have let pi finish').toBeLessThan(30_000);
    expect(journal.filter((e) => e.kind === 'task.parked').map((e) => e.data)).toEqual([
      { taskId: 'pb1', reason: task.statusReason, backupRef: ref, worktree: task.worktree, budget: true },
    ]);
  }, 120_000);
});
