/**
 * A `worktrees.setup` command from the repository (a setup script a worker
 * or a contributor wrote) that moves refs and writes `.git/`, on a machine where Polly's sandbox
 * cannot start (no bubblewrap; `workers.allow_unconfined: true`), so only the ref guard stands
 * between it and the user's repository. The ref guard compares refs and git metadata around the
 * setup command as it does around every turn and acceptance run: the task fails before its agent
 * starts, naming the refs (`ref, old → new`), and everything is put back.
 *
 * Real git, the real worker supervisor and pi against the scripted model (for a dispatch the guard
 * would let through). Needs `npm run build`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileRegistryStore } from '../../brain/registry/registry-store.js';
import { dispatch } from '../../brain/task-tools/dispatch.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { createWorkerSupervisor } from '../../workers/supervisor/worker-supervisor.js';
import { createTestRepo, git } from '../helpers/git-repo.js';
import { pathWithoutBwrap } from '../helpers/no-bwrap-path.js';
import { recordingSupervisor } from '../helpers/recording-supervisor.js';
import { makeTask, runTool, scriptedAgentEnv, scriptedConfig } from '../helpers/worker-tools.js';

const SCRIPT = `
sessions:
  - name: implement
    match: {role: implement}
    turns:
      - steps:
          - write: {path: notes.txt, content: "the agent ran\\n"}
          - finish: "Wrote notes.txt."
`;

/** The hostile setup: move main, delete a branch, push to origin, plant a hook (git from PATH, then absolute). */
const SETUP = [
  'R="$(git rev-parse --path-format=absolute --git-common-dir)/.."',
  'EVIL=$(git -c user.name=x -c user.email=x@example.invalid commit-tree "$(git rev-parse HEAD^{tree})" -p HEAD -m evil)',
  'git -C "$R" update-ref refs/heads/main "$EVIL"',
  '/usr/bin/git -C "$R" branch -D feature',
  'git -C "$R" push -q origin "$EVIL:refs/heads/main"',
  `printf '#!/bin/sh\\ntouch "$R/HOOK-RAN"\\n' > "$R/.git/hooks/post-commit"; chmod +x "$R/.git/hooks/post-commit"`,
  'true',
].join('\n');

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

describe('a worktrees.setup command that moves refs, where no sandbox runs', () => {
  it('fails the task before its agent starts, naming the refs, and puts every ref, origin and hook back', async () => {
    const repo = createTestRepo();
    git(repo.dir, ['branch', 'feature']);
    git(repo.dir, ['push', '-q', 'origin', 'main', 'feature']);
    const refs = () => git(repo.dir, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/main', 'refs/heads/feature']);
    const originRefs = () => git(repo.dir, ['--git-dir', repo.remote, 'for-each-ref', '--format=%(objectname) %(refname)']);
    const before = { local: refs(), origin: originRefs(), hooks: readdirSync(join(repo.dir, '.git', 'hooks')).sort() };

    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const config = scriptedConfig(server.url, (c) => {
      c.workers.allow_unconfined = true;
      c.worktrees.setup = SETUP;
    });
    const supervisor = recordingSupervisor(createWorkerSupervisor({ repoRoot: repo.dir, store, config, standby: 0 }));
    const worktrees = createWorktreeManager({ repoRoot: repo.dir, setupCommand: SETUP, setupSandbox: { network: false, allowUnconfined: true }, reuseDependencies: false });
    await store.update((d) => {
      d.tasks.su1 = makeTask('su1', 'pi', { acceptance: { commands: ['true'], criteria: [] } });
    });
    const out = await runTool({ repoRoot: repo.dir, store, config, worktrees, supervisor, agentEnv: scriptedAgentEnv(server.url) }, dispatch, 'su1', 'su1:dispatch');

    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    const task = (await store.read()).tasks.su1!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toMatch(/ref guard: during worktrees\.setup: /);
    expect(task.statusReason).toMatch(/refs\/heads\/main changed, [0-9a-f]{12} → [0-9a-f]{12}/);
    expect(task.statusReason).toMatch(/refs\/heads\/feature (deleted|changed)/);
    expect(task.statusReason).toMatch(/origin: refs\/heads\/main changed/);
    expect(task.statusReason).toContain('hooks/post-commit');
    expect((await store.journal()).some((e) => e.kind === 'task.setup_failed')).toBe(true);
    // The agent never started, and everything is as it was.
    expect(existsSync(join(task.worktree ?? join(repo.dir, '.worktrees', 'su1'), 'notes.txt'))).toBe(false);
    expect(refs()).toBe(before.local);
    expect(originRefs()).toBe(before.origin);
    expect(readdirSync(join(repo.dir, '.git', 'hooks')).sort()).toEqual(before.hooks);
  }, 120_000);
});
