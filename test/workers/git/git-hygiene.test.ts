/**
 * Polly's own git never runs repository hooks or fsmonitor. A worker that could
 * write `.git/hooks/*`, a `core.hooksPath` in its worktree config or a `core.fsmonitor` command
 * gets nothing run by Polly's commit, push or worktree add. A control run of plain git in the same
 * repository shows that the planted programs are live (so the assertions can fail).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';
import { git } from '../../helpers/git-repo.js';

/** A hook script that records that it ran by creating `<markers>/<name>`. */
function plant(dir: string, name: string, markers: string): void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\ntouch '${join(markers, name)}'\nexit 0\n`);
  chmodSync(file, 0o755);
}

const HOOKS = ['pre-commit', 'commit-msg', 'post-commit', 'pre-push', 'post-checkout', 'reference-transaction', 'post-index-change'];

describe("Polly's git runs no repository hooks and no fsmonitor", () => {
  it('commit, push and worktree add with hooks in .git/hooks, core.hooksPath in config.worktree and core.fsmonitor', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const task = await createGreenTask(s, 'hy1', { 'a.txt': 'a\n' });
    const markers = join(s.outside, 'markers');
    mkdirSync(markers);
    const common = join(s.repo.dir, '.git');
    // What a worker without a sandbox could write: hooks in the common dir, a worktree-local
    // hooksPath (extensions.worktreeConfig makes git read config.worktree), an fsmonitor program.
    for (const h of HOOKS) plant(join(common, 'hooks'), h, markers);
    const altHooks = join(s.outside, 'alt-hooks');
    for (const h of HOOKS) plant(altHooks, `${h}`, markers);
    git(s.repo.dir, ['config', 'extensions.worktreeConfig', 'true']);
    writeFileSync(join(common, 'worktrees', 'hy1', 'config.worktree'), `[core]\n\thooksPath = ${altHooks}\n`);
    const fsmonitor = join(s.outside, 'fsmonitor.sh');
    writeFileSync(fsmonitor, `#!/bin/sh\ntouch '${join(markers, 'fsmonitor')}'\nexit 1\n`);
    chmodSync(fsmonitor, 0o755);
    git(s.repo.dir, ['config', 'core.fsmonitor', fsmonitor]);

    // Polly commits what the agent left, pushes the branch, and creates another worktree.
    writeFileSync(join(task.worktree!, 'b.txt'), 'b\n');
    const commit = await s.worktrees.commitAll({ id: 'hy1', message: 'hy1\n' });
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const pushed = await tools.run(createPushTool(), 'hy1', 'o-push');
    expect(pushed.outcome).toBe('ok');
    expect(git(s.repo.remote, ['rev-parse', 'refs/heads/polly/hy1'])).toBe(commit);
    await s.worktrees.create({ id: 'hy2', baseBranch: 'main' });
    expect(readdirSync(markers)).toEqual([]);

    // Control: plain git in the same worktree runs them (the planted programs are live).
    writeFileSync(join(task.worktree!, 'c.txt'), 'c\n');
    git(task.worktree!, ['add', '-A']);
    git(task.worktree!, ['commit', '-q', '-m', 'control']);
    expect(existsSync(join(markers, 'post-commit'))).toBe(true);
    rmSync(s.repo.root, { recursive: true, force: true });
    rmSync(s.outside, { recursive: true, force: true });
  });
});
