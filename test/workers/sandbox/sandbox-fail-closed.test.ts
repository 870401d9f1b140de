/**
 * Fail closed, through the real worker runner and the real pi against the scripted model: on a
 * machine where bubblewrap cannot be found (PATH rebuilt from /usr/bin and /usr/local/bin without
 * `bwrap`), a dispatch is refused with the fixing instruction and the agent never starts; with
 * `workers.allow_unconfined: true` the same dispatch runs, and the warning is on record — on the
 * task, in the journal, and in the PR body Polly would write. Needs `npm run build`.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prBodyInputOf, renderPrBody } from '../../../brain/forge/pr-body.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { pathWithoutBwrap } from '../../helpers/no-bwrap-path.js';
import { recordingSupervisor } from '../../helpers/recording-supervisor.js';
import { makeTask, runTool, scriptedAgentEnv, scriptedConfig } from '../../helpers/worker-tools.js';

const SCRIPT = `
sessions:
  - name: unconfined
    match: {role: implement}
    turns:
      - steps:
          - write: {path: notes.txt, content: "written without the sandbox\\n"}
          - finish: "Wrote notes.txt."
`;

let server: ScriptedModelServer;
const savedPath = process.env.PATH;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
  process.env.PATH = pathWithoutBwrap();
});
afterAll(async () => {
  process.env.PATH = savedPath;
  await server?.close();
});

function rig(allowUnconfined: boolean) {
  const repo = createTestRepo();
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const config = scriptedConfig(server.url, (c) => {
    c.workers.allow_unconfined = allowUnconfined;
    c.worktrees.setup = null;
  });
  const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: repo.dir, store, config, standby: 0 }));
  return {
    repo,
    store,
    rig: { repoRoot: repo.dir, store, config, worktrees: createWorktreeManager({ repoRoot: repo.dir, setupCommand: null }), supervisor, agentEnv: scriptedAgentEnv(server.url) },
  };
}

describe('the sandbox fails closed', () => {
  it('without bubblewrap: the dispatch is refused with the fixing instruction, and nothing is written', async () => {
    const { repo, store, rig: r } = rig(false);
    await store.update((d) => {
      d.tasks.fc1 = makeTask('fc1', 'pi', { acceptance: { commands: ['true'], criteria: [] } });
    });
    const out = await runTool(r, dispatch, 'fc1', 'fc1:dispatch');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await store.read()).tasks.fc1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(/^agent_refused: /);
    expect(task.statusReason).toContain('bubblewrap');
    expect(task.statusReason).toContain('allow_unconfined');
    expect(task.unconfined ?? null).toBeNull();
    expect(existsSync(join(task.worktree ?? join(repo.dir, '.worktrees', 'fc1'), 'notes.txt'))).toBe(false);
  });

  it('with workers.allow_unconfined: the turn runs, and the warning is on the task, in the journal and in the PR body', async () => {
    const { store, rig: r } = rig(true);
    await store.update((d) => {
      d.tasks.fc2 = makeTask('fc2', 'pi', { acceptance: { commands: ['true'], criteria: [] } });
    });
    const out = await runTool(r, dispatch, 'fc2', 'fc2:dispatch');
    expect(out.outcome, out.note).toBe('ok');
    const task = (await store.read()).tasks.fc2!;
    expect(readFileSync(join(task.worktree!, 'notes.txt'), 'utf8')).toBe('written without the sandbox\n');
    expect(task.unconfined).toContain('allow_unconfined');
    const journal = await store.journal();
    expect(journal.filter((e) => e.kind === 'task.unconfined').map((e) => (e.data as { taskId: string }).taskId)).toEqual(['fc2']);
    // The body as Polly writes it: from the task's record (open_draft_pr, mark_ready, the landing sync).
    const body = renderPrBody(prBodyInputOf(task));
    expect(body).toContain("this work ran without Polly's sandbox");
  });
});
