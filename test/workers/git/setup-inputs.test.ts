// When worktrees.setup runs again in a kept worktree (a retry): its lockfile digests, the reasons
// (command changed, failed, inputs changed, no record), fresh vs in place; and the worktree
// manager's setup() running the command again in the real worktree (real git, the real sandbox).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { setupAgain } from '../../../brain/task-tools/dispatch.js';
import { modelServerHolders } from '../../../brain/process/scripted-model-daemon.js';
import { changedInputs, setupInputs, setupRerunReason, type SetupStamp } from '../../../workers/git/setup-inputs.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo } from '../../helpers/git-repo.js';

describe('worktrees.setup again', () => {
  it('names the reason: command changed, failed, a lockfile added/changed/removed; none when all hold', () => {
    const stamp: SetupStamp = { command: 'npm ci', ok: true, inputs: { 'package-lock.json': 'aa' }, at: '' };
    expect(setupRerunReason(stamp, 'npm ci', { 'package-lock.json': 'aa' })).toBeNull();
    expect(setupRerunReason(stamp, null, {})).toBeNull();
    expect(setupRerunReason(stamp, 'npm install', { 'package-lock.json': 'aa' })).toBe('the command changed since it ran there ("npm ci")');
    expect(setupRerunReason({ ...stamp, ok: false }, 'npm ci', { 'package-lock.json': 'aa' })).toBe('it failed there last time');
    expect(setupRerunReason(stamp, 'npm ci', { 'package-lock.json': 'bb', 'requirements-dev.txt': 'cc' })).toBe(
      'the files it installs from changed: package-lock.json (changed), requirements-dev.txt (added)',
    );
    expect(changedInputs({ 'go.sum': 'x' }, {})).toEqual(['go.sum (removed)']);
    expect(setupRerunReason(null, 'npm ci', {})).toBe('Polly has no record of it having run in this worktree');
  });

  it("the manager's setup() runs the command again in the worktree and reports the lockfiles it read; setupAgain decides fresh or in place", async () => {
    const repo = createTestRepo({ 'package-lock.json': '{"lockfileVersion": 3}\n', 'requirements.txt': 'pytest\n', 'notes.txt': 'x\n' });
    const manager = createWorktreeManager({ repoRoot: repo.dir, setupCommand: 'echo ran >> setup-ran.log' });
    const created = await manager.create({ id: 's1' });
    expect(created.setup).toMatchObject({ exitCode: 0 });
    expect(Object.keys(created.setup!.inputs)).toEqual(['package-lock.json', 'requirements.txt']);
    expect(created.setup!.inputs).toEqual(setupInputs(created.path));
    const stamp: SetupStamp = { command: 'echo ran >> setup-ran.log', ok: true, inputs: created.setup!.inputs, at: '' };
    const task: Parameters<typeof setupAgain>[0] = { worktree: created.path, setup: stamp, retriedFrom: [], sessionId: 's', pr: null };
    expect(setupAgain(task, stamp.command)).toEqual({ action: 'none' });
    // The agent added a dependency: the lockfile changed, the setup runs again in place (the work stays).
    writeFileSync(join(created.path, 'package-lock.json'), '{"lockfileVersion": 3, "packages": {}}\n');
    expect(setupAgain(task, stamp.command)).toEqual({ action: 'rerun', reason: 'the files it installs from changed: package-lock.json (changed)' });
    // Failed with no agent run: a new worktree from the base as it is now.
    expect(setupAgain({ ...task, setup: { ...stamp, ok: false }, sessionId: null }, stamp.command).action).toBe('fresh');
    expect(setupAgain({ ...task, setup: { ...stamp, ok: false } }, stamp.command).action).toBe('rerun');
    const again = await manager.setup({ id: 's1' });
    expect(again).toMatchObject({ exitCode: 0 });
    expect(again!.inputs['package-lock.json']).not.toBe(created.setup!.inputs['package-lock.json']);
    expect(readFileSync(join(created.path, 'setup-ran.log'), 'utf8')).toBe('ran\nran\n');
  }, 60_000);

  it('the scripted model server is held by live attached commands, the live Brain and live running workers only', () => {
    const alive = (p: number) => p !== 13;
    const reg = { brain: { pid: 13 }, workers: { a: { pid: 21, agentPid: 22, state: 'running' }, b: { pid: 31, state: 'exited' }, c: { pid: 13, state: 'running' } } };
    expect(modelServerHolders(reg, [7, 13], alive).sort()).toEqual([21, 22, 7]);
    expect(modelServerHolders(null, [], alive)).toEqual([]);
  });
});
