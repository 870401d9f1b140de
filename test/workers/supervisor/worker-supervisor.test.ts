/**
 * The worker supervisor with the real `pi` (and `claude` for the root refusal) against the scripted
 * model: events through files, heartbeat into the registry, idempotency per order, cancel leaves
 * nothing running, a stopped supervisor starts nothing new, and Claude as root without
 * allow_root_sandbox. Needs `npm run build`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import type { WorkerTurnRequest } from '../../../workers/worker-turn.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { createWorkerSupervisor, workerIdFor } from '../../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';
import { makeTask, processWith, runTool, scriptedAgentEnv, scriptedConfig, SCRIPTED_KEY_ENV, NPM_TEST_PROJECT } from '../../helpers/worker-tools.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const SCRIPT = `
sessions:
  - name: basic
    match: {task: sv-basic, role: implement}
    turns:
      - steps:
          - write: {path: notes.txt, content: "hello\\n"}
          - run: "sleep 1.5"
          - finish: "Wrote notes.txt."
  - name: lost
    match: {task: sv-lost, role: implement}
    turns:
      - steps:
          - run: "sleep 2.5"
          - finish: "Done after the row was lost."
  - name: warm
    match: {task: sv-warm, role: implement}
    turns:
      - steps:
          - write: {path: warm.txt, content: "warm\\n"}
          - finish: "Wrote warm.txt."
  - name: warm-dispatch
    match: {task: sv-prewarm, role: implement}
    turns:
      - steps:
          - write: {path: sum.js, content: "module.exports = (a, b) => a + b;\\n"}
          - finish: "sum adds."
  - name: long
    match: {task: sv-cancel, role: implement}
    turns:
      - steps:
          - run: "sleep 41.5"
          - finish: "never reached"
`;

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
});
afterAll(async () => server?.close());

function request(repo: TestRepo, taskId: string, orderId: string): WorkerTurnRequest {
  return {
    taskId,
    orderId,
    harness: 'pi',
    purpose: 'implement',
    role: 'implement',
    readOnly: false,
    cwd: repo.dir,
    prompt: `[polly task=${taskId} role=implement] do it`,
    resumeSessionId: null,
    model: null,
    gateContext: { repoRoot: repo.dir, worktree: repo.dir, branch: 'main', defaultBranch: 'main', home: repo.root },
    env: scriptedAgentEnv(server.url),
  };
}

describe.skipIf(!SANDBOXED)('worker supervisor (real pi, detached runner)', () => {
  it('runs a turn through files: events in order, heartbeat in the registry, no secret on disk; the same order (twice at once, then again) runs once', async () => {
    const repo = createTestRepo();
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const supervisor = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url), heartbeatMs: 150, registryHeartbeatMs: 150 });
    const seen: AgentEvent[] = [];
    // Two supervisors (e.g. a Brain and its restarted twin) start the same order at once: one worker.
    const twin = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url) });
    const [r, r2] = await Promise.all([
      supervisor.runTurn(request(repo, 'sv-basic', 'order-1'), { onEvent: (e) => seen.push(e) }),
      twin.runTurn(request(repo, 'sv-basic', 'order-1')),
    ]);
    expect(r.status, r.message).toBe('ok');
    expect([r.adopted, r2.adopted].sort()).toEqual([false, true]);
    expect(r2).toMatchObject({ status: 'ok', workerId: r.workerId, sessionId: r.sessionId, finalText: r.finalText });
    expect(r.workerId).toBe(workerIdFor('sv-basic', 'order-1'));
    expect(r.finalText).toBe('Wrote notes.txt.');
    expect(readFileSync(join(repo.dir, 'notes.txt'), 'utf8')).toBe('hello\n');
    expect(seen).toEqual(r.events);
    // The runner's metering proxy starts first (docs/metering.md), then the agent's own events.
    expect(seen[0]).toMatchObject({ type: 'metering' });
    expect(seen[1]).toEqual({ type: 'session', sessionId: r.sessionId });
    expect(seen.filter((e) => e.type === 'metered').length).toBeGreaterThan(0);
    expect(seen.filter((e) => e.type === 'tool_call').map((e) => (e as { tool: string }).tool)).toEqual(['write', 'bash']);

    const dir = join(repo.dir, '.polly', 'workers', r.workerId);
    const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AgentEvent);
    expect(lines).toEqual(r.events);
    const spec = readFileSync(join(dir, 'spec.json'), 'utf8');
    expect(spec).toContain(SCRIPTED_KEY_ENV);
    expect(spec).not.toContain(scriptedAgentEnv(server.url)[SCRIPTED_KEY_ENV]!);

    const row = (await store.read()).workers[r.workerId]!;
    expect(row).toMatchObject({ taskId: 'sv-basic', orderId: 'order-1', harness: 'pi', state: 'exited', outcome: 'ok', sessionId: r.sessionId, stateDir: dir });
    expect(Date.parse(row.heartbeatAt)).toBeGreaterThan(Date.parse(row.startedAt));
    expect(row.pid).toBeGreaterThan(0);
    expect(row.agentPid).toBe((JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as { pid: number }).pid);
    expect(await supervisor.live()).toEqual([]);

    // Idempotent per order: the same order returns the first result without starting pi again.
    const before = server.requests.length;
    const again = await supervisor.runTurn(request(repo, 'sv-basic', 'order-1'));
    expect(again).toMatchObject({ status: 'ok', adopted: true, workerId: r.workerId, sessionId: r.sessionId, finalText: r.finalText });
    expect(server.requests.length).toBe(before);
    const journal = readFileSync(join(repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal.match(/"worker.started"/g)).toHaveLength(1);

    // The Brain stops: its idle standby runner ends at once; a turn of a new order is not started
    // (no row, no runner: the order is left for the next Brain); a turn already run still answers.
    const standby = `--standby polly-standby-${process.pid}-`;
    expect(processWith(standby)).not.toEqual([]);
    supervisor.stop?.();
    twin.stop?.();
    for (const end = Date.now() + 2000; Date.now() < end && processWith(standby).length > 0; ) await new Promise((r) => setTimeout(r, 50));
    expect(processWith(standby)).toEqual([]);
    await expect(supervisor.runTurn(request(repo, 'sv-basic', 'order-2'))).rejects.toMatchObject({ code: 'stopping' });
    expect((await store.read()).workers[workerIdFor('sv-basic', 'order-2')]).toBeUndefined();
    expect(await supervisor.runTurn(request(repo, 'sv-basic', 'order-1'))).toMatchObject({ status: 'ok', adopted: true, workerId: r.workerId });
  });

  it('a row lost while its runner runs (a registry restored from its backup) is written again from the worker files and adopted: the order starts no second agent', async () => {
    const repo = createTestRepo();
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const first = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url), standby: 0 });
    const id = workerIdFor('sv-lost', 'order-l');
    const turn = first.runTurn(request(repo, 'sv-lost', 'order-l'));
    // Lost once the agent runs (its runner wrote runner.pid and agent.json), as a restore finds it.
    const agentFile = join(repo.dir, '.polly', 'workers', id, 'agent.json');
    for (const end = Date.now() + 20_000; Date.now() < end && !existsSync(agentFile); ) await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(agentFile)).toBe(true);
    await store.update((draft) => {
      delete draft.workers[id];
    });
    // The next Brain's supervisor claims the same order: no row, but the runner lives.
    const next = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url), standby: 0 });
    const requestsBefore = server.requests.filter((r) => r.session === 'lost').length;
    const adopted = await next.runTurn(request(repo, 'sv-lost', 'order-l'));
    expect(adopted).toMatchObject({ status: 'ok', adopted: true, workerId: id, finalText: 'Done after the row was lost.' });
    expect((await turn).status).toBe('ok');
    const journal = readFileSync(join(repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal.match(/"worker.started"/g)).toHaveLength(1);
    expect(journal).toMatch(/"worker.adopted","data":\{[^}]*"fromFiles":true,"alive":true/);
    // The adopted turn asked the model nothing more than the one agent did.
    expect(server.requests.filter((r) => r.session === 'lost').length).toBeLessThanOrEqual(requestsBefore + 2);
    expect((await store.read()).workers[id]).toMatchObject({ state: 'exited', outcome: 'ok' });
  });

  it('cancelTask stops the runner, the agent and its command; the turn ends cancelled and nothing is left', async () => {
    const repo = createTestRepo();
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const supervisor = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url) });
    const turn = supervisor.runTurn(request(repo, 'sv-cancel', 'order-c'));
    const deadline = Date.now() + 20_000;
    while (processWith('sleep 41.5').length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(processWith('sleep 41.5')).not.toEqual([]);
    expect((await supervisor.live()).map((w) => w.taskId)).toEqual(['sv-cancel']);
    const t0 = Date.now();
    expect(await supervisor.cancelTask('sv-cancel')).toEqual({ cancelled: 1 });
    const r = await turn;
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.status).toBe('cancelled');
    expect(processWith('sleep 41.5')).toEqual([]);
    expect(processWith(join(repo.dir, '.polly', 'workers'))).toEqual([]);
    expect(await supervisor.live()).toEqual([]);
    expect((await store.read()).workers[r.workerId]).toMatchObject({ state: 'exited', outcome: 'cancelled' });
    expect(await supervisor.cancelTask('sv-cancel')).toEqual({ cancelled: 0 });

    // Aborting the caller's signal cancels the turn the same way.
    const controller = new AbortController();
    const second = supervisor.runTurn(request(repo, 'sv-cancel', 'order-d'), { signal: controller.signal });
    const until = Date.now() + 20_000;
    while (processWith('sleep 41.5').length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    const r2 = await second;
    expect(r2.status).toBe('cancelled');
    // This second turn ran in the standby runner started after the first (no node boot to wait for).
    expect(readFileSync(join(repo.dir, '.polly', 'workers', r2.workerId, 'runner.tag'), 'utf8')).toMatch(new RegExp(`^polly-standby-${process.pid}-`));
    expect(processWith('sleep 41.5')).toEqual([]);
    expect(await supervisor.live()).toEqual([]);
  }, 60_000);

  it('prewarm() boots the standby runner before any turn: the first turn of a fresh supervisor runs in it', async () => {
    const repo = createTestRepo();
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const supervisor = createWorkerSupervisor({ repoRoot: repo.dir, store, config: scriptedConfig(server.url) });
    supervisor.prewarm?.();
    supervisor.prewarm?.(); // idempotent: still one runner kept ahead of need
    const r = await supervisor.runTurn(request(repo, 'sv-warm', 'order-w'));
    expect(r.status, r.message).toBe('ok');
    // Without prewarm the first turn starts a runner cold (no runner.tag: see worker-files.ts).
    const tag = join(repo.dir, '.polly', 'workers', r.workerId, 'runner.tag');
    expect(existsSync(tag), 'the first turn did not run in a prewarmed standby runner').toBe(true);
    expect(readFileSync(tag, 'utf8')).toMatch(new RegExp(`^polly-standby-${process.pid}-`));
    supervisor.stop?.();
  });

  it('the dispatch tool prewarms: the first turn of a fresh Brain (supervisor) runs in a standby runner booted while its worktree was made', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const config = scriptedConfig(server.url);
    const rig = {
      repoRoot: repo.dir,
      store,
      config,
      worktrees: createWorktreeManager({ repoRoot: repo.dir }),
      supervisor: createWorkerSupervisor({ repoRoot: repo.dir, store, config }),
      agentEnv: scriptedAgentEnv(server.url),
    };
    await store.update((d) => {
      d.tasks['sv-prewarm'] = makeTask('sv-prewarm', 'pi');
    });
    await runTool(rig, dispatch, 'sv-prewarm', 'sv-prewarm:dispatch');
    const row = Object.values((await store.read()).workers).find((w) => w.taskId === 'sv-prewarm');
    expect(row, 'no worker was started').toBeDefined();
    expect(readFileSync(join(row!.stateDir!, 'runner.tag'), 'utf8')).toMatch(new RegExp(`^polly-standby-${process.pid}-`));
    rig.supervisor.stop?.();
  }, 60_000);

  it.skipIf(process.getuid?.() !== 0)(
    'Claude as root without allow_root_sandbox: dispatch fails at once, permanently, saying how to enable it',
    async () => {
      const repo = createTestRepo(NPM_TEST_PROJECT);
      const store = createFileRegistryStore(join(repo.dir, '.polly'));
      const config = scriptedConfig(server.url, (c) => {
        c.workers['claude-code'].allow_root_sandbox = false;
      });
      const rig = {
        repoRoot: repo.dir,
        store,
        config,
        worktrees: createWorktreeManager({ repoRoot: repo.dir }),
        supervisor: createWorkerSupervisor({ repoRoot: repo.dir, store, config }),
        agentEnv: scriptedAgentEnv(server.url),
      };
      await store.update((d) => {
        d.tasks.root1 = makeTask('root1', 'claude-code');
      });
      const t0 = Date.now();
      const out = await runTool(rig, dispatch, 'root1', 'root1:dispatch');
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(out).toMatchObject({ outcome: 'failure', permanent: true });
      const task = (await store.read()).tasks.root1!;
      expect(task.status).toBe('failed');
      expect(task.statusReason).toMatch(/^agent_refused: Claude Code refuses --permission-mode bypassPermissions when run as root/);
      expect(task.statusReason).toContain('allow_root_sandbox: true');
      // Refused before anything is made: no worktree, no branch (brain/task-tools/dispatch.ts checks first).
      expect(task.worktree === null || !existsSync(task.worktree)).toBe(true);
      expect(git(repo.dir, ['branch', '--list', 'polly/root1'])).toBe('');
    },
    20_000,
  );
});
