/**
 * Orchestration cases for workers (../shared/cases/orchestration.md), with real git, real
 * processes and the real CLIs against the scripted model, driven through the task tools:
 * - case 1: a missing CLI, a CLI that exits at once with stderr, a CLI stuck on a trust prompt →
 *   named task states within seconds;
 * - case 6: a process running the supervisor is SIGKILLed while its worker runs; a new supervisor
 *   adopts the worker and gets its result; a worker whose runner was killed too is marked dead
 *   with the cause, its agent is killed, and the order is not run again;
 * - case 8: codex under workspace-write cannot commit in a linked worktree, Polly commits → one
 *   clean commit; pi commits itself and leaves a file → Polly commits the rest, tree clean.
 * (Case 7 is covered by the adapters' parser tests.) Needs `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PollyConfig } from '../../../brain/config/config-schema.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import type { Harness } from '../../../brain/core/vocabulary.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { runAcceptanceTool } from '../../../brain/task-tools/run-acceptance.js';
import type { WorkerTurnRequest } from '../../../workers/worker-turn.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { createWorkerSupervisor, workerIdFor } from '../../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, type TestRepo } from '../../helpers/git-repo.js';
import { stopAll } from '../../helpers/run-to-green.js';
import { makeTask, NPM_TEST_PROJECT, processWith, runTool, scriptedAgentEnv, scriptedConfig, type ToolRig } from '../../helpers/worker-tools.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const SCRIPT = `
sessions:
  - name: crash-adopt
    match: {task: c6a, role: implement}
    turns:
      - steps:
          - run: "sleep 3.25"
          - write: {path: adopted.txt, content: "done\\n"}
          - finish: "Finished after the Brain died."
  - name: crash-dead
    match: {task: c6b, role: implement}
    turns:
      - steps:
          - run: "sleep 37.75"
          - finish: "never reached"
  - name: codex-commit
    match: {task: c8codex, role: implement}
    turns:
      - steps:
          - write: {path: feature.txt, content: "feature\\n"}
          - run: "git add -A && git commit -q -m 'agent commit'"
          - finish: "Wrote feature.txt; my git commit failed."
  - name: pi-commit
    match: {task: c8pi, role: implement}
    turns:
      - steps:
          - write: {path: feature.txt, content: "feature\\n"}
          - run: "git add feature.txt && git commit -q -m 'agent commit'"
          - write: {path: extra.txt, content: "left uncommitted\\n"}
          - finish: "Committed feature.txt, left extra.txt."
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => server?.close());

function rigFor(repo: TestRepo, config: PollyConfig): ToolRig {
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  return {
    repoRoot: repo.dir,
    store,
    config,
    worktrees: createWorktreeManager({ repoRoot: repo.dir }),
    supervisor: createWorkerSupervisor({ repoRoot: repo.dir, store, config }),
    agentEnv: scriptedAgentEnv(server.url),
  };
}

async function addTask(rig: ToolRig, id: string, worker: Harness, commands = ['true']): Promise<void> {
  await rig.store.update((d) => {
    d.tasks[id] = makeTask(id, worker, { acceptance: { commands, criteria: [] } });
  });
}

function fakeCli(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe.skipIf(!SANDBOXED)('case 1: a worker that never starts gets a named task state within seconds', () => {
  // The stand-in CLIs live outside /tmp: inside Polly's sandbox /tmp is a fresh tmpfs, so a CLI
  // installed under the host's /tmp would not exist there (node_modules/.cache is visible, read-only).
  const cacheDir = join(process.cwd(), 'node_modules', '.cache');
  mkdirSync(cacheDir, { recursive: true });
  const tmp = mkdtempSync(join(cacheDir, 'polly-case1-'));
  const cases: Array<{ name: string; command: string; status: string; reason: RegExp; permanent: boolean }> = [
    {
      name: 'missing CLI',
      command: join(tmp, 'no-such-dir', 'pi'),
      status: 'agent_missing',
      reason: /^agent_missing: .*no-such-dir\/pi (could not be started \(ENOENT\)|exited 127 \(command not found\))/,
      permanent: true,
    },
    {
      name: 'instant exit with stderr',
      command: fakeCli(tmp, 'pi-crash', 'echo "pi: fatal: cannot read models.json (EACCES)" >&2\nexit 3'),
      status: 'agent_exited',
      reason: /^agent_exited: .*exited 3\..*cannot read models\.json \(EACCES\)/s,
      permanent: false,
    },
    {
      name: 'trust prompt',
      command: fakeCli(tmp, 'pi-prompt', "printf 'Do you trust the files in this folder? (y/n) '\nsleep 53.5"),
      status: 'blocked_on_prompt',
      reason: /^blocked_on_prompt: .*waiting for interactive input.*Do you trust the files in this folder/s,
      permanent: true,
    },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.status}`, async () => {
      const repo = createTestRepo(NPM_TEST_PROJECT);
      const rig = rigFor(
        repo,
        scriptedConfig(server.url, (cfg) => (cfg.workers.pi.command = c.command)),
      );
      await addTask(rig, 'c1', 'pi');
      const t0 = Date.now();
      const out = await runTool(rig, dispatch, 'c1', 'c1:dispatch');
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(out.outcome).toBe('failure');
      expect(Boolean(out.permanent)).toBe(c.permanent);
      const task = (await rig.store.read()).tasks.c1!;
      expect(task.status).toBe(c.status);
      expect(task.statusReason).toMatch(c.reason);
      expect(processWith('sleep 53.5')).toEqual([]);
      expect(await rig.supervisor.live()).toEqual([]);
    });
  }
});

describe('case 1 (before the agent): a worktree that cannot be made', () => {
  it('an unknown base branch fails dispatch permanently, naming the branch, and starts no worker', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const rig = rigFor(repo, scriptedConfig(server.url));
    await rig.store.update((d) => {
      d.tasks.c1wt = makeTask('c1wt', 'pi', { baseBranch: 'no-such-base' });
    });
    const out = await runTool(rig, dispatch, 'c1wt', 'c1wt:dispatch');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const reg = await rig.store.read();
    expect(reg.tasks.c1wt).toMatchObject({ status: 'failed', worktree: null });
    expect(reg.tasks.c1wt!.statusReason).toMatch(/^worktree: base branch "no-such-base" does not exist/);
    expect(reg.workers).toEqual({});
  });
});

/** A node process that runs a supervisor's runTurn (it plays the Brain that gets SIGKILLed). */
function startBrainProcess(repo: TestRepo, config: PollyConfig, request: WorkerTurnRequest): { pid: number; exited: Promise<void> } {
  const dist = resolve('dist');
  const file = join(repo.root, 'brain-child.mjs');
  writeFileSync(
    file,
    [
      `import { createFileRegistryStore } from ${JSON.stringify(join(dist, 'brain/registry/registry-store.js'))};`,
      `import { createWorkerSupervisor } from ${JSON.stringify(join(dist, 'workers/supervisor/worker-supervisor.js'))};`,
      `const [repoRoot, configJson, requestJson] = process.argv.slice(2);`,
      `const store = createFileRegistryStore(repoRoot + '/.polly');`,
      `const supervisor = createWorkerSupervisor({ repoRoot, store, config: JSON.parse(configJson) });`,
      `await supervisor.runTurn(JSON.parse(requestJson));`,
      `process.stdout.write('turn ended in the child: it should have been killed\\n');`,
    ].join('\n'),
  );
  const child = spawn(process.execPath, [file, repo.dir, JSON.stringify(config), JSON.stringify(request)], { stdio: 'ignore' });
  return { pid: child.pid!, exited: new Promise((r) => child.on('exit', () => r())) };
}

function turnRequest(repo: TestRepo, taskId: string, orderId: string): WorkerTurnRequest {
  return {
    taskId,
    orderId,
    harness: 'pi',
    purpose: 'implement',
    role: 'implement',
    readOnly: false,
    cwd: repo.dir,
    prompt: `[polly task=${taskId} role=implement] go`,
    resumeSessionId: null,
    model: null,
    gateContext: { repoRoot: repo.dir, worktree: repo.dir, branch: 'main', defaultBranch: 'main', home: repo.root },
    env: scriptedAgentEnv(server.url),
  };
}

async function waitFor(what: string, fn: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(!SANDBOXED)('case 6: a SIGKILLed Brain leaves no row running for ever', () => {
  it('a new supervisor adopts the live worker and gets its result; the order never starts a second agent', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const config = scriptedConfig(server.url);
    const rig = rigFor(repo, config);
    try {
      const request = turnRequest(repo, 'c6a', 'c6a:dispatch');
      const brain = startBrainProcess(repo, config, request);
      await waitFor('the agent to run its command', () => processWith('sleep 3.25').length > 0);
      await waitFor("the dead Brain's standby runner", () => processWith(`polly-standby-${brain.pid}-`).length > 0);
      process.kill(brain.pid, 'SIGKILL');
      await brain.exited;
      // Its standby runner (idle, waiting on a pipe from the Brain) exits with it; the worker does not.
      await waitFor('the standby runner to exit', () => processWith(`polly-standby-${brain.pid}-`).length === 0, 5000);
      const id = workerIdFor('c6a', 'c6a:dispatch');
      const row = (await rig.store.read()).workers[id]!;
      expect(row).toMatchObject({ state: 'running', supervisor: brain.pid });

      const after = createWorkerSupervisor({ repoRoot: repo.dir, store: rig.store, config });
      expect(await after.reconcile()).toEqual({ adopted: [id], reaped: [] });
      expect((await rig.store.read()).workers[id]!.supervisor).toBe(process.pid);
      const events: string[] = [];
      const r = await after.runTurn(request, { onEvent: (e) => events.push(e.type) });
      expect(r).toMatchObject({ status: 'ok', adopted: true, workerId: id, finalText: 'Finished after the Brain died.' });
      // Replayed from the start of events.jsonl: the runner's metering proxy first (docs/metering.md), then the agent's session.
      expect(events.slice(0, 2)).toEqual(['metering', 'session']);
      expect(readFileSync(join(repo.dir, 'adopted.txt'), 'utf8')).toBe('done\n');
      // One agent start for the order: exactly one first request of the session.
      expect(server.requests.filter((q) => q.session === 'crash-adopt' && q.view?.toolResultsSinceHuman === 0)).toHaveLength(1);
      expect((await rig.store.read()).workers[id]).toMatchObject({ state: 'exited', outcome: 'ok' });
      expect(await after.live()).toEqual([]);
    } finally {
      await stopAll(rig);
    }
  });

  it('runner killed too: reconcile marks the row dead with the cause, kills the agent, and the re-offered order fails with it', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const config = scriptedConfig(server.url);
    const rig = rigFor(repo, config);
    try {
      await addTask(rig, 'c6b', 'pi');
      const request = turnRequest(repo, 'c6b', 'c6b:dispatch');
      const brain = startBrainProcess(repo, config, request);
      await waitFor('the agent to run its command', () => processWith('sleep 37.75').length > 0);
      const id = workerIdFor('c6b', 'c6b:dispatch');
      const row = (await rig.store.read()).workers[id]!;
      process.kill(brain.pid, 'SIGKILL');
      process.kill(row.pid, 'SIGKILL');
      await brain.exited;
      await waitFor('the runner to die', () => processWith(join(repo.dir, '.polly', 'workers', id, 'spec.json')).length === 0, 5000);
      // Inside Polly's sandbox (own PID namespace, --die-with-parent) the agent and its command die
      // with their runner: nothing is left for reconcile to kill.
      await waitFor('the agent and its command to die with the runner', () => processWith('sleep 37.75').length === 0, 5000);

      const after = createWorkerSupervisor({ repoRoot: repo.dir, store: rig.store, config });
      expect(await after.reconcile()).toEqual({ adopted: [], reaped: [id] });
      const dead = (await rig.store.read()).workers[id]!;
      expect(dead.state).toBe('dead');
      expect(dead.cause).toMatch(new RegExp(`^the worker process died \\(pid ${row.pid}\\) without a result`));
      await waitFor('pi to be gone', () => processWith(join(repo.dir, '.polly', 'workers', 'agents', 'c6b')).length === 0, 5000);
      expect(await after.live()).toEqual([]);

      // The runtime re-offers the order: the tool reports the loss as a task state and starts nothing.
      const before = server.requests.length;
      const out = await runTool({ ...rig, supervisor: after }, dispatch, 'c6b', 'c6b:dispatch');
      expect(out.outcome).toBe('failure');
      const task = (await rig.store.read()).tasks.c6b!;
      expect(task.status).toBe('agent_exited');
      expect(task.statusReason).toContain(`the worker process died (pid ${row.pid}) without a result`);
      expect(server.requests.length).toBe(before);
      expect(Object.keys((await rig.store.read()).workers)).toEqual([id]);
    } finally {
      await stopAll(rig);
    }
  });
});

describe.skipIf(!SANDBOXED)('case 8: Polly commits after the agent, so the result is clean either way', () => {
  it('codex under workspace-write cannot commit in a linked worktree; Polly makes one clean commit', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const rig = rigFor(repo, scriptedConfig(server.url));
    try {
      await addTask(rig, 'c8codex', 'codex', ['test -f feature.txt']);
      const out = await runTool(rig, dispatch, 'c8codex', 'c8codex:dispatch');
      expect(out, out.note).toMatchObject({ outcome: 'ok' });
      const wt = (await rig.store.read()).tasks.c8codex!.worktree!;
      // The agent's own commit failed on the linked worktree's index.lock (codex mounts .git read-only);
      // what the model was told is in its next request (codex does not stream every exec item).
      const told = server.requests.filter((q) => q.session === 'codex-commit').map((q) => JSON.stringify(q.body));
      expect(told.some((b) => /index\.lock[^"]*Read-only file system/.test(b))).toBe(true);
      expect(repo.git(['-C', wt, 'status', '--porcelain'])).toContain('feature.txt');
      const green = await runTool(rig, runAcceptanceTool, 'c8codex', 'c8codex:acceptance');
      expect(green, green.note).toMatchObject({ outcome: 'ok' });
      const task = (await rig.store.read()).tasks.c8codex!;
      expect(repo.git(['log', '--format=%s', `${task.baseCommit}..polly/c8codex`]).split('\n')).toEqual([task.title]);
      expect(repo.git(['-C', wt, 'status', '--porcelain'])).toBe('');
      expect(task.headCommit).toBe(repo.git(['rev-parse', 'polly/c8codex']));
    } finally {
      await stopAll(rig);
    }
  });

  it("pi's own commit is refused by the sandbox (git metadata is Polly's); Polly commits everything it left in one commit, tree clean", async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const rig = rigFor(repo, scriptedConfig(server.url));
    try {
      await addTask(rig, 'c8pi', 'pi', ['test -f feature.txt', 'test -f extra.txt']);
      const out = await runTool(rig, dispatch, 'c8pi', 'c8pi:dispatch');
      expect(out, out.note).toMatchObject({ outcome: 'ok' });
      const green = await runTool(rig, runAcceptanceTool, 'c8pi', 'c8pi:acceptance');
      expect(green, green.note).toMatchObject({ outcome: 'ok' });
      const task = (await rig.store.read()).tasks.c8pi!;
      expect(repo.git(['log', '--format=%s', `${task.baseCommit}..polly/c8pi`]).split('\n')).toEqual([task.title]);
      expect(repo.git(['-C', task.worktree!, 'status', '--porcelain'])).toBe('');
      expect(repo.git(['show', '--name-only', '--format=', 'polly/c8pi']).split('\n').sort()).toEqual(['extra.txt', 'feature.txt']);
      // Idempotent: the same acceptance order again finds nothing to commit and records the same tip.
      const again = await runTool(rig, runAcceptanceTool, 'c8pi', 'c8pi:acceptance');
      expect(again.outcome).toBe('ok');
      expect((await rig.store.read()).tasks.c8pi!.headCommit).toBe(task.headCommit);
    } finally {
      await stopAll(rig);
    }
  });
});
