// The local end of a remote turn (workers/hosts/remote-turn.ts) through the real worker supervisor,
// on a real sshd host (test/helpers/ssh-hosts.ts) with the real `pi` against the scripted model:
// the turn's channel is opened first and the state pushed while the host's Polly starts, so on the
// repository's first turn there the push finds no mirror and is sent again after the host said
// `ready`; on the next turn it goes through at once. Either way the turn's files come back, and the
// host ran the worker in the runner it booted before the request. A host without Polly refuses the
// turn with the fix, before anything was sent there.
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { pollyIdentity } from '../../../brain/core/polly-identity.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createWorktreeManager, type WorktreeManager } from '../../../workers/git/worktree-manager.js';
import { repoKeyFor } from '../../../workers/hosts/worktree-transfer.js';
import { createWorkerSupervisor } from '../../../workers/supervisor/worker-supervisor.js';
import type { WorkerSupervisor } from '../../../workers/worker-turn.js';
import type { AgentEvent } from '../../../workers/agents/agent-adapter.js';
import { runRemoteTurn, type RemoteTurnSpec } from '../../../workers/hosts/remote-turn.js';
import type { WorkerSpec } from '../../../workers/supervisor/worker-runner.js';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { BENCH_GIT_ENV, generateBenchRepo } from '../../../scripts/bench-repo.js';
import { startSshHosts, type SshHosts } from '../../helpers/ssh-hosts.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const SCRIPT = `sessions:
  - name: write
    match: {role: implement}
    turns:
      - steps:
          - write:
              path: src/from-host.js
              content: "export const fromHost = 1;\\n"
          - finish: "Wrote src/from-host.js."
`;
const KEY_ENV = 'POLLY_REMOTE_TURN_TEST_KEY';

describe.skipIf(!hasSystemPackage('openssh-server', import.meta.url) || !hasSystemPackage('bubblewrap', import.meta.url))('a remote turn through the supervisor', () => {
  let hosts: SshHosts;
  let model: ScriptedModelServer;
  let root: string;
  let repo: string;
  let manager: WorktreeManager;
  let supervisor: (only: string) => WorkerSupervisor;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-remote-turn-')));
    repo = generateBenchRepo(root, 20, { origin: true });
    hosts = await startSshHosts([{ name: 'a' }, { name: 'b', pollyOnPath: false }]);
    model = await startScriptedModelServer({ script: parseModelScript(SCRIPT) });
    manager = createWorktreeManager({ repoRoot: repo, git: createGitRunner({ env: BENCH_GIT_ENV }) });
    const store = createFileRegistryStore(join(repo, '.polly'));
    supervisor = (only) => {
      const config: PollyConfig = structuredClone(DEFAULT_CONFIG);
      config.workers.pi = { command: 'pi', model: 'scripted', provider: null, base_url: `${model.url}/v1`, api: 'openai-completions', api_key_env: KEY_ENV };
      const h = hosts.hosts.find((x) => x.name === only)!;
      config.workers.hosts = [{ name: h.name, ssh: h.name, port: null, capacity: 1, harnesses: ['pi'], dir: h.dir }];
      config.workers.ssh_config = hosts.sshConfig;
      return createWorkerSupervisor({ repoRoot: repo, store, config, stateRoot: join(repo, '.polly', 'workers'), pollMs: 20, gateJournalPath: null });
    };
  }, 180_000);
  afterAll(async () => {
    await model?.close();
    await hosts?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const turn = async (s: WorkerSupervisor, id: string) => {
    const wt = await manager.create({ id, baseBranch: 'main' });
    const result = await s.runTurn({
      taskId: id,
      orderId: `test:${id}:${Date.now()}`,
      harness: 'pi',
      purpose: 'implement',
      role: 'implement',
      readOnly: false,
      cwd: wt.path,
      prompt: `[polly task=${id} role=implement] write the file`,
      resumeSessionId: null,
      model: null,
      gateContext: { repoRoot: repo, worktree: wt.path, branch: wt.branch, defaultBranch: 'main', home: homedir() },
      env: { [KEY_ENV]: 'test-dummy-key' },
    });
    return { wt, result };
  };

  it("the repository's first turn on a host (no mirror there yet) and the next one: both run there, in the runner booted before the request, and the files come back", async () => {
    const a = hosts.hosts.find((h) => h.name === 'a')!;
    const key = await repoKeyFor(createGitRunner(), repo);
    expect(existsSync(join(a.dir, 'repos', key))).toBe(false);
    const s = supervisor('a');
    for (const id of ['t1', 't2']) {
      const { wt, result } = await turn(s, id);
      expect(result.status, result.message ?? '').toBe('ok');
      expect(result.host).toBe('a');
      expect(readFileSync(join(wt.path, 'src/from-host.js'), 'utf8')).toBe('export const fromHost = 1;\n');
    }
    expect(existsSync(join(a.dir, 'repos', key, '.git', 'HEAD'))).toBe(true);
    // Each host runner's log is the standby runner's own output, moved there when the turn claimed it.
    const workers = join(a.dir, 'workers', pollyIdentity(repo).id);
    const logs = readdirSync(workers).map((w) => readFileSync(join(workers, w, 'runner.log'), 'utf8'));
    expect(logs).toHaveLength(2);
    for (const log of logs) expect(log).toMatch(/^\[polly\] standby polly-host-standby-\d+ \(pid \d+\) ready/);
    expect(readdirSync(join(a.dir, 'state', 'standby'))).toEqual([]);
    s.stop?.();
  }, 300_000);

  it('a host without Polly (it passed placement: a probe is trusted 30 s) refuses the turn with the fix, and nothing was sent', async () => {
    const b = hosts.hosts.find((h) => h.name === 'b')!;
    const wt = await manager.create({ id: 't3', baseBranch: 'main' });
    const spec = {
      workerId: 'w-t3-test',
      taskId: 't3',
      cwd: wt.path,
      host: {
        host: { name: 'b', ssh: 'b', port: null, capacity: 1, harnesses: ['pi'], dir: b.dir },
        sshConfig: hosts.sshConfig,
        controlDir: mkdtempSync(join(tmpdir(), 'polly-ctl-')),
        leaseMs: 30_000,
        repoKey: await repoKeyFor(createGitRunner(), repo),
        clone: pollyIdentity(repo).id,
        baseBranch: 'main',
        baseCommit: null,
      },
    } as unknown as WorkerSpec & { host: RemoteTurnSpec };
    const recorded: AgentEvent[] = [];
    const result = await runRemoteTurn(spec, (e) => recorded.push(e), new AbortController().signal);
    expect(result.status).toBe('agent_refused');
    expect(result.message).toMatch(/^host b cannot run this turn: polly is not installed on host b: .*run "polly hosts install b" here/);
    expect(result.hostLost).toMatchObject({ host: 'b', started: false });
    expect(recorded.map((e) => e.type)).toEqual(['error']);
    expect(existsSync(join(b.dir, 'repos'))).toBe(false);
  }, 120_000);
});
