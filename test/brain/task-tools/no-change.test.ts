/**
 * A task whose worker changes nothing ends failed with "the worker made no change" and
 * the worker's last words, and nothing is pushed. The real `claude` CLI runs against the scripted model, whose session only
 * answers (no edit); the real `dispatch` tool then finds the worktree unchanged from its base,
 * and the real `push` tool refuses a branch still at its base: the remote never gets `polly/<id>`.
 * Needs `npm run build` (the worker runner and the gate run from dist/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { NO_CHANGE } from '../../../brain/task-tools/types.js';
import { pushTool } from '../../../brain/task-tools/push.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { SUM_REPO, makeRig, stopAll } from '../../helpers/run-to-green.js';
import { makeTask, runTool } from '../../helpers/worker-tools.js';

const ID = 'nc-claude';
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({
    script: parseModelScript(
      `sessions:\n  - name: ${ID}\n    match: {task: ${ID}, role: implement}\n    turns:\n      - steps:\n          - finish: "I looked around; nothing needs changing."\n`,
    ),
  });
});
afterAll(async () => server?.close());

describe('a worker that changes nothing', () => {
  it('claude ends its turn ok without an edit: the task fails with "the worker made no change" and no branch is pushed', async () => {
    const repo = createTestRepo(SUM_REPO);
    const rig = makeRig(repo, server);
    try {
      await rig.store.update((d) => {
        d.tasks[ID] = makeTask(ID, 'claude-code');
      });
      const outcome = await runTool(rig, dispatch, ID, `${ID}:dispatch:1`);
      expect(outcome).toMatchObject({ outcome: 'failure', permanent: true });
      expect(outcome.note).toContain(`dispatch: ${NO_CHANGE}`);
      const task = (await rig.store.read()).tasks[ID]!;
      // The reason quotes what the agent said (a script that did not match would say so there: scripts/scripted-model/script.ts unmatchedText).
      expect(task).toMatchObject({ status: 'failed', statusReason: `${NO_CHANGE}; the worker's last words: "I looked around; nothing needs changing."` });
      expect(task.sessionId).toBeTruthy(); // the agent really ran
      expect((await rig.store.journal()).some((e) => e.kind === 'task.no_change' && e.data.taskId === ID)).toBe(true);
      // Were the push order reached anyway, it would push nothing.
      const push = await runTool(rig, pushTool, ID, `${ID}:push:1`);
      expect(push).toMatchObject({ outcome: 'failure', permanent: true });
      expect(push.note).toMatch(new RegExp(`^${NO_CHANGE}: polly/${ID} is still at its base`));
      expect(repo.git(['ls-remote', 'origin', `refs/heads/polly/${ID}`])).toBe('');
    } finally {
      await stopAll(rig);
    }
  }, 90_000);
});
