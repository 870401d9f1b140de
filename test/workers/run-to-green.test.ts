/**
 * Issue 6 acceptance, per harness: the real `claude`, `codex` and `pi`, each in its own worktree,
 * driven by the scripted model to make a failing test pass. The first attempt is scripted wrong
 * (red), Polly's feedback reaches the SAME session, the second attempt is green, and the result is
 * ONE clean commit on `polly/<id>`. Driven through the tools: dispatch → run_acceptance →
 * send_followup → run_acceptance (test/helpers/run-to-green.ts). Needs `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { createTestRepo } from '../helpers/git-repo.js';
import { SUM_REPO, makeRig, runToGreen, stopAll, sumScript } from '../helpers/run-to-green.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(sumScript(['rg-claude', 'rg-codex', 'rg-pi'])) });
});
afterAll(async () => server?.close());

describe('run-to-green with the real CLIs (dispatch → run_acceptance → send_followup → run_acceptance)', () => {
  for (const [harness, id] of [
    ['claude-code', 'rg-claude'],
    ['codex', 'rg-codex'],
    ['pi', 'rg-pi'],
  ] as const) {
    it(`${harness}: red first, feedback to the same session, green second, one clean commit`, async () => {
      const repo = createTestRepo(SUM_REPO);
      const rig = makeRig(repo, server);
      try {
        await runToGreen(rig, server, id, harness, repo.git);
      } finally {
        await stopAll(rig);
      }
      expect(existsSync(join(repo.dir, '.polly', 'workers'))).toBe(true);
      expect(readFileSync(join(repo.dir, 'sum.js'), 'utf8')).toBe(SUM_REPO['sum.js']); // the main checkout is untouched
    }, 60_000);
  }
});
