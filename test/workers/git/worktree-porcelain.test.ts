import { describe, expect, it } from 'vitest';
import { parseWorktreeListPorcelainZ } from '../../../workers/git/worktree-porcelain.js';

// Captured from git 2.39.5: `git worktree list --porcelain -z` with a main checkout, a locked
// worktree whose path has a space, a branch, a detached HEAD and a deleted (prunable) one.
const CAPTURED =
  'worktree /tmp/cap/r\0HEAD 32847d9b55144d3b1e449530031513e106a06e08\0branch refs/heads/main\0\0' +
  'worktree /tmp/cap/wt 3\0HEAD 32847d9b55144d3b1e449530031513e106a06e08\0branch refs/heads/locked-one\0locked on a usb disk\0\0' +
  'worktree /tmp/cap/wt1\0HEAD 32847d9b55144d3b1e449530031513e106a06e08\0branch refs/heads/feat\0\0' +
  'worktree /tmp/cap/wt2\0HEAD 32847d9b55144d3b1e449530031513e106a06e08\0detached\0\0' +
  'worktree /tmp/cap/wt4\0HEAD 32847d9b55144d3b1e449530031513e106a06e08\0branch refs/heads/gone\0prunable gitdir file points to non-existent location\0\0';

describe('parseWorktreeListPorcelainZ', () => {
  it('parses captured output: paths with spaces, locked with reason, detached, prunable', () => {
    const e = parseWorktreeListPorcelainZ(CAPTURED);
    expect(e.map((x) => x.path)).toEqual(['/tmp/cap/r', '/tmp/cap/wt 3', '/tmp/cap/wt1', '/tmp/cap/wt2', '/tmp/cap/wt4']);
    expect(e[0]).toEqual({
      path: '/tmp/cap/r',
      head: '32847d9b55144d3b1e449530031513e106a06e08',
      branch: 'refs/heads/main',
      bare: false,
      detached: false,
      locked: null,
      prunable: null,
    });
    expect(e[1]?.locked).toBe('on a usb disk');
    expect(e[3]?.detached).toBe(true);
    expect(e[3]?.branch).toBeNull();
    expect(e[4]?.prunable).toBe('gitdir file points to non-existent location');
  });

  it('parses a bare main repository, a lock without reason, and ignores unknown labels', () => {
    const out = 'worktree /srv/r.git\0bare\0\0worktree /w/a\0HEAD abc\0branch refs/heads/a\0locked\0future-label x y\0\0';
    const e = parseWorktreeListPorcelainZ(out);
    expect(e).toHaveLength(2);
    expect(e[0]).toMatchObject({ path: '/srv/r.git', bare: true, head: null, branch: null });
    expect(e[1]).toMatchObject({ path: '/w/a', head: 'abc', locked: '', prunable: null });
  });

  it('accepts output without the final record terminator and rejects attributes before a worktree line', () => {
    expect(parseWorktreeListPorcelainZ('worktree /a\0HEAD 1\0')).toHaveLength(1);
    expect(parseWorktreeListPorcelainZ('')).toEqual([]);
    expect(() => parseWorktreeListPorcelainZ('HEAD 1\0')).toThrow(/before any "worktree"/);
  });
});
