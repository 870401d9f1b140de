/**
 * Issue 6 acceptance: the real `claude`, `codex` and `pi` run to green AT ONCE, in three worktrees
 * of ONE repository (one registry, one supervisor, one worktree manager): each ends with one clean
 * commit on its own `polly/<id>`, and no git command anywhere hit an `index.lock`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { createTestRepo } from '../helpers/git-repo.js';
import { SUM_REPO, makeRig, runToGreen, stopAll, sumScript } from '../helpers/run-to-green.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(sumScript(['cc-claude', 'cc-codex', 'cc-pi'])) });
});
afterAll(async () => server?.close());

it('claude-code, codex and pi run to green at once in three worktrees of one repo, without index.lock errors', async () => {
  const repo = createTestRepo(SUM_REPO);
  const rig = makeRig(repo, server);
  try {
    await Promise.all([
      runToGreen(rig, server, 'cc-claude', 'claude-code', repo.git),
      runToGreen(rig, server, 'cc-codex', 'codex', repo.git),
      runToGreen(rig, server, 'cc-pi', 'pi', repo.git),
    ]);
  } finally {
    await stopAll(rig);
  }
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
