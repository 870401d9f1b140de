/**
 * The ref guard, on real repositories with a bare origin. What a worker without a
 * sandbox can do to refs and git metadata is done with plain git; the guard lists exactly that,
 * ignores the task's own branch and Polly's own writes, and puts everything back.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../../workers/git/git.js';
import {
  beginPollyRefWrite,
  createRefGuard,
  describeChanges,
  diffSnapshots,
  localRemotePath,
  NOT_A_FILE,
  persistedPollyRefWrites,
  pollyRefWritesFile,
  recordPollyRefWrite,
  sandboxCouldWrite,
  type RefChange,
} from '../../../workers/git/ref-guard.js';
import { agentSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { appliedMounts, hostWritable } from '../../../workers/sandbox/sandbox-spec.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';

const ISOLATED = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

describe('ref guard', () => {
  it('sees moved, created and deleted refs (local and on a path origin), HEAD and metadata files; restores them; keeps the overwritten values', async () => {
    const repo = createTestRepo({ 'README.md': '# r\n' });
    git(repo.dir, ['tag', 'v1']);
    git(repo.dir, ['branch', 'feature']);
    git(repo.dir, ['push', '-q', 'origin', 'feature', 'v1']);
    const runner = createGitRunner({ env: ISOLATED });
    const wt = await createWorktreeManager({ repoRoot: repo.dir, git: runner }).create({ id: 'g1', baseBranch: 'main' });
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    const before = await guard.snapshot();
    const main0 = before.local['refs/heads/main']!;
    expect(before.remotes).toEqual([expect.objectContaining({ name: 'origin', path: repo.remote, skipped: null })]);
    const config0 = readFileSync(join(repo.dir, '.git', 'config'), 'utf8');

    // The attack, as a worker with plain git would do it from its worktree.
    writeFileSync(join(wt.path, 'x.txt'), 'x\n');
    git(wt.path, ['add', '-A']);
    git(wt.path, ['commit', '-q', '-m', 'worker commit on its own branch']);
    const own = git(wt.path, ['rev-parse', 'HEAD']);
    const evil = git(wt.path, ['commit-tree', `${own}^{tree}`, '-p', main0, '-m', 'evil']);
    git(wt.path, ['update-ref', 'refs/heads/main', evil]);
    git(wt.path, ['update-ref', '-d', 'refs/tags/v1']);
    git(wt.path, ['branch', 'sneaky', evil]);
    git(wt.path, ['push', '-q', '--force', 'origin', `${evil}:refs/heads/main`, ':refs/heads/feature']);
    writeFileSync(join(repo.dir, '.git', 'hooks', 'post-commit'), '#!/bin/sh\necho pwned\n');
    chmodSync(join(repo.dir, '.git', 'hooks', 'post-commit'), 0o755);
    writeFileSync(join(repo.dir, '.git', 'config'), `${config0}[core]\n\tsshCommand = /tmp/evil\n`);
    const gitFile0 = readFileSync(join(wt.path, '.git'), 'utf8');
    writeFileSync(join(wt.path, '.git'), 'gitdir: /tmp/a-git-dir-of-the-workers\n');

    const after = await guard.snapshot(before.remotes);
    const changes = diffSnapshots(before, after, { allowLocal: ['refs/heads/polly/g1'] });
    const names = changes.map((c) => `${c.scope} ${c.kind} ${c.name} ${c.old === null ? 'created' : c.new === null ? 'deleted' : 'changed'}`).sort();
    expect(names).toEqual(
      [
        'local file config changed',
        `local file ${join(wt.path, '.git')} changed`,
        'local file hooks/post-commit created',
        'local ref refs/heads/main changed',
        'local ref refs/heads/sneaky created',
        'local ref refs/tags/v1 deleted',
        'remote:origin ref refs/heads/feature deleted',
        'remote:origin ref refs/heads/main changed',
      ].sort(),
    );
    expect(describeChanges(changes)).toContain(`refs/heads/main changed, ${main0.slice(0, 12)} → ${evil.slice(0, 12)}`);
    expect(describeChanges(changes)).toContain(`origin: refs/heads/feature deleted`);

    const report = await guard.restore(before, changes);
    expect(report.failed).toEqual([]);
    expect(report.restored).toHaveLength(changes.length);
    expect(git(repo.dir, ['rev-parse', 'refs/heads/main'])).toBe(main0);
    expect(git(repo.dir, ['rev-parse', 'refs/tags/v1'])).toBe(before.local['refs/tags/v1']);
    expect(git(repo.dir, ['for-each-ref', 'refs/heads/sneaky'])).toBe('');
    expect(git(repo.remote, ['rev-parse', 'refs/heads/main'])).toBe(main0);
    expect(git(repo.remote, ['rev-parse', 'refs/heads/feature'])).toBe(before.remotes[0]!.refs!['refs/heads/feature']);
    expect(existsSync(join(repo.dir, '.git', 'hooks', 'post-commit'))).toBe(false);
    expect(readFileSync(join(repo.dir, '.git', 'config'), 'utf8')).toBe(config0);
    expect(readFileSync(join(wt.path, '.git'), 'utf8')).toBe(gitFile0);
    // The task's own branch is left as the worker made it; the overwritten values are kept.
    expect(git(repo.dir, ['rev-parse', 'refs/heads/polly/g1'])).toBe(own);
    expect(report.quarantined.length).toBeGreaterThanOrEqual(3);
    expect(git(repo.dir, ['for-each-ref', '--format=%(objectname)', 'refs/polly/quarantine/']).split('\n')).toContain(evil);
    // After restoring, nothing differs from the first snapshot but the allowed branch and the quarantine.
    const again = diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: ['refs/heads/polly/g1'] });
    expect(again.filter((c) => !c.name.startsWith('refs/polly/quarantine/'))).toEqual([]);
  });

  it('follows no symlink a worker planted in the git metadata: reads none, writes through none, restores regular files with their modes', async () => {
    const repo = createTestRepo();
    const runner = createGitRunner({ env: ISOLATED });
    const wt = await createWorktreeManager({ repoRoot: repo.dir, git: runner }).create({ id: 'sl', baseBranch: 'main' });
    const hooks = join(repo.dir, '.git', 'hooks');
    writeFileSync(join(hooks, 'post-commit'), '#!/bin/sh\necho the user hook\n');
    chmodSync(join(hooks, 'post-commit'), 0o755);
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    const before = await guard.snapshot();
    // Files outside the git dir that a worker would have Polly read or overwrite.
    const victim = join(repo.root, 'victim.txt');
    writeFileSync(victim, 'a secret the guard must not read\n');
    const gitFile0 = readFileSync(join(wt.path, '.git'), 'utf8');
    // The attack (as a worker without the sandbox could): the user's hook, a new hook and the
    // worktree's `.git` file become symlinks to the victim.
    rmSync(join(hooks, 'post-commit'));
    symlinkSync(victim, join(hooks, 'post-commit'));
    symlinkSync(victim, join(hooks, 'pre-push'));
    rmSync(join(wt.path, '.git'));
    symlinkSync(victim, join(wt.path, '.git'));

    const after = await guard.snapshot(before.remotes);
    // The victim's content is in no snapshot: a symlink is recorded as one, never read through.
    expect(JSON.stringify(after)).not.toContain(Buffer.from(readFileSync(victim)).toString('base64'));
    expect(after.files['hooks/post-commit']).toBe(`${NOT_A_FILE}symlink`);
    const changes = diffSnapshots(before, after, { allowLocal: ['refs/heads/polly/sl'] });
    expect(changes.map((c) => `${c.name} ${c.old === null ? 'created' : 'changed'}`).sort()).toEqual(
      [`${join(wt.path, '.git')} changed`, 'hooks/post-commit changed', 'hooks/pre-push created'].sort(),
    );
    const report = await guard.restore(before, changes);
    expect(report.failed).toEqual([]);
    // Nothing was written through a link: the victim is as it was; the links are gone.
    expect(readFileSync(victim, 'utf8')).toBe('a secret the guard must not read\n');
    expect(lstatSync(join(hooks, 'post-commit')).isFile()).toBe(true);
    expect(readFileSync(join(hooks, 'post-commit'), 'utf8')).toBe('#!/bin/sh\necho the user hook\n');
    expect(lstatSync(join(hooks, 'post-commit')).mode & 0o777).toBe(0o755);
    expect(existsSync(join(hooks, 'pre-push'))).toBe(false);
    expect(lstatSync(join(wt.path, '.git')).isFile()).toBe(true);
    expect(readFileSync(join(wt.path, '.git'), 'utf8')).toBe(gitFile0);

    // The whole hooks directory swapped for a link to a directory of the worker's.
    const theirs = join(repo.root, 'their-hooks');
    mkdirSync(theirs);
    writeFileSync(join(theirs, 'post-commit'), '#!/bin/sh\necho theirs\n');
    renameSync(hooks, join(repo.root, 'hooks-moved-away'));
    symlinkSync(theirs, hooks);
    const swapped = diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: ['refs/heads/polly/sl'] });
    expect(swapped.map((c) => c.name)).toContain('hooks');
    expect((await guard.restore(before, swapped)).failed).toEqual([]);
    expect(lstatSync(hooks).isDirectory()).toBe(true);
    expect(readFileSync(join(hooks, 'post-commit'), 'utf8')).toBe('#!/bin/sh\necho the user hook\n');
    expect(readFileSync(join(theirs, 'post-commit'), 'utf8')).toBe('#!/bin/sh\necho theirs\n');
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: ['refs/heads/polly/sl'] })).toEqual([]);
  });

  it("counts only what the sandbox could write: the repository's refs, metadata and path remote are read-only in an implementer's sandbox", () => {
    const repo = createTestRepo();
    const commonDir = join(repo.dir, '.git');
    const worktree = join(repo.dir, '.worktrees', 'cw');
    mkdirSync(worktree, { recursive: true });
    const spec = agentSandboxSpec({
      repoRoot: repo.dir,
      cwd: worktree,
      writableCwd: true,
      agentStateDir: join(repo.root, 'state'),
      gateDir: join(repo.root, 'state', 'gate'),
      endpoints: [],
      realHome: join(repo.root, 'home'),
    });
    const mounts = appliedMounts(spec, () => true);
    const before = { commonDir, remotes: [{ name: 'origin', url: repo.remote, path: repo.remote, refs: {}, skipped: null }] };
    const ref = (name: string, scope: RefChange['scope'] = 'local'): RefChange => ({ kind: 'ref', scope, name, old: null, new: 'x' });
    expect(sandboxCouldWrite(mounts, before, ref('refs/heads/main'))).toBe(false);
    expect(sandboxCouldWrite(mounts, before, ref('refs/heads/main', 'remote:origin'))).toBe(false);
    expect(sandboxCouldWrite(mounts, before, { kind: 'file', scope: 'local', name: 'hooks/pre-push', old: null, new: 'x' })).toBe(false);
    expect(sandboxCouldWrite(mounts, before, { kind: 'file', scope: 'local', name: join(worktree, '.git'), old: 'a', new: 'b' })).toBe(false);
    expect(sandboxCouldWrite(mounts, before, { kind: 'head', scope: 'local', name: 'HEAD', old: 'a', new: 'b' })).toBe(false);
    // What it can write: its worktree (not the `.git` file in it); and a git dir made writable is counted.
    expect(hostWritable(mounts, join(worktree, 'src', 'a.ts'))).toBe(true);
    expect(hostWritable(mounts, join(repo.dir, 'README.md'))).toBe(false);
    expect(sandboxCouldWrite([...mounts, { kind: 'rw', path: commonDir }], before, ref('refs/heads/main'))).toBe(true);
    // A network remote was never listed: a change there is never excused.
    expect(sandboxCouldWrite(mounts, { commonDir, remotes: [] }, ref('refs/heads/main', 'remote:gh'))).toBe(true);
  });

  it("does not count Polly's own writes to a sibling task's refs (parallel tasks), but does count a worker's", async () => {
    const repo = createTestRepo();
    const runner = createGitRunner({ env: ISOLATED });
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: runner });
    const a = await manager.create({ id: 'pa', baseBranch: 'main' });
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    const before = await guard.snapshot();
    // Polly, for task pb, while pa's turn runs: a worktree, a commit and a backup ref.
    const b = await manager.create({ id: 'pb', baseBranch: 'main' });
    writeFileSync(join(b.path, 'b.txt'), 'b\n');
    await manager.commitAll({ id: 'pb', message: 'pb\n' });
    await manager.backup({ id: 'pb', reason: 'test' });
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: ['refs/heads/polly/pa'] })).toEqual([]);
    // A worker of pa moves pb's branch to a commit Polly never wrote.
    const forged = git(a.path, ['commit-tree', 'HEAD^{tree}', '-m', 'forged']);
    git(a.path, ['update-ref', 'refs/heads/polly/pb', forged]);
    const changes = diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: ['refs/heads/polly/pa'] });
    expect(changes.map((c) => [c.name, c.new])).toEqual([['refs/heads/polly/pb', forged]]);
    // The ledger is per ref and value: recording a different value does not excuse this one.
    recordPollyRefWrite('local', 'refs/heads/polly/pb', '0'.repeat(40));
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [] }).map((c) => c.name)).toContain('refs/heads/polly/pb');
  });

  it("counts a ref as Polly's while Polly's announced write to it runs, and only the recorded value once it is done", async () => {
    const repo = createTestRepo();
    const runner = createGitRunner({ env: ISOLATED });
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    git(repo.dir, ['branch', 'polly/pc']);
    const before = await guard.snapshot();
    const done = beginPollyRefWrite('local', 'refs/heads/polly/pc');
    // What `git commit` does before Polly knows the commit id: the branch moves.
    const tip = git(repo.dir, ['commit-tree', 'HEAD^{tree}', '-p', 'HEAD', '-m', 'polly commit']);
    git(repo.dir, ['update-ref', 'refs/heads/polly/pc', tip]);
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [] })).toEqual([]);
    done(tip);
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [] })).toEqual([]);
    // Done: another value of the same ref is a change again.
    const forged = git(repo.dir, ['commit-tree', 'HEAD^{tree}', '-m', 'forged']);
    git(repo.dir, ['update-ref', 'refs/heads/polly/pc', forged]);
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [] }).map((c) => [c.name, c.new])).toEqual([['refs/heads/polly/pc', forged]]);
    // A withdrawn announcement excuses nothing.
    beginPollyRefWrite('local', 'refs/heads/polly/pc')(undefined);
    expect(diffSnapshots(before, await guard.snapshot(before.remotes), { allowLocal: [] })).toHaveLength(1);
  });

  it("keeps Polly's ref writes on disk for a Brain that adopts a turn after a crash, and excuses them from a snapshot taken before it", async () => {
    const repo = createTestRepo();
    const since = Date.now();
    // No `.polly/`: nothing is written (Polly never creates its state dir on its own).
    recordPollyRefWrite('local', 'refs/heads/polly/none', '1'.repeat(40), repo.dir);
    expect(existsSync(pollyRefWritesFile(repo.dir))).toBe(false);
    mkdirSync(join(repo.dir, '.polly'));
    recordPollyRefWrite('remote', 'refs/heads/polly/pa', '2'.repeat(40), repo.dir);
    const open = beginPollyRefWrite('local', 'refs/heads/polly/pb', repo.dir);
    beginPollyRefWrite('local', 'refs/heads/polly/pc', repo.dir)(undefined);
    const done = beginPollyRefWrite('local', 'refs/heads/polly/pd', repo.dir);
    done('3'.repeat(40));
    const kept = persistedPollyRefWrites(repo.dir, since).map((w) => [w.scope, w.ref, w.oid]);
    // The announcement a Brain never ended (it was killed) stays pending: any value of its ref is Polly's.
    expect(kept).toEqual([
      ['remote', 'refs/heads/polly/pa', '2'.repeat(40)],
      ['local', 'refs/heads/polly/pb', 'pending'],
      ['local', 'refs/heads/polly/pd', '3'.repeat(40)],
    ]);
    expect(persistedPollyRefWrites(repo.dir, Date.now() + 5000)).toEqual([]);
    open(undefined);

    // What a new process knows only from the file excuses the change, and nothing else does.
    const runner = createGitRunner({ env: ISOLATED });
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    const before = await guard.snapshot();
    const tip = git(repo.dir, ['commit-tree', 'HEAD^{tree}', '-p', 'HEAD', '-m', 'by the killed Brain']);
    git(repo.dir, ['update-ref', 'refs/heads/polly/pe', tip]);
    const after = await guard.snapshot(before.remotes);
    expect(diffSnapshots(before, after, { allowLocal: [] }).map((c) => c.name)).toEqual(['refs/heads/polly/pe']);
    const fromFile = [{ scope: 'local' as const, ref: 'refs/heads/polly/pe', oid: tip, at: Date.now() }];
    expect(diffSnapshots(before, after, { allowLocal: [], pollyWrites: fromFile })).toEqual([]);
  });

  it('lists path remotes and skips network remotes, saying why', () => {
    expect(localRemotePath('/srv/origin.git', '/r')).toBe('/srv/origin.git');
    expect(localRemotePath('../origin.git', '/w/r')).toBe('/w/origin.git');
    expect(localRemotePath('file:///srv/o.git', '/r')).toBe('/srv/o.git');
    expect(localRemotePath('https://github.com/o/r.git', '/r')).toBeNull();
    expect(localRemotePath('git@github.com:o/r.git', '/r')).toBeNull();
    expect(localRemotePath('ssh://git@github.com/o/r.git', '/r')).toBeNull();
  });

  it('costs little per turn on a repository with 1,000 refs (two snapshots and a diff)', async () => {
    const repo = createTestRepo();
    const head = repo.git(['rev-parse', 'HEAD']);
    const lines = Array.from({ length: 1000 }, (_, i) => `create refs/heads/b${String(i).padStart(4, '0')} ${head}`).join('\n');
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['update-ref', '--stdin'], { cwd: repo.dir, input: `${lines}\n`, env: { ...process.env, ...ISOLATED } });
    execFileSync('git', ['push', '-q', 'origin', 'refs/heads/*:refs/heads/*'], { cwd: repo.dir, env: { ...process.env, ...ISOLATED } });
    const real = createGitRunner({ env: ISOLATED });
    let calls = 0;
    const runner: typeof real = {
      ...real,
      run: (args, options) => {
        calls++;
        return real.run(args, options);
      },
    };
    const guard = createRefGuard({ git: runner, repoRoot: repo.dir });
    await guard.snapshot(); // warm
    const times: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < 7; i++) {
      // Baseline in the same run: one git spawn through the same runner.
      const b0 = performance.now();
      await runner.run(['rev-parse', 'HEAD'], { cwd: repo.dir });
      baseline.push(performance.now() - b0);
      const t0 = performance.now();
      const callsBefore = calls;
      const before = await guard.snapshot();
      const after = await guard.snapshot(before.remotes);
      expect(diffSnapshots(before, after)).toEqual([]);
      times.push(performance.now() - t0);
      // Five git calls per turn (remotes, local and origin refs, twice less the cached remotes), whatever the ref count.
      expect(calls - callsBefore).toBeLessThanOrEqual(5);
    }
    expect(Object.keys((await guard.snapshot()).local).length).toBeGreaterThanOrEqual(1001);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    const ratio = median(times) / median(baseline);
    process.stderr.write(
      `ref guard per turn (2 snapshots + diff, 1,000 refs local and on origin): median ${median(times).toFixed(1)} ms of 7; one git spawn (baseline): ${median(baseline).toFixed(1)} ms; ratio ${ratio.toFixed(1)}\n`,
    );
    // The time is a figure, not an assertion (a shared machine's load moves it: 15.01 once at load 4);
    // what bounds the cost is asserted above: a fixed number of git calls per turn, not one per ref.
  });
});
