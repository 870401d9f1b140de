/**
 * The worker runner tells the gate whether the turn is sandboxed (GateContext.sandboxed,
 * workers/supervisor/worker-runner.ts), through the real runner, the real pi and the scripted model:
 * the implementer runs `mkdir -p "$(dirname src/new/module.ts)" && …`, a write target the gate cannot
 * resolve. Inside bubblewrap the gate leaves it to the sandbox and the file is written; with
 * `workers.allow_unconfined` on a machine without bubblewrap the strict gate denies it (the decision
 * log names `blast_radius.unresolved_path`) and nothing is written. Needs `npm run build`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { pathWithoutBwrap } from '../../helpers/no-bwrap-path.js';
import { recordingSupervisor } from '../../helpers/recording-supervisor.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';
import { makeTask, runTool, scriptedAgentEnv, scriptedConfig } from '../../helpers/worker-tools.js';

const IDIOM = 'mkdir -p "$(dirname src/new/module.ts)" && echo "export {};" > src/new/module.ts';
const SCRIPT = `
sessions:
  - name: idiom
    match: {role: implement}
    turns:
      - steps:
          - run: ${JSON.stringify(IDIOM)}
          - finish: "Made the module."
`;

const sandboxOk = hasSystemPackage('bubblewrap', import.meta.url);
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => {
  await server?.close();
});

async function runIdiom(id: string, allowUnconfined: boolean) {
  const repo = createTestRepo();
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const config = scriptedConfig(server.url, (c) => {
    c.workers.allow_unconfined = allowUnconfined;
    c.worktrees.setup = null;
  });
  const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: repo.dir, store, config, standby: 0 }));
  const rig = {
    repoRoot: repo.dir,
    store,
    config,
    worktrees: createWorktreeManager({ repoRoot: repo.dir, setupCommand: null }),
    supervisor,
    agentEnv: scriptedAgentEnv(server.url),
  };
  await store.update((d) => {
    d.tasks[id] = makeTask(id, 'pi', { acceptance: { commands: ['true'], criteria: [] } });
  });
  const out = await runTool(rig, dispatch, id, `${id}:dispatch`);
  const task = (await store.read()).tasks[id]!;
  const log = join(repo.dir, '.polly', 'gate-decisions.jsonl');
  const decisions = (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [])
    .map((l) => JSON.parse(l) as { kind: string; data: { tool?: string; input?: string; decision: string; rule: string } })
    .filter((e) => e.kind === 'gate.decision' && e.data.tool === 'bash' && e.data.input === IDIOM)
    .map((e) => ({ decision: e.data.decision, rule: e.data.rule }));
  return { out, worktree: task.worktree ?? join(repo.dir, '.worktrees', id), decisions };
}

describe('the runner sets GateContext.sandboxed from the confinement it starts', () => {
  it.skipIf(!sandboxOk)('inside bubblewrap: the gate leaves the unresolved write target to the sandbox, and the file is written', async () => {
    const r = await runIdiom('sb1', false);
    expect(r.out.outcome, r.out.note).toBe('ok');
    expect(r.decisions).toEqual([expect.objectContaining({ decision: 'allow' })]);
    expect(readFileSync(join(r.worktree, 'src', 'new', 'module.ts'), 'utf8')).toBe('export {};\n');
  });

  it('unconfined (allow_unconfined, no bubblewrap): the strict gate denies it and nothing is written', async () => {
    const saved = process.env.PATH;
    process.env.PATH = pathWithoutBwrap();
    try {
      const r = await runIdiom('sb2', true);
      expect(r.decisions).toEqual([expect.objectContaining({ decision: 'deny', rule: 'blast_radius.unresolved_path' })]);
      expect(existsSync(join(r.worktree, 'src', 'new', 'module.ts'))).toBe(false);
    } finally {
      process.env.PATH = saved;
    }
  });
});
