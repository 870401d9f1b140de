/**
 * Issue 26: the Brain's own LLM session is metered like a worker's. One real `polly goal` with the
 * real `claude` as the Brain against the scripted model server: its session calls polly_status and
 * ends its turn. Ground truth is the model server's own count of the requests it answered (every
 * request of this run is the Brain's: no worker is dispatched).
 * - `polly status --json` shows the goal's Brain usage (`goals[].brain`) equal to the server's
 *   count, source `proxy` (one ledger entry per request), and the text view has the BRAIN cell;
 * - the goal's shared ledger (.polly/meter/goal-<id>.jsonl) holds the same tokens, charged by `brain`;
 * - the dashboard's goal page shows it (`goalPage`).
 * On the code before the Brain's meter: no goal had a `brain` figure and its tokens were in no ledger.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initRepository } from '../../../brain/commands/init.js';
import { killTree } from '../../../workers/proc/kill.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { useScriptedModels } from '../../../scripts/scripted-model/configure.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { stopTrackedBrains, trackBrains } from '../../helpers/brain-cleanup.js';
import { goalPage } from '../../../brain/ui/ui-pages.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

const SCRIPT = `
sessions:
  - name: brain
    match: {role: brain}
    repeat_last: true
    turns:
      - steps:
          - call: {tool: mcp__polly__polly_status, input: {}}
          - finish: Nothing to plan yet.
`;

let server: ScriptedModelServer | null = null;
let goal: ChildProcess | null = null;

afterAll(async () => {
  if (goal?.pid && goal.exitCode === null) await killTree(goal.pid, 500);
  await stopTrackedBrains();
  await server?.close();
});

async function until<T>(what: string, ms: number, probe: () => T | null | undefined | false): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("the Brain's own session is metered (real claude Brain, scripted model)", () => {
  it("polly status shows the Brain's usage per goal, equal to the model server's count", { timeout: 180_000 }, async () => {
    const repo = createTestRepo();
    trackBrains(repo.dir);
    const env = gitTestEnv();
    await initRepository(repo.dir, env);
    server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    const modelEnv = useScriptedModels(repo.dir, server.url);
    const runEnv = { ...env, ...modelEnv };
    let stderr = '';
    goal = spawn(process.execPath, [cli, 'goal', 'look around', '--yes'], { cwd: repo.dir, env: runEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    goal.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const journal = (): Array<{ kind: string; data: Record<string, unknown> }> => {
      try {
        return readFileSync(join(repo.dir, '.polly', 'journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
      } catch {
        return [];
      }
    };
    await until(`the Brain's first turn to end (stderr: ${stderr.slice(-400)})`, 150_000, () => journal().some((e) => e.kind === 'brain.turn_ended'));
    // Every answered request is in (a response is recorded as it ends; the turn ended after them).
    await new Promise((r) => setTimeout(r, 500));
    const answered = server.requests.filter((r) => r.usage);
    expect(answered.length, 'the Brain made model requests').toBeGreaterThan(0);
    const input = answered.reduce((s, r) => s + r.usage!.inputTokens, 0);
    const output = answered.reduce((s, r) => s + r.usage!.outputTokens, 0);

    const status = spawnSync(process.execPath, [cli, 'status', '--json'], { cwd: repo.dir, env: runEnv, encoding: 'utf8' });
    expect(status.status, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as {
      goals: Array<{ id: string; brain: { totals: { inputTokens: number; outputTokens: number; turns: number } }; spent: { totals: { inputTokens: number } } }>;
    };
    const g = report.goals[0]!;
    expect(g.brain.totals).toMatchObject({ inputTokens: input, outputTokens: output });
    expect(g.brain.totals.turns).toBe(server.requests.filter((r) => r.view).length);
    expect(g.spent.totals.inputTokens).toBe(input);
    const reg = await createFileRegistryStore(join(repo.dir, '.polly')).read();
    expect(reg.goals[g.id]!.ledger!.turns.every((t) => t.source === 'proxy' && t.role === 'brain')).toBe(true);

    const text = spawnSync(process.execPath, [cli, 'status'], { cwd: repo.dir, env: runEnv, encoding: 'utf8' });
    expect(text.stdout).toMatch(/BRAIN/);
    expect(text.stdout).toContain(`${input + output} tok`);

    // The goal's shared ledger: the Brain's charges, the same tokens.
    const charges = readFileSync(join(repo.dir, '.polly', 'meter', `goal-${g.id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { by: string; tokens: number });
    expect(charges.every((c) => c.by === 'brain')).toBe(true);
    expect(charges.reduce((s, c) => s + c.tokens, 0)).toBe(input + output);

    // The dashboard's goal view.
    const page = goalPage(reg.goals[g.id]!, reg);
    expect(page).toMatch(new RegExp(`id="goal-spent-brain">${input} in / ${output} out tokens`));
    console.log(`[brain-meter] the Brain's session: ${answered.length} requests, ${input} in / ${output} out tokens (server = ledger = status)`);
  });
});
