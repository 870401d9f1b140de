/**
 * Issue 26: a goal's budget is ONE bound shared by every proxy of the goal (workers/metering/goal-ledger.ts).
 * - The ledger: charges appended by several processes at once are all counted (single O_APPEND
 *   writes never interleave), a torn last line counts once it is complete, and a restart (a new
 *   reader) finds every charge.
 * - Through the real pi CLI in its real sandbox: two tasks of one goal run in parallel under a
 *   goal budget of 3,000 tokens. Ground truth is the model server's count: the goal spends at most
 *   its limit plus one request per concurrently running worker, and both tasks are parked for the
 *   goal's budget. On the code before the shared ledger each run got what remained when it
 *   started (the whole 3,000) and the two spent about twice the budget.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { makeRig, stopAll } from '../../helpers/run-to-green.js';
import { makeTask, NPM_TEST_PROJECT, runTool } from '../../helpers/worker-tools.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { ensureGoalLedger, goalLedgerPath, openGoalLedger } from '../../../workers/metering/goal-ledger.js';
import type { PlanRecord } from '../../../brain/registry/registry-schema.js';

describe('the goal ledger file', () => {
  it('counts every charge of several processes appending at once, skips a torn line until it is whole, and a new reader finds all', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-goal-ledger-'));
    const path = goalLedgerPath(dir, 'g1');
    expect(ensureGoalLedger(path, { tokens: 100, usd: 0.5 })).toBe(true);
    expect(ensureGoalLedger(path, { tokens: 999, usd: 9 })).toBe(false);
    const ledgerModule = join(process.cwd(), 'dist/workers/metering/goal-ledger.js');
    const writer = `import(${JSON.stringify(ledgerModule)}).then(({openGoalLedger}) => { const l = openGoalLedger(process.argv[1]); for (let i = 0; i < 500; i++) l.charge({by: process.argv[2], task: null, tokens: 3, usd: null}); l.close(); })`;
    await Promise.all(
      ['w1', 'w2', 'w3'].map(
        (by) =>
          new Promise<void>((resolve, reject) => {
            const p = spawn(process.execPath, ['-e', writer, path, by], { stdio: 'inherit' });
            p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${by} exited ${code}`))));
          }),
      ),
    );
    const reader = openGoalLedger(path);
    expect(reader.total()).toEqual({ tokens: 100 + 3 * 500 * 3, usd: 0.5, unpriced: 1500, charges: 1501 });
    appendFileSync(path, '{"at":"x","by":"w4","task":null,"tok');
    expect(reader.total().charges).toBe(1501);
    appendFileSync(path, 'ens":7,"usd":0.25}\n');
    expect(reader.total()).toMatchObject({ tokens: 4607, usd: 0.75, charges: 1502 });
    // A restart: a new reader sums the file from the start.
    expect(openGoalLedger(path).total()).toEqual(reader.total());
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(1502);
  });
});

const READS = 10;
/** A session that writes, reads README.md READS times and finishes; its answers wait until `other` has sent a request (both run at once, however slowly one starts). */
const script = (id: string, other: string) => `  - name: ${id}
    match: {task: ${id}, role: implement}
    wait_for: [${other}]
    turns:
      - steps:
          - write: {path: notes/${id}.txt, content: "first\\n"}
${'          - read: README.md\n'.repeat(READS)}          - finish: "Done."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(`sessions:\n${script('ga1', 'ga2')}${script('ga2', 'ga1')}`) });
});
afterAll(async () => server?.close());

describe('a goal budget through the real pi CLI', () => {
  it('two tasks of one goal running at once spend at most the goal budget plus one request each', { timeout: 300_000 }, async () => {
    const LIMIT = 3_000;
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const rig = makeRig(repo, server);
    const now = new Date().toISOString();
    await rig.store.update((d) => {
      d.goals.g1 = { id: 'g1', text: 'two at once', createdAt: now, status: 'running', planIds: ['p1'], mode: 'plan' };
      d.plans.p1 = {
        id: 'p1',
        goalId: 'g1',
        createdAt: now,
        tasks: [],
        admission: null,
        gate: 'approved',
        budgets: { perTask: null, perGoal: { tokens: LIMIT } },
        askedAt: null,
        decidedAt: now,
        decidedBy: 'test',
      } as PlanRecord;
      d.tasks.ga1 = makeTask('ga1', 'pi', { planId: 'p1' });
      d.tasks.ga2 = makeTask('ga2', 'pi', { planId: 'p1' });
    });
    const from = server.requests.length;
    try {
      const outcomes = await Promise.all([runTool(rig, dispatch, 'ga1', 'ga1:dispatch:1'), runTool(rig, dispatch, 'ga2', 'ga2:dispatch:1')]);
      const reg = await rig.store.read();
      const answered = server.requests.slice(from).filter((r) => r.usage);
      const sizes = answered.map((r) => r.usage!.inputTokens + r.usage!.outputTokens);
      const total = sizes.reduce((a, b) => a + b, 0);
      const largest = Math.max(...sizes);
      for (const [i, id] of ['ga1', 'ga2'].entries()) {
        expect(outcomes[i], outcomes[i]!.note).toMatchObject({ outcome: 'failure', permanent: true });
        expect(reg.tasks[id]!.status).toBe('parked');
        expect(reg.tasks[id]!.statusReason).toMatch(new RegExp(`^budget reached: the budget of goal g1 \\(${LIMIT} tokens\\)`));
      }
      // Both ran: each made model requests (the budget is shared, not taken by the first).
      expect(new Set(answered.map((r) => r.session))).toEqual(new Set(['ga1', 'ga2']));
      expect(total, 'the two scripts need more than the budget').toBeGreaterThanOrEqual(LIMIT);
      // The bound (docs/metering.md): the limit plus at most one request per worker running at the time.
      expect(total, `spent ${total} of ${LIMIT} in ${answered.length} requests, the largest ${largest}`).toBeLessThanOrEqual(LIMIT + 2 * largest);
      // The goal's ledger is the server's count; the tasks' ledgers add up to it.
      const ledger = openGoalLedger(goalLedgerPath(join(repo.dir, '.polly'), 'g1')).total();
      expect(ledger.tokens).toBe(total);
      const tasks = ['ga1', 'ga2'].map((id) => reg.tasks[id]!.ledger!.totals).reduce((s, t) => s + t.inputTokens + t.outputTokens, 0);
      expect(tasks).toBe(total);
      process.stderr.write(
        `[goal-ledger] pi x2: goal budget ${LIMIT} tokens, spent ${total} (overshoot ${total - LIMIT}, ${(((total - LIMIT) / LIMIT) * 100).toFixed(1)}%; largest request ${largest}), ${answered.length} requests forwarded\n`,
      );
    } finally {
      await stopAll(rig);
    }
  });
});
