// Git as the transport of a remote turn (workers/hosts/worktree-transfer.ts) against real git: a
// local worktree's state (edits, untracked, deleted, binary and executable files; ignored files
// left out) becomes one commit without touching the worktree's index, HEAD or refs; it is pushed to
// a bare mirror (the host's), checked out in a worktree of the mirror, changed there, its state
// committed and fetched back, and only its file differences are applied here. A worktree changed
// here meanwhile refuses the host's result and keeps its files.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { createGitRunner, type GitRunner } from '../../../workers/git/git.js';
import { applyStateDiff, checkState, repoKeyFor, worktreeStateCommit } from '../../../workers/hosts/worktree-transfer.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';

const BINARY = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13, 0x89, 0x50, 0x4e, 0x47]);

/** A repository with committed files, then local changes of every kind, and a bare mirror of it (the host's). */
function arrange() {
  const repo = createTestRepo({ 'README.md': '# r\n', 'src/a.js': 'export const a = 1;\n', 'src/gone.js': 'x\n', '.gitignore': 'node_modules/\n' });
  // The local worktree's uncommitted state.
  repo.write('src/a.js', 'export const a = 2;\n');
  repo.write('src/new.js', 'export const n = 1;\n');
  unlinkSync(join(repo.dir, 'src/gone.js'));
  writeFileSync(join(repo.dir, 'logo.bin'), BINARY);
  repo.write('node_modules/dep/index.js', 'ignored\n');
  const mirror = join(repo.root, 'host', 'mirror.git');
  mkdirSync(join(repo.root, 'host'), { recursive: true });
  git(repo.root, ['init', '-q', '--bare', mirror]);
  return { repo, mirror };
}

/**
 * A turn's round trip up to the fetch: the worktree's state is sent to the mirror, the "host"
 * changes src/a.js in its own worktree of it, and its state commit waits at refs/polly/out/w1.
 */
async function hostChangedA(g: GitRunner, repo: { dir: string; root: string }, mirror: string) {
  const sent = await worktreeStateCommit(g, repo.dir, 'task t1');
  git(repo.dir, ['push', '-q', mirror, `${sent.commit}:refs/polly/in/w1`]);
  const hostWt = join(repo.root, 'host', 'wt');
  git(mirror, ['worktree', 'add', '-q', '--detach', hostWt, 'refs/polly/in/w1']);
  writeFileSync(join(hostWt, 'src/a.js'), 'from the host\n');
  const back = await worktreeStateCommit(g, hostWt, 'host');
  git(mirror, ['update-ref', 'refs/polly/out/w1', back.commit]);
  return { sent, back };
}

describe('worktree transfer over git', () => {
  const g = createGitRunner();

  it("a state commit holds the worktree's files (not ignored ones) on its HEAD, is the same every time, and leaves index, HEAD and refs alone", async () => {
    const { repo } = arrange();
    git(repo.dir, ['add', 'src/new.js']); // a staged file stays staged, as it was
    const before = { status: git(repo.dir, ['status', '--porcelain']), refs: git(repo.dir, ['for-each-ref']), head: git(repo.dir, ['rev-parse', 'HEAD']) };
    const state = await worktreeStateCommit(g, repo.dir, 'task t1');
    expect(state.head).toBe(before.head);
    expect(git(repo.dir, ['rev-parse', `${state.commit}^`])).toBe(before.head);
    const files = git(repo.dir, ['ls-tree', '-r', '--name-only', state.commit]).split('\n').sort();
    expect(files).toEqual(['.gitignore', 'README.md', 'logo.bin', 'src/a.js', 'src/new.js']);
    expect(git(repo.dir, ['show', `${state.commit}:src/a.js`])).toBe('export const a = 2;');
    expect({ status: git(repo.dir, ['status', '--porcelain']), refs: git(repo.dir, ['for-each-ref']), head: git(repo.dir, ['rev-parse', 'HEAD']) }).toEqual(before);
    // Fixed identity and time: the same state is the same commit (on any machine).
    expect((await worktreeStateCommit(g, repo.dir, 'task t1')).commit).toBe(state.commit);
  });

  it("pushed to a bare mirror, changed in the mirror's worktree and fetched back, only the files come back", async () => {
    const { repo, mirror } = arrange();
    const sent = await worktreeStateCommit(g, repo.dir, 'task t1');
    // Send: push the state commit to the mirror under refs/polly/in/<worker>.
    git(repo.dir, ['push', '-q', mirror, `${sent.commit}:refs/polly/in/w1`]);
    // On the host: a worktree of the mirror at that state; the agent's work there.
    const hostWt = join(repo.root, 'host', 'worktrees', 't1');
    git(mirror, ['worktree', 'add', '-q', '--detach', hostWt, 'refs/polly/in/w1']);
    expect(readFileSync(join(hostWt, 'logo.bin'))).toEqual(BINARY);
    expect(existsSync(join(hostWt, 'src/gone.js'))).toBe(false);
    writeFileSync(join(hostWt, 'src/a.js'), 'export const a = 3;\n');
    writeFileSync(join(hostWt, 'src/run.sh'), '#!/bin/sh\necho hi\n');
    chmodSync(join(hostWt, 'src/run.sh'), 0o755);
    unlinkSync(join(hostWt, 'src/new.js'));
    writeFileSync(join(hostWt, 'logo.bin'), Buffer.concat([BINARY, BINARY]));
    mkdirSync(join(hostWt, 'node_modules'), { recursive: true });
    writeFileSync(join(hostWt, 'node_modules', 'x.js'), 'ignored on the host too\n');
    const back = await worktreeStateCommit(g, hostWt, 'host state of w1');
    git(mirror, ['update-ref', 'refs/polly/out/w1', back.commit]);
    // Fetch back into FETCH_HEAD only: no ref of the host lands here.
    const refsBefore = git(repo.dir, ['for-each-ref']);
    git(repo.dir, ['fetch', '-q', mirror, 'refs/polly/out/w1']);
    const fetched = git(repo.dir, ['rev-parse', 'FETCH_HEAD']);
    expect(fetched).toBe(back.commit);
    const changed = await applyStateDiff(g, repo.dir, sent, fetched);
    expect(changed.sort()).toEqual(['logo.bin', 'src/a.js', 'src/new.js', 'src/run.sh']);
    expect(readFileSync(join(repo.dir, 'src/a.js'), 'utf8')).toBe('export const a = 3;\n');
    expect(readFileSync(join(repo.dir, 'logo.bin'))).toEqual(Buffer.concat([BINARY, BINARY]));
    expect(existsSync(join(repo.dir, 'src/new.js'))).toBe(false);
    expect(statSync(join(repo.dir, 'src/run.sh')).mode & 0o111).not.toBe(0);
    expect(existsSync(join(repo.dir, 'node_modules', 'x.js'))).toBe(false);
    expect(existsSync(join(repo.dir, 'node_modules', 'dep', 'index.js'))).toBe(true);
    // The local worktree now holds exactly the host's state; HEAD and refs are where they were.
    const after = await worktreeStateCommit(g, repo.dir, 'after');
    expect(after.tree).toBe(back.tree);
    expect(git(repo.dir, ['for-each-ref'])).toBe(refsBefore);
    expect(git(repo.dir, ['rev-parse', 'HEAD'])).toBe(sent.head);
    // A turn that changed nothing: an empty difference, nothing applied.
    expect(await applyStateDiff(g, repo.dir, after, after.commit)).toEqual([]);
  });

  it('a worktree changed here while the turn ran refuses the host result (conflict) and keeps its files', async () => {
    const { repo, mirror } = arrange();
    const { sent, back } = await hostChangedA(g, repo, mirror);
    git(repo.dir, ['fetch', '-q', mirror, 'refs/polly/out/w1']);
    repo.write('src/a.js', 'changed here meanwhile\n');
    let error: unknown;
    try {
      await applyStateDiff(g, repo.dir, sent, back.commit);
    } catch (e) {
      error = e;
    }
    expect(isPollyError(error, 'conflict'), String(error)).toBe(true);
    expect((error as Error).message).toContain(repo.dir);
    expect(readFileSync(join(repo.dir, 'src/a.js'), 'utf8')).toBe('changed here meanwhile\n');
  });

  it('the check taken while the state came back (checkState) decides: the same state applies, a change made before it refuses', async () => {
    const { repo, mirror } = arrange();
    const { sent, back } = await hostChangedA(g, repo, mirror);
    const [, current] = await Promise.all([Promise.resolve(git(repo.dir, ['fetch', '-q', mirror, 'refs/polly/out/w1'])), checkState(g, repo.dir)]);
    expect({ tree: current.tree, head: current.head }).toEqual({ tree: sent.tree, head: sent.head });
    expect(await applyStateDiff(g, repo.dir, sent, back.commit, current)).toEqual(['src/a.js']);
    expect(readFileSync(join(repo.dir, 'src/a.js'), 'utf8')).toBe('from the host\n');
    // A second worktree state, changed here before its check: refused with what it holds kept.
    const again = await worktreeStateCommit(g, repo.dir, 'task t1 again');
    repo.write('src/new.js', 'changed here meanwhile\n');
    const changed = await checkState(g, repo.dir);
    let error: unknown;
    try {
      await applyStateDiff(g, repo.dir, again, sent.commit, changed);
    } catch (e) {
      error = e;
    }
    expect(isPollyError(error, 'conflict'), String(error)).toBe(true);
    expect(readFileSync(join(repo.dir, 'src/new.js'), 'utf8')).toBe('changed here meanwhile\n');
  });

  it('one mirror key for the clones of one origin, whatever credentials the URL carries; a repository without origin is keyed by its path', async () => {
    const { repo } = arrange();
    const clone = join(repo.root, 'clone');
    git(repo.root, ['clone', '-q', repo.remote, clone]);
    expect(await repoKeyFor(g, clone)).toBe(await repoKeyFor(g, repo.dir));
    git(repo.dir, ['remote', 'set-url', 'origin', 'https://alice:s3cret@forge.example/acme/app.git']);
    git(clone, ['remote', 'set-url', 'origin', 'https://forge.example/acme/app.git']);
    expect(await repoKeyFor(g, repo.dir)).toBe(await repoKeyFor(g, clone));
    expect(await repoKeyFor(g, repo.dir)).toMatch(/^[0-9a-f]{16}$/);
    git(clone, ['remote', 'remove', 'origin']);
    expect(await repoKeyFor(g, clone)).not.toBe(await repoKeyFor(g, repo.dir));
  });
});
