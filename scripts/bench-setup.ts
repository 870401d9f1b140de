/**
 * `npm run bench -- setup [--rounds R]`: worktree setup time and disk for an npm fixture, before
 * and after the cheap setup, measured in the same run (issue 17, item 7).
 *
 * The fixture is an npm package whose dependencies are some of Polly's own (so npm's cache has
 * them), with a package-lock.json; the main checkout has run `npm ci`.
 * - before: `WorktreeManager.create()` with setup `npm ci` (the README's old example) and no reuse;
 * - after:  the same with the setup `polly init` writes for it (`npm ci --prefer-offline
 *   --no-audit --no-fund`) and dependency reuse on (node_modules copied with `cp --reflink=auto`
 *   from the main checkout when package-lock.json is identical; the install is then skipped).
 * Each: median wall time of `create()` over R rounds (default 3), `du -sk` of the worktree's
 * node_modules and the file system's used-blocks delta (`df`: what a copy-on-write copy really costs).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectProject } from '../brain/config/project-detection.js';
import { createWorktreeManager } from '../workers/git/worktree-manager.js';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 3;
const DEPENDENCIES = { '@octokit/rest': '22.0.1', execa: '9.6.0', 'simple-git': '4.0.2', yaml: '2.9.1', zod: '3.25.76', '@modelcontextprotocol/sdk': '1.32.2' };
const env = { ...process.env, GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.invalid', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.invalid' };

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
const usedKb = (dir: string) => Number(sh('df', ['-Pk', dir], dir).trim().split('\n')[1]!.split(/\s+/)[2]);
const duKb = (dir: string) => Number(sh('du', ['-sk', dir], dir).split(/\s+/)[0]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(repo: string, label: string, setupCommand: string, reuseDependencies: boolean): Promise<{ ms: number; duKb: number; dfKb: number }> {
  const times: number[] = [];
  const du: number[] = [];
  const df: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const manager = createWorktreeManager({ repoRoot: repo, setupCommand, reuseDependencies });
    const id = `${label}-${i}`;
    const before = usedKb(repo);
    const t0 = performance.now();
    const created = await manager.create({ id });
    times.push(performance.now() - t0);
    if (created.setup?.exitCode !== 0) throw new Error(`${label}: setup failed: ${created.setup?.output}`);
    sh('sync', [], repo);
    df.push(usedKb(repo) - before);
    du.push(duKb(join(created.path, 'node_modules')));
    process.stderr.write(`  ${label} round ${i + 1}: ${Math.round(times[i]!)} ms, node_modules ${du[i]} KiB, df +${df[i]} KiB\n`);
  }
  return { ms: median(times), duKb: median(du), dfKb: median(df) };
}

async function main(): Promise<void> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-bench-setup-')));
  const repo = join(root, 'repo');
  try {
    sh('mkdir', ['-p', repo], root);
    writeFileSync(
      join(repo, 'package.json'),
      `${JSON.stringify({ name: 'bench-npm-fixture', version: '1.0.0', private: true, scripts: { test: 'node -e 0' }, dependencies: DEPENDENCIES }, null, 2)}\n`,
    );
    writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
    sh('npm', ['install', '--package-lock-only', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], repo);
    sh('git', ['init', '-q', '-b', 'main'], repo);
    sh('git', ['add', '-A'], repo);
    sh('git', ['commit', '-q', '-m', 'fixture'], repo);
    sh('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], repo);
    const detected = detectProject(repo).setup!;
    process.stdout.write(
      `npm fixture: ${Object.keys(DEPENDENCIES).length} dependencies, main checkout node_modules ${duKb(join(repo, 'node_modules'))} KiB; ${rounds} round(s) each; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    const before = await measure(repo, 'before', 'npm ci', false);
    const after = await measure(repo, 'after', detected, true);
    const row = (name: string, m: { ms: number; duKb: number; dfKb: number }) =>
      `  ${name.padEnd(7)} ${String(Math.round(m.ms)).padStart(7)} ms  node_modules ${String(m.duKb).padStart(7)} KiB  df +${String(m.dfKb).padStart(7)} KiB`;
    process.stdout.write(`${row('before', before)}   (setup "npm ci", no reuse)\n${row('after', after)}   (setup "${detected}", node_modules reused)\n`);
    process.stdout.write(
      `  ratio after/before: time ${(after.ms / before.ms).toFixed(3)}, du ${(after.duKb / before.duKb).toFixed(3)}, df ${before.dfKb > 0 ? (after.dfKb / before.dfKb).toFixed(3) : 'n/a'}\n`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench setup failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
