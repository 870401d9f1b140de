/**
 * Shared by test/workers/agents/run-to-green-concurrent.test.ts, per harness: the real `claude`, `codex` and `pi`, each in its own worktree,
 * driven by the scripted model to make a failing test pass. The first attempt is scripted wrong
 * (red), Polly's feedback reaches the SAME session, the second attempt is green, and the result is
 * ONE clean commit on `polly/<id>`. Driven through the tools: dispatch → run_acceptance →
 * send_followup → run_acceptance. Needs `npm run build` (the runner and the gate run from dist/).
 */
import type { PollyConfig } from '../../brain/config/config-schema.js';
import { expect } from 'vitest';
import { join } from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { repoStateDir } from '../../workers/sandbox/agent-state-dir.js';
import { createFileRegistryStore } from '../../brain/registry/registry-store.js';
import type { Harness } from '../../brain/core/vocabulary.js';
import { dispatch } from '../../brain/task-tools/dispatch.js';
import { runAcceptanceTool } from '../../brain/task-tools/run-acceptance.js';
import { sendFollowup } from '../../brain/task-tools/send-followup.js';
import type { ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { createWorkerSupervisor } from '../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import type { TestRepo } from './git-repo.js';
import { humanMessages, makeTask, processWith, runTool, scriptedAgentEnv, scriptedConfig, sessionRequests, type ToolRig } from './worker-tools.js';

/** A small project whose test fails: sum subtracts. */
export const SUM_REPO: Record<string, string> = {
  'package.json': '{\n  "name": "sum",\n  "private": true,\n  "scripts": { "test": "node test.js" }\n}\n',
  'sum.js': 'module.exports = (a, b) => a - b;\n',
  'test.js':
    "const sum = require('./sum.js');\nconst got = sum(2, 3);\nif (got !== 5) {\n  console.error(`sum(2, 3) should be 5 but was ${got}`);\n  process.exit(1);\n}\nconsole.log('ok');\n",
};

/** Per task: the first turn multiplies (red: 6), the follow-up adds (green). */
export function sumScript(taskIds: string[]): string {
  return `sessions:\n${taskIds
    .map(
      (id) => `  - name: ${id}
    match: {task: ${id}, role: implement}
    turns:
      - steps:
          - edit: {path: sum.js, old: "a - b", new: "a * b"}
          - finish: "Fixed sum.js."
      - steps:
          - edit: {path: sum.js, old: "a * b", new: "a + b"}
          - finish: "Now sum adds."
`,
    )
    .join('')}`;
}

/** Set up a rig on `repo` (file registry in <repo>/.polly, real worktrees, real supervisor); `patch` edits its config. */
export function makeRig(repo: TestRepo, server: ScriptedModelServer, patch?: (c: PollyConfig) => void): ToolRig {
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const config = scriptedConfig(server.url, patch);
  return {
    repoRoot: repo.dir,
    store,
    config,
    worktrees: createWorktreeManager({ repoRoot: repo.dir }),
    supervisor: createWorkerSupervisor({ repoRoot: repo.dir, store, config, heartbeatMs: 500, registryHeartbeatMs: 500 }),
    agentEnv: scriptedAgentEnv(server.url),
  };
}

/** Stop whatever a failed test left running (workers outlive their supervisor by design). */
export async function stopAll(rig: ToolRig): Promise<void> {
  const ids = new Set(Object.values((await rig.store.read()).workers).map((w) => w.taskId));
  for (const id of ids) await rig.supervisor.cancelTask(id);
}

/** The whole loop for one task, with its assertions. */
export async function runToGreen(rig: ToolRig, server: ScriptedModelServer, id: string, harness: Harness, git: (args: string[]) => string): Promise<void> {
  await rig.store.update((d) => {
    d.tasks[id] = makeTask(id, harness);
  });
  const first = await runTool(rig, dispatch, id, `${id}:dispatch:1`);
  expect(first, first.note).toMatchObject({ outcome: 'ok' });
  let task = (await rig.store.read()).tasks[id]!;
  expect(task.worktree).toBe(join(rig.repoRoot, '.worktrees', id));
  expect(task.branch).toBe(`polly/${id}`);
  expect(task.sessionId).toBeTruthy();
  const session = task.sessionId;

  const red = await runTool(rig, runAcceptanceTool, id, `${id}:acceptance:1`);
  expect(red.outcome).toBe('failure');
  task = (await rig.store.read()).tasks[id]!;
  expect(task.status).toBe('fixing');
  expect(task.feedback).toContain('sum(2, 3) should be 5 but was 6');
  expect(task.checks[0]).toMatchObject({ command: 'npm test', exitCode: 1 });

  const second = await runTool(rig, sendFollowup, id, `${id}:followup:1`);
  expect(second, second.note).toMatchObject({ outcome: 'ok' });
  task = (await rig.store.read()).tasks[id]!;
  expect(task.sessionId).toBe(session);
  expect(task.attempts).toBe(2);

  const green = await runTool(rig, runAcceptanceTool, id, `${id}:acceptance:2`);
  expect(green, green.note).toMatchObject({ outcome: 'ok' });
  task = (await rig.store.read()).tasks[id]!;
  expect(task.status).toBe('green');
  expect(task.feedback).toBeNull();
  // Both acceptance runs are kept (issue 32 item 9): the red one of the first attempt, the green one of the second.
  expect(task.checkRuns?.map((r) => [r.attempt, r.green, r.results.map((c) => c.exitCode)])).toEqual([
    [1, false, [1]],
    [2, true, [0]],
  ]);
  expect(task.checkRuns![0]!.results[0]!.output).toContain('sum(2, 3) should be 5 but was 6');

  // The feedback reached the same session: the follow-up's requests carry 2 human turns, the second being Polly's feedback.
  const reqs = sessionRequests(server.requests, id);
  const later = reqs.filter((r) => r.turnIndex === 1);
  expect(later.length).toBeGreaterThan(0);
  for (const r of later) {
    expect(r.view?.humanTurns).toBe(2);
    const humans = humanMessages(r.body);
    expect(humans.at(-1)).toContain('sum(2, 3) should be 5 but was 6');
    expect(humans.some((h) => h.includes(`[polly task=${id} role=implement]`))).toBe(true);
  }
  expect(reqs.filter((r) => r.turnIndex === 0).every((r) => r.view?.humanTurns === 1)).toBe(true);

  // One clean commit on polly/<id>, with the trailer; the worktree is clean; sum adds.
  // One line per commit: the trailers are folded onto it (a commit carries Polly-Task and Polly-Task-Content).
  const log = git(['log', '--format=%H%x09%s%x09%(trailers:only,unfold,separator=%x20)', `${task.baseCommit}..polly/${id}`])
    .split('\n')
    .filter(Boolean);
  expect(log).toHaveLength(1);
  expect(log[0]).toContain(`Polly-Task: ${id}`);
  expect(task.headCommit).toBe(git(['rev-parse', `polly/${id}`]));
  expect(git(['-C', task.worktree!, 'status', '--porcelain'])).toBe('');
  expect(git(['show', `polly/${id}:sum.js`])).toBe('module.exports = (a, b) => a + b;');
  expect(git(['diff', '--name-only', `${task.baseCommit}`, `polly/${id}`])).toBe('sum.js');
  // Nothing left running.
  expect(processWith(`${rig.repoRoot}/.polly/workers/w-${id}-`)).toEqual([]);
  expect(processWith(`${repoStateDir(rig.repoRoot)}/agents/${id}/`)).toEqual([]);
  // Every turn ran in Polly's sandbox: the runner (or the standby runner that took the turn) logs it before starting the agent.
  const workersDir = join(rig.repoRoot, '.polly', 'workers');
  const logs = readdirSync(workersDir)
    .map((d) => (d === 'standby.log' ? join(workersDir, d) : join(workersDir, d, 'runner.log')))
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  const confinedTurns = logs.split('\n').filter((l) => /\[polly\] sandbox: \S+ runs in bubblewrap/.test(l) && l.includes(task.worktree!));
  expect(confinedTurns).toHaveLength(2);
  expect((await rig.supervisor.live()).filter((w) => w.taskId === id)).toEqual([]);
  const workers = Object.values((await rig.store.read()).workers).filter((w) => w.taskId === id);
  expect(workers.map((w) => w.state)).toEqual(['exited', 'exited']);
}
