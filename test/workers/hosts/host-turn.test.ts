// The host's layout by clone (workers/hosts/host-turn.ts) against real git: two clones of one
// origin push their state into one mirror and each gets its own repository (objects borrowed from
// the mirror) and its own worktree of a task of the same id, both on `polly/<task>` at once;
// `removeHostWorktree` removes one clone's worktree and agent state after a backup and leaves the
// other's; a worktree of the layout before clones were keyed goes too, after its backup in the
// mirror, unless a turn still holds its old lock.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../../workers/git/git.js';
import {
  ensureCloneRepo,
  ensureMirror,
  hostTaskPaths,
  prepareHostWorktree,
  removeHostWorktree,
  runHostTurn,
  type HostTurnLine,
  type HostTurnRequest,
} from '../../../workers/hosts/host-turn.js';
import { worktreeStateCommit } from '../../../workers/hosts/worktree-transfer.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';

const KEY = '0123456789abcdef';
const TASK = 'p1-t1';
const CLONES = ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'] as const;

/** A host directory with one mirror, and two clones of one origin, each with its own uncommitted work on the same base. */
function arrange(): { root: string; origin: TestRepo; clones: string[] } {
  const origin = createTestRepo({ 'README.md': '# r\n' });
  const root = join(origin.root, 'host');
  mkdirSync(root, { recursive: true });
  const clones = CLONES.map((_, i) => {
    const dir = join(origin.root, `clone-${i}`);
    git(origin.root, ['clone', '-q', origin.dir, dir]);
    writeFileSync(join(dir, `work-${i}.txt`), `clone ${i}'s work\n`);
    return dir;
  });
  return { root, origin, clones };
}

/** What the dispatcher of `clone` does before a turn: its state commit, pushed into the mirror under its own ref. */
async function send(root: string, cloneDir: string, clone: string): Promise<string> {
  const g = createGitRunner();
  const mirror = await ensureMirror(g, root, KEY);
  const state = await worktreeStateCommit(g, cloneDir, 'test');
  git(cloneDir, ['push', '-q', mirror, `${state.commit}:refs/polly/in/${clone}/w1`]);
  return state.commit;
}

describe("the host's layout by clone", () => {
  const g = createGitRunner();

  it('two clones get two worktrees of task p1-t1, both on polly/p1-t1 of their own repository, each with its own files', async () => {
    const { root, clones } = arrange();
    for (const [i, clone] of CLONES.entries()) {
      const snapshot = await send(root, clones[i]!, clone);
      const paths = hostTaskPaths(root, KEY, clone, TASK);
      await ensureCloneRepo(g, paths.cloneRepo, paths.mirror);
      const { worktree, created } = await prepareHostWorktree(g, paths, { branch: `polly/${TASK}`, baseBranch: 'main', baseCommit: null, snapshot });
      expect(created).toBe(true);
      expect(worktree).toBe(join(root, 'worktrees', KEY, clone, TASK));
      expect(git(worktree, ['rev-parse', '--abbrev-ref', 'HEAD'])).toBe(`polly/${TASK}`);
    }
    for (const [i, clone] of CLONES.entries()) {
      const wt = hostTaskPaths(root, KEY, clone, TASK).worktree;
      expect(readFileSync(join(wt, `work-${i}.txt`), 'utf8')).toBe(`clone ${i}'s work\n`);
      expect(existsSync(join(wt, `work-${1 - i}.txt`))).toBe(false);
    }
    // Each clone's repository borrows the mirror's objects (the pushed states are there).
    const alternates = readFileSync(join(root, 'clones', KEY, CLONES[0], '.git', 'objects', 'info', 'alternates'), 'utf8');
    expect(alternates.trim()).toBe(join(root, 'repos', KEY, '.git', 'objects'));
  });

  it("removing one clone's task keeps its files in a backup ref of its repository and leaves the other clone's worktree and agent state", async () => {
    const { root, clones } = arrange();
    for (const [i, clone] of CLONES.entries()) {
      const paths = hostTaskPaths(root, KEY, clone, TASK);
      await ensureCloneRepo(g, paths.cloneRepo, paths.mirror);
      await prepareHostWorktree(g, paths, { branch: `polly/${TASK}`, baseBranch: null, baseCommit: null, snapshot: await send(root, clones[i]!, clone) });
      mkdirSync(join(paths.agents, 'claude-code'), { recursive: true });
      writeFileSync(join(paths.agents, 'claude-code', 'session.jsonl'), `{"clone":${i}}\n`);
    }
    const removed = await removeHostWorktree(root, KEY, CLONES[0], TASK);
    expect(removed.backupRef).toMatch(new RegExp(`^refs/polly/backup/${TASK}/`));
    expect(removed.legacyBackupRef).toBeNull();
    const [a, b] = CLONES.map((c) => hostTaskPaths(root, KEY, c, TASK));
    expect(existsSync(a!.worktree)).toBe(false);
    expect(existsSync(a!.agents)).toBe(false);
    expect(git(a!.cloneRepo, ['show', `${removed.backupRef}:work-0.txt`])).toBe("clone 0's work");
    expect(readFileSync(join(b!.worktree, 'work-1.txt'), 'utf8')).toBe("clone 1's work\n");
    expect(readFileSync(join(b!.agents, 'claude-code', 'session.jsonl'), 'utf8')).toBe('{"clone":1}\n');
    // Again: nothing there any more, nothing to do.
    expect(await removeHostWorktree(root, KEY, CLONES[0], TASK)).toEqual({ backupRef: null, legacyBackupRef: null, legacyKept: null });
  });

  it('a worktree of the old layout (worktrees/<key>/<task>, of the mirror) is removed after its backup in the mirror, unless a turn holds its old lock', async () => {
    const { root, clones } = arrange();
    const snapshot = await send(root, clones[0]!, CLONES[0]);
    const mirror = join(root, 'repos', KEY);
    const legacy = join(root, 'worktrees', KEY, TASK);
    const legacyAgents = join(root, 'agents', KEY, TASK, 'claude-code');
    // What the old layout made: a worktree of the mirror itself, and the task's agent state.
    git(mirror, ['worktree', 'add', '-q', '-f', '-B', `polly/${TASK}`, legacy, `${snapshot}^1`]);
    git(legacy, ['read-tree', '-u', '--reset', snapshot]);
    mkdirSync(legacyAgents, { recursive: true });
    writeFileSync(join(legacyAgents, 'session.jsonl'), '{}\n');
    // A turn of the old layout still runs there (this process holds its lock): kept.
    mkdirSync(join(root, 'locks'), { recursive: true });
    writeFileSync(join(root, 'locks', `${KEY}-${TASK}`), `${process.pid}\n`);
    const kept = await removeHostWorktree(root, KEY, CLONES[1], TASK);
    expect(kept.legacyBackupRef).toBeNull();
    expect(kept.legacyKept).toContain(`pid ${process.pid}`);
    expect(existsSync(join(legacy, 'work-0.txt'))).toBe(true);
    // The turn ended (its lock names a dead pid): the next cleanup of the task removes it, files kept.
    writeFileSync(join(root, 'locks', `${KEY}-${TASK}`), '999999999\n');
    const removed = await removeHostWorktree(root, KEY, CLONES[1], TASK);
    expect(removed.backupRef).toBeNull();
    expect(removed.legacyKept).toBeNull();
    expect(removed.legacyBackupRef).toMatch(new RegExp(`^refs/polly/backup/${TASK}/`));
    expect(git(mirror, ['show', `${removed.legacyBackupRef}:work-0.txt`])).toBe("clone 0's work");
    expect(existsSync(legacy)).toBe(false);
    expect(existsSync(join(root, 'agents', KEY, TASK))).toBe(false);
  });

  it('a turn whose request names no clone key (a dispatcher of another build) is refused, and nothing is made on the host', async () => {
    const { root } = arrange();
    const lines: HostTurnLine[] = [];
    const request = { build: 'x', repoKey: KEY, taskId: TASK, workerId: 'w1', capacity: 1, leaseMs: 10_000, heartbeatMs: 1000 } as unknown as HostTurnRequest;
    const code = await runHostTurn(request, createInterface({ input: Readable.from([]) }), (l) => lines.push(l), { dir: root });
    expect(code).toBe(2);
    expect(lines.at(-1)).toMatchObject({ t: 'refused', message: expect.stringContaining('clone null') });
    expect(existsSync(join(root, 'worktrees'))).toBe(false);
    expect(existsSync(join(root, 'slots'))).toBe(false);
  });
});
