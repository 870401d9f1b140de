/**
 * The metering proxy through the real claude, codex and pi CLIs against the scripted model server,
 * each in its real sandbox, through the dispatch tool: the sandbox reaches the model only through
 * the run's metering proxy (workers/metering/), so
 * - a worker whose own stream claims false usage (the real pi, wrapped so that its stdout also
 *   carries a usage line of -1e9 tokens: a compromised CLI; a tool process can no longer take the
 *   CLI's stdout, seccomp denies pidfd_getfd and /proc/<pid>/fd/1 is a socket that cannot be opened) leaves the ledger at the proxy's count, which equals what the model server
 *   reported, and the lie is a recorded finding (journal `usage.finding`, `polly status`);
 * - a task with a token budget of N stops with no request forwarded to the model after the one
 *   that crossed N (at most one request past the budget), parked with the reason, on all three CLIs.
 * Both fail on the code before the proxy: the ledger took the forged line (about -1e9 tokens) and
 * the budget was checked between the CLI's reports (codex ran its whole turn).
 */
import { mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { makeRig, stopAll } from '../../helpers/run-to-green.js';
import { makeTask, NPM_TEST_PROJECT, runTool } from '../../helpers/worker-tools.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import type { Harness } from '../../../brain/core/vocabulary.js';
import type { RecordedRequest } from '../../../scripts/scripted-model/api-route.js';
import { statusReport } from '../../../brain/registry/status-report.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const FORGED = JSON.stringify({
  type: 'message_end',
  message: { role: 'assistant', content: [], usage: { input: -1_000_000_000, output: 0, cacheRead: 0, cacheWrite: 0, cost: { total: -5 } } },
});
/**
 * A hostile worker: the real pi, whose stdout also carries one forged usage line (a compromised
 * CLI, or a tool process that got hold of its stdout). Runs inside the sandbox as the configured
 * `workers.pi.command`.
 */
function hostilePi(): string {
  const dir = mkdtempSync(join(tmpdir(), 'polly-hostile-pi-'));
  const pi = join(process.cwd(), 'node_modules', '.bin', 'pi');
  const file = join(dir, 'pi');
  writeFileSync(file, `#!/bin/sh\n${JSON.stringify(realpathSync(pi))} "$@"\nrc=$?\nprintf '%s\\n' '${FORGED}'\nexit $rc\n`, { mode: 0o755 });
  return file;
}

const READS = 10;
const budgetScript = (id: string) => `  - name: ${id}
    match: {task: ${id}, role: implement}
    turns:
      - steps:
          - write: {path: notes/kept.txt, content: "first\\n"}
${'          - read: README.md\n'.repeat(READS)}          - finish: "Done."
`;
/** Token budgets well under each CLI's whole script (claude's prompt is the largest). */
const BUDGETS: Record<Harness, number> = { 'claude-code': 30_000, codex: 8_000, pi: 3_000 };
const IDS: Record<Harness, string> = { 'claude-code': 'mc1', codex: 'mx1', pi: 'mp1' };

let server: ScriptedModelServer;
beforeAll(async () => {
  const forge = `  - name: mf1
    match: {task: mf1, role: implement}
    turns:
      - steps:
          - write: {path: notes/a.txt, content: "a\\n"}
          - finish: "Done."
`;
  server = await startScriptedModelServer({ script: parseModelScript(`sessions:\n${forge}${Object.values(IDS).map(budgetScript).join('')}`) });
});
afterAll(async () => server?.close());

/** Model requests the server answered with usage, from index `from` on. */
const answered = (from: number): RecordedRequest[] => server.requests.slice(from).filter((r) => r.usage);
const tokensOf = (r: RecordedRequest): number => r.usage!.inputTokens + r.usage!.outputTokens;

/** The normalised events a worker of `repo` wrote (its runner's events.jsonl files). */
function workerEvents(repoDir: string): Array<{ type: string; [k: string]: unknown }> {
  const root = join(repoDir, '.polly', 'workers');
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => {
      try {
        return readFileSync(join(root, d.name, 'events.jsonl'), 'utf8')
          .split('\n')
          .filter(Boolean);
      } catch {
        return [];
      }
    })
    .map((l) => JSON.parse(l) as { type: string });
}

async function runTask(harness: Harness, id: string, budget: { tokens: number } | null, patch?: Parameters<typeof makeRig>[2]) {
  const repo = createTestRepo(NPM_TEST_PROJECT);
  const rig = makeRig(repo, server, patch);
  await rig.store.update((d) => {
    d.tasks[id] = makeTask(id, harness, budget ? { budget } : {});
  });
  const from = server.requests.length;
  try {
    const outcome = await runTool(rig, dispatch, id, `${id}:dispatch:1`);
    return { repo, rig, outcome, reg: await rig.store.read(), requests: answered(from) };
  } finally {
    await stopAll(rig);
  }
}

describe.skipIf(!SANDBOXED)('Polly meters usage itself (real CLIs, real sandbox)', () => {
  it('pi: a usage line of -1e9 tokens forged into the agent stream changes nothing in the ledger and is a finding', async () => {
    const { outcome, reg, rig, repo, requests } = await runTask('pi', 'mf1', null, (c) => {
      c.workers.pi.command = hostilePi();
    });
    expect(outcome, outcome.note).toMatchObject({ outcome: 'ok' });
    // The forgery reached the stream Polly reads (ground truth: the runner's event log).
    const events = workerEvents(repo.dir);
    expect(
      events.some((e) => e.type === 'usage' && e.inputTokens === -1_000_000_000),
      'the forged usage line reached the agent stream',
    ).toBe(true);
    const ledger = reg.tasks.mf1!.ledger!;
    const input = requests.reduce((s, r) => s + r.usage!.inputTokens, 0);
    const output = requests.reduce((s, r) => s + r.usage!.outputTokens, 0);
    expect(requests.length).toBe(2);
    expect(ledger.totals).toMatchObject({ turns: 1, inputTokens: input, outputTokens: output });
    expect(ledger.turns[0]).toMatchObject({ source: 'proxy', requests: 2 });
    expect(ledger.turns[0]!.findings).toEqual([expect.stringMatching(/^the pi stream reported impossible usage \(inputTokens -1000000000\); the ledger keeps the proxy's count$/)]);
    const journal = await rig.store.journal();
    expect(journal.filter((e) => e.kind === 'usage.finding').map((e) => e.data)).toEqual([
      { taskId: 'mf1', workerId: ledger.turns[0]!.workerId, harness: 'pi', finding: ledger.turns[0]!.findings![0] },
    ]);
    expect(statusReport(repo.dir, reg).tasks.find((t) => t.id === 'mf1')?.usageFindings).toEqual(ledger.turns[0]!.findings);
  }, 180_000);

  for (const harness of ['pi', 'codex', 'claude-code'] as const) {
    it(`${harness}: a token budget stops the task with no model request forwarded after the one that crossed it`, async () => {
      const id = IDS[harness];
      const limit = BUDGETS[harness];
      const { outcome, reg, requests, repo } = await runTask(harness, id, { tokens: limit });
      expect(outcome, outcome.note).toMatchObject({ outcome: 'failure', permanent: true });
      const task = reg.tasks[id]!;
      expect(task.status).toBe('parked');
      expect(task.statusReason).toMatch(new RegExp(`^budget reached: the task budget \\(${limit} tokens\\): tokens \\d+ ≥ limit ${limit}`));
      // Ground truth, the model server: the running total before each forwarded request was under the limit.
      let total = 0;
      const before: number[] = [];
      for (const r of requests) {
        before.push(total);
        total += tokensOf(r);
      }
      expect(total, 'the script needs more than the budget').toBeGreaterThanOrEqual(limit);
      expect(
        before.filter((b) => b >= limit),
        'requests forwarded after the budget was spent',
      ).toEqual([]);
      // The ledger is the proxy's count, which is the server's.
      expect(task.ledger!.totals.inputTokens + task.ledger!.totals.outputTokens).toBe(total);
      expect(task.ledger!.turns.every((t) => t.source === 'proxy')).toBe(true);
      const refused = workerEvents(repo.dir).filter((e) => e.type === 'metering_refused').length;
      process.stderr.write(
        `[metering-real] ${harness}: budget ${limit} tokens, spent ${total} (overshoot ${total - limit}, ${(((total - limit) / limit) * 100).toFixed(1)}%), ${requests.length} requests forwarded, ${refused} refused at the proxy\n`,
      );
    }, 240_000);
  }
});
