/**
 * The checkout read-only work runs in (workers/git/base-checkout.ts): explore and search workers
 * and polly doctor's probes see the tracked tree at a commit, with a git read view, and never the
 * main checkout's untracked or uncommitted files. Real git; the sandbox part needs bubblewrap.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BASE_CHECKOUT_PREFIX, withBaseCheckout } from '../../../workers/git/base-checkout.js';
import { commandSandbox } from '../../../workers/sandbox/command-sandbox.js';
import { confineCommand } from '../../../workers/sandbox/sandbox.js';
import { createTestRepo, git } from '../../helpers/git-repo.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

describe('withBaseCheckout', () => {
  it('checks out the tracked tree at the commit, detached, and removes it after; no ref moves', async () => {
    const repo = createTestRepo({ 'README.md': '# committed\n', 'src/a.ts': 'export const a = 1;\n' });
    writeFileSync(join(repo.dir, '.env'), 'API_KEY=canary-untracked\n');
    writeFileSync(join(repo.dir, 'README.md'), '# committed\ncanary-uncommitted\n');
    const refs = git(repo.dir, ['for-each-ref']);
    const worktreesDir = join(repo.dir, '.worktrees');
    let seen: { path: string; commit: string; files: string[]; readme: string; head: string } | null = null;
    await withBaseCheckout({ repoRoot: repo.dir, worktreesDir, label: 't9', rev: 'HEAD' }, async ({ path, commit }) => {
      seen = { path, commit, files: git(path, ['ls-files']).split('\n'), readme: readFileSync(join(path, 'README.md'), 'utf8'), head: git(path, ['rev-parse', 'HEAD']) };
      expect(existsSync(join(path, '.env'))).toBe(false);
      expect(git(path, ['status', '--porcelain'])).toBe('');
      expect(git(path, ['rev-parse', '--abbrev-ref', 'HEAD'])).toBe('HEAD');
    });
    expect(seen).not.toBeNull();
    const s = seen as unknown as { path: string; commit: string; files: string[]; readme: string; head: string };
    expect(s.path.startsWith(join(worktreesDir, `${BASE_CHECKOUT_PREFIX}t9-`))).toBe(true);
    expect(s.files.sort()).toEqual(['README.md', 'src/a.ts']);
    expect(s.readme).toBe('# committed\n');
    expect(s.head).toBe(git(repo.dir, ['rev-parse', 'HEAD']));
    expect(existsSync(s.path)).toBe(false);
    expect(
      git(repo.dir, ['worktree', 'list', '--porcelain'])
        .split('\n')
        .filter((l) => l.startsWith('worktree ')),
    ).toHaveLength(1);
    expect(git(repo.dir, ['for-each-ref'])).toBe(refs);
  });

  it('removes a stale leftover of the same label first, and refuses a rev that names no commit', async () => {
    const repo = createTestRepo();
    const worktreesDir = join(repo.dir, '.worktrees');
    const stale = join(worktreesDir, `${BASE_CHECKOUT_PREFIX}doctor-dead`);
    mkdirSync(stale, { recursive: true });
    utimesSync(stale, new Date(0), new Date(0));
    await withBaseCheckout({ repoRoot: repo.dir, worktreesDir, label: 'doctor', rev: 'HEAD' }, async () => undefined);
    expect(existsSync(stale)).toBe(false);
    await expect(withBaseCheckout({ repoRoot: repo.dir, worktreesDir, label: 'doctor', rev: 'no-such-branch' }, async () => undefined)).rejects.toThrow(
      /"no-such-branch" names no commit/,
    );
  });

  it.skipIf(!SANDBOXED)("in the checks' sandbox the checkout gets the git read view: git works, the main checkout's files are absent", async () => {
    const repo = createTestRepo({ 'README.md': '# committed\n' });
    writeFileSync(join(repo.dir, '.env'), 'API_KEY=canary-untracked\n');
    writeFileSync(join(repo.dir, 'README.md'), '# committed\ncanary-uncommitted\n');
    const out = await withBaseCheckout({ repoRoot: repo.dir, worktreesDir: join(repo.dir, '.worktrees'), label: 'probe', rev: 'HEAD' }, async ({ path }) => {
      const box = await commandSandbox({ repoRoot: repo.dir, worktree: path, network: false, allowUnconfined: false, stateDir: join(repo.root, 'cmd-state') });
      if (!box.sandbox) throw new Error('no sandbox');
      const c = confineCommand(
        box.sandbox.bwrap,
        box.sandbox.spec,
        'sh',
        ['-c', `cat '${repo.dir}/.env' '${repo.dir}/README.md' README.md; git log --format=%s; git for-each-ref; git stash list`],
        box.env,
      );
      return new Promise<string>((done) => {
        const child = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.stderr.on('data', (d: Buffer) => (text += d.toString()));
        child.on('close', () => {
          c.dispose();
          done(text);
        });
      });
    });
    expect(out).toContain('# committed');
    expect(out).toContain('initial');
    expect(out).not.toContain('canary-');
  });
});
