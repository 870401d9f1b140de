// Dispatch refuses what no agent attempt can fix, before an agent starts: an acceptance command
// whose program cannot exist in the repository, Claude Code as root without allow_root_sandbox
// (the whole fix in the reason), and a failing worktrees.setup (quoting the
// command, its exit code and last lines, and naming the log), and a check whose runner the checks'
// sandbox cannot find (workers/check-runner.ts runnerProbe). Real git, the real worktree
// manager, the real supervisor (recorded: it must receive no turn).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { dispatch } from '../../../brain/task-tools/dispatch.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, type TestRepo } from '../../helpers/git-repo.js';
import { recordingSupervisor } from '../../helpers/recording-supervisor.js';
import { makeTask, NPM_TEST_PROJECT, runTool, scriptedAgentEnv, scriptedConfig } from '../../helpers/worker-tools.js';

function rig(repo: TestRepo, setupCommand: string | null, allowRootSandbox = true) {
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const config = scriptedConfig('http://127.0.0.1:9', (c) => {
    c.worktrees.setup = setupCommand;
    c.workers['claude-code'].allow_root_sandbox = allowRootSandbox;
  });
  const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: repo.dir, store, config }));
  return {
    repoRoot: repo.dir,
    store,
    config,
    worktrees: createWorktreeManager({ repoRoot: repo.dir, setupCommand }),
    supervisor,
    agentEnv: scriptedAgentEnv('http://127.0.0.1:9'),
  };
}

describe('dispatch before the agent', () => {
  it('npm test in a repository without package.json: failed at once, permanently, naming the command and what is missing; no worktree, no agent', async () => {
    const repo = createTestRepo({ 'pyproject.toml': '[project]\nname = "x"\n' });
    const r = rig(repo, null);
    await r.store.update((d) => {
      d.tasks.cmd1 = makeTask('cmd1', 'pi', { acceptance: { commands: [], criteria: ['it works'] } }); // commands from config: npm test
    });
    const out = await runTool(r, dispatch, 'cmd1', 'cmd1:dispatch');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await r.store.read()).tasks.cmd1!;
    expect(task).toMatchObject({ status: 'failed', worktree: null });
    expect(task.statusReason).toContain(`"npm test" needs package.json, which ${repo.dir} does not have`);
    expect(task.statusReason).toContain('acceptance.commands in .polly/config.yaml');
    expect(r.supervisor.requests).toEqual([]);
    expect((await r.store.journal()).map((e) => e.kind)).toContain('task.command_refused');
  });

  it.runIf(process.getuid?.() === 0)('as root without allow_root_sandbox, a claude-code task fails at once with the whole fix; no worktree, no agent', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const r = rig(repo, 'sleep 5', false);
    await r.store.update((d) => {
      d.tasks.root1 = makeTask('root1', 'claude-code');
    });
    const started = Date.now();
    const out = await runTool(r, dispatch, 'root1', 'root1:dispatch');
    expect(Date.now() - started).toBeLessThan(4_000); // the setup (sleep 5) never ran
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await r.store.read()).tasks.root1!;
    expect(task).toMatchObject({ status: 'failed', worktree: null });
    expect(task.statusReason).toMatch(/^agent_refused: Claude Code refuses --permission-mode bypassPermissions when run as root/);
    expect(task.statusReason).toContain('set `workers: {claude-code: {allow_root_sandbox: true}}` in .polly/config.yaml (only on a disposable machine or container).');
    expect(out.note).toContain('allow_root_sandbox: true}}` in .polly/config.yaml (only on a disposable machine or container).');
    expect(r.supervisor.requests).toEqual([]);
    expect((await r.store.journal()).map((e) => e.kind)).toContain('task.agent_refused');
  });

  it('a failing setup fails the task before the agent: command, exit code, last lines and the log path', async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const setup = 'echo installing; echo "npm error code EUSAGE" >&2; echo "npm error The npm ci command can only install with an existing package-lock.json" >&2; exit 1';
    const r = rig(repo, setup);
    await r.store.update((d) => {
      d.tasks.set1 = makeTask('set1', 'pi');
    });
    const started = Date.now();
    const out = await runTool(r, dispatch, 'set1', 'set1:dispatch');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    expect(out.note).toContain('worktrees.setup');
    const task = (await r.store.read()).tasks.set1!;
    expect(task.status).toBe('failed');
    const logPath = join(repo.dir, '.polly', 'logs', 'worktree-setup-set1.log');
    expect(task.statusReason).toContain(`worktrees.setup "${setup}" exited 1; the agent was not started. Full log: ${logPath}`);
    expect(task.statusReason).toContain('npm ci command can only install with an existing package-lock.json');
    expect(existsSync(logPath)).toBe(true);
    expect(readFileSync(logPath, 'utf8')).toContain('installing');
    expect(r.supervisor.requests).toEqual([]);
  });

  it("a check whose runner is not on PATH in the checks' sandbox fails before the agent's first attempt; a script the task may write is not probed", async () => {
    const repo = createTestRepo(NPM_TEST_PROJECT);
    const r = rig(repo, null);
    await r.store.update((d) => {
      d.tasks.run1 = makeTask('run1', 'pi', { acceptance: { commands: ['./check.sh', 'CI=1 polly-no-such-runner -q'], criteria: ['it works'] } });
    });
    const out = await runTool(r, dispatch, 'run1', 'run1:dispatch');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await r.store.read()).tasks.run1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(
      /^acceptance command "CI=1 polly-no-such-runner -q" cannot run here: \(Polly's runner probe in the checks' sandbox: polly-no-such-runner: not found\), the program "polly-no-such-runner" is missing\. /,
    );
    expect(task.statusReason).toContain('no agent attempt was spent');
    expect(r.supervisor.requests).toEqual([]);
    expect((await r.store.journal()).map((e) => e.kind)).toContain('task.checks_cannot_run');
  });
});
