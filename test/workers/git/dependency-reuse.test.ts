// Cheap npm setup: the main checkout's node_modules is copied into a new worktree only when the
// lockfiles are identical and npm installed it; an install-only setup is then skipped. Real git,
// the real worktree manager, a node_modules tree on disk.
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isNpmInstallOnly, reuseNodeModules } from '../../../workers/git/dependency-reuse.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo } from '../../helpers/git-repo.js';

const LOCK = `${JSON.stringify({ name: 't', lockfileVersion: 3, packages: { '': { name: 't' } } })}\n`;

function installedRepo() {
  const repo = createTestRepo({ 'package.json': '{"name":"t"}\n', 'package-lock.json': LOCK, '.gitignore': 'node_modules/\n' });
  mkdirSync(join(repo.dir, 'node_modules/dep'), { recursive: true });
  writeFileSync(join(repo.dir, 'node_modules/dep/index.js'), 'module.exports = 1;\n');
  writeFileSync(join(repo.dir, 'node_modules/.package-lock.json'), LOCK);
  return repo;
}

describe('dependency reuse', () => {
  it('recognises install-only setup commands', () => {
    expect(isNpmInstallOnly('npm ci')).toBe(true);
    expect(isNpmInstallOnly('npm ci --prefer-offline --no-audit --no-fund')).toBe(true);
    expect(isNpmInstallOnly('npm install --no-package-lock --prefer-offline')).toBe(true);
    expect(isNpmInstallOnly('npm ci && npm run build')).toBe(false);
    expect(isNpmInstallOnly('pnpm install --frozen-lockfile')).toBe(false);
  });

  it('a worktree with the same lockfile gets a copy (not a link) of node_modules and the npm ci is skipped', async () => {
    const repo = installedRepo();
    const manager = createWorktreeManager({ repoRoot: repo.dir, setupCommand: 'npm ci --prefer-offline' });
    const created = await manager.create({ id: 'reuse1' });
    expect(created.setup).toMatchObject({ exitCode: 0 });
    expect(created.setup!.output).toContain('"npm ci --prefer-offline" skipped');
    expect(readFileSync(join(created.path, 'node_modules/dep/index.js'), 'utf8')).toBe('module.exports = 1;\n');
    writeFileSync(join(created.path, 'node_modules/dep/index.js'), 'edited by a worker\n');
    expect(readFileSync(join(repo.dir, 'node_modules/dep/index.js'), 'utf8')).toBe('module.exports = 1;\n');
    expect(readFileSync(created.setup!.logPath, 'utf8')).toContain('node_modules copied from');
  });

  it('no copy when the lockfile differs, npm did not install it, or it is older than the lockfile', async () => {
    const repo = installedRepo();
    const wt = join(repo.root, 'wt');
    mkdirSync(wt);
    writeFileSync(join(wt, 'package-lock.json'), LOCK.replace('"t"', '"u"'));
    expect(await reuseNodeModules(repo.dir, wt)).toMatchObject({ reused: false, reason: "package-lock.json differs from the main checkout's" });
    writeFileSync(join(wt, 'package-lock.json'), LOCK);
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(repo.dir, 'node_modules/.package-lock.json'), old, old);
    expect((await reuseNodeModules(repo.dir, wt)).reason).toContain('older than its package-lock.json');
    expect(existsSync(join(wt, 'node_modules'))).toBe(false);
    expect(await reuseNodeModules(repo.dir, repo.root)).toMatchObject({ reused: false });
  });
});
