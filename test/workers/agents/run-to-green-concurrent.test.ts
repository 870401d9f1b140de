/**
 * The real `claude`, `codex` and `pi` run to green AT ONCE, in three worktrees
 * of ONE repository (one registry, one supervisor, one worktree manager): each ends with one clean
 * commit on its own `polly/<id>`, and no git command anywhere hit an `index.lock`.
 *
 * Per harness (test/helpers/run-to-green.ts `runToGreen`, every assertion of it for each of the
 * three): driven by the scripted model to make a failing test pass, the first attempt is scripted
 * wrong (red), Polly's feedback reaches the SAME session, the second attempt is green, each turn ran
 * in Polly's sandbox, nothing is left running. Driven through the tools: dispatch → run_acceptance
 * → send_followup → run_acceptance. This one run replaces a file that ran the same loop once per
 * harness, one after another (~34 s more). Needs `npm run build`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { SUM_REPO, makeRig, runToGreen, stopAll, sumScript } from '../../helpers/run-to-green.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(sumScript(['cc-claude', 'cc-codex', 'cc-pi'])) });
});
afterAll(async () => server?.close());

const HARNESSES = [
  ['claude-code', 'cc-claude'],
  ['codex', 'cc-codex'],
  ['pi', 'cc-pi'],
] as const;

it('claude-code, codex and pi each run to green (red first, feedback to the same session, green second, one clean commit), at once in three worktrees of one repo, without index.lock errors', async () => {
  const repo = createTestRepo(SUM_REPO);
  const rig = makeRig(repo, server);
  try {
    // Every harness's loop runs to its end, and each failure is named by its harness.
    const results = await Promise.allSettled(HARNESSES.map(([harness, id]) => runToGreen(rig, server, id, harness, repo.git)));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${HARNESSES[i]![0]}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`] : []));
    expect(failed, failed.join('\n\n')).toEqual([]);
  } finally {
    await stopAll(rig);
  }
  expect(existsSync(join(repo.dir, '.polly', 'workers'))).toBe(true);
  expect(readFileSync(join(repo.dir, 'sum.js'), 'utf8')).toBe(SUM_REPO['sum.js']); // the main checkout is untouched
  const tasks = (await rig.store.read()).tasks;
  expect(Object.values(tasks).map((t) => t.status)).toEqual(['green', 'green', 'green']);
  expect(new Set(Object.values(tasks).map((t) => t.worktree)).size).toBe(3);
  // No index.lock trouble anywhere: not in the checks, the agents' outputs, the runners' logs, or the journal.
  const dirs = readdirSync(join(repo.dir, '.polly', 'workers')).filter((d) => d.startsWith('w-'));
  expect(dirs).toHaveLength(6);
  for (const d of dirs) {
    for (const f of ['events.jsonl', 'runner.log', 'result.json']) {
      expect(readFileSync(join(repo.dir, '.polly', 'workers', d, f), 'utf8')).not.toMatch(/index\.lock/);
    }
  }
  expect(JSON.stringify(Object.values(tasks).map((t) => t.checks))).not.toMatch(/index\.lock/);
  expect(readFileSync(join(repo.dir, '.polly', 'journal.jsonl'), 'utf8')).not.toMatch(/index\.lock/);
  expect(repo.git(['worktree', 'list']).split('\n')).toHaveLength(4);
}, 90_000);
