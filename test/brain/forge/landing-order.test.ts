// Conflict prediction and landing order (issue 29 item 3, first part): three PRs touching one
// file; #1 edits its top and bottom, #2 its top, #3 its bottom. git merge-tree finds #1 conflicting
// with both; `polly pr order` (the real CLI over the real local forge) lands #2 and #3 first and #1
// last, one PR meeting a conflict instead of the two that number order gives. Real git.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { EXACT_LIMIT, landingOrder } from '../../../brain/forge/landing-order.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`);
const edit = (changes: Record<number, string>): string => `${lines.map((l, i) => changes[i + 1] ?? l).join('\n')}\n`;

describe('landing order', () => {
  it('polly pr order lands the PRs with the fewest conflicts and says what each lands after', async () => {
    const repo = createTestRepo({ 'notes.txt': edit({}) });
    mkdirSync(join(repo.dir, '.polly'));
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const forge = createLocalForge({ repoRoot: repo.dir, store, git: createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } }) });
    const branches: Array<[string, Record<number, string>]> = [
      ['polly/both', { 2: 'top by both', 29: 'bottom by both' }],
      ['polly/top', { 2: 'top by top' }],
      ['polly/bottom', { 29: 'bottom by bottom' }],
    ];
    for (const [branch, changes] of branches) {
      const wt = join(repo.root, branch.replace('/', '-'));
      repo.git(['worktree', 'add', '-q', '-b', branch, wt, 'main']);
      writeFileSync(join(wt, 'notes.txt'), edit(changes));
      git(wt, ['commit', '-qam', branch]);
      await forge.openDraftPullRequest({ head: branch, base: 'main', title: `Edit ${branch.slice(6)}`, body: branch });
    }

    const json = runCli(['pr', 'order', '--json'], repo.dir);
    expect(json.code, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout) as { order: number[]; conflicting: number; exact: boolean; pairs: Array<{ a: number; b: number; files: string[] }> };
    expect(out.pairs).toEqual([
      { a: 1, b: 2, files: ['notes.txt'] },
      { a: 1, b: 3, files: ['notes.txt'] },
    ]);
    expect(out).toMatchObject({ order: [2, 3, 1], conflicting: 1, exact: true });

    const human = runCli(['pr', 'order'], repo.dir);
    expect(human.stdout).toContain('Landing order for 3 open PRs: 1 will meet a conflict (the fewest possible)');
    expect(human.stdout).toContain('1. #2 Edit top — lands clean');
    expect(human.stdout).toContain('3. #1 Edit both — after #2, #3: conflicts in notes.txt');
  }, 120_000);

  it('a largest independent set first (exact up to the limit), greedy above it', () => {
    // A star: the centre conflicts with every leaf; number order would make every leaf meet a conflict.
    const star = landingOrder(
      [1, 2, 3, 4, 5],
      [2, 3, 4, 5].map((b) => ({ a: 1, b, files: ['x'] })),
    );
    expect(star).toMatchObject({ order: [2, 3, 4, 5, 1], conflicts: 1, exact: true, after: { 1: [2, 3, 4, 5], 2: [] } });
    // A path 1-2-3-4: {1, 3} or {1, 4} or {2, 4}; the first by number wins.
    expect(
      landingOrder(
        [4, 3, 2, 1],
        [
          { a: 1, b: 2, files: [] },
          { a: 2, b: 3, files: [] },
          { a: 3, b: 4, files: [] },
        ],
      ).order,
    ).toEqual([1, 3, 2, 4]);
    const many = Array.from({ length: EXACT_LIMIT + 4 }, (_, i) => i + 1);
    const big = landingOrder(many, [{ a: 1, b: 2, files: [] }]);
    expect(big).toMatchObject({ conflicts: 1, exact: false });
    expect(big.order.at(-1)).toBe(2);
  });
});
