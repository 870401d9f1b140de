/**
 * What Polly does, outside the sandbox, in a directory holding a checkout of a worker's commit (the
 * local forge's CI scratch dir, brain/forge/local-pr-checks.ts): a worker commits symlinks there
 * through Polly's own commit, so `config -> /elsewhere`, `.env -> /elsewhere/file` (dangling) or
 * `package-lock.json -> <a FIFO>` arrive in the scratch dir before Polly copies the
 * `.worktreeinclude` files and compares lockfiles for dependency reuse; and the worker's own
 * worktree, where Polly looks for conflict markers after a base merge.
 *
 * Ground truth: the files outside the scratch dir, and whether Polly's process came back at all
 * (the lockfile read runs in a child process bounded by a timeout: a blocking read of a FIFO would
 * otherwise freeze this test's own event loop). Needs `npm run build` for the child.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { conflictMarkers } from '../../../brain/task-tools/run-acceptance.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { copyWorktreeIncludes } from '../../../workers/git/worktree-include.js';
import { createTestRepo, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
let repo: TestRepo | undefined;
afterEach(() => {
  if (repo) rmSync(repo.root, { recursive: true, force: true });
  repo = undefined;
});

describe('links a worker committed, in a scratch checkout Polly fills', () => {
  it('the .worktreeinclude copy writes nothing through a linked directory or a dangling link', async () => {
    repo = createTestRepo({ 'README.md': '# r\n', '.gitignore': '.env\nconfig/local.json\n', '.worktreeinclude': '.env\nconfig/local.json\n' });
    writeFileSync(join(repo.dir, '.env'), 'API_KEY=user-secret\n');
    mkdirSync(join(repo.dir, 'config'));
    writeFileSync(join(repo.dir, 'config', 'local.json'), '{"user": true}\n');
    const outside = join(repo.root, 'outside');
    mkdirSync(outside);
    const scratch = join(repo.root, 'scratch');
    mkdirSync(scratch);
    symlinkSync(outside, join(scratch, 'config'));
    symlinkSync(join(outside, 'planted.env'), join(scratch, '.env'));

    const r = await copyWorktreeIncludes({ git: createGitRunner({ baseEnv: gitTestEnv() }), repoRoot: repo.dir, worktreePath: scratch });
    expect(readdirSync(outside)).toEqual([]);
    expect(r).toEqual({ copied: [], skippedExisting: ['.env'], refusedLinks: ['config/local.json'] });
  });

  it('dependency reuse does not wait on a FIFO the lockfile links to (Polly comes back at once, reuse refused)', async () => {
    repo = createTestRepo({ 'README.md': '# r\n', 'package-lock.json': '{"lockfileVersion": 3}\n' });
    mkdirSync(join(repo.dir, 'node_modules'));
    writeFileSync(join(repo.dir, 'node_modules', '.package-lock.json'), '{}\n');
    const later = Date.now() / 1000 + 60;
    utimesSync(join(repo.dir, 'node_modules', '.package-lock.json'), later, later);
    const scratch = join(repo.root, 'scratch');
    mkdirSync(scratch);
    execFileSync('mkfifo', [join(repo.root, 'pipe')]);
    symlinkSync(join(repo.root, 'pipe'), join(scratch, 'package-lock.json'));

    const module = join(ROOT, 'dist', 'workers', 'git', 'dependency-reuse.js');
    const code = `import(process.argv[1]).then((m) => m.reuseNodeModules(process.argv[2], process.argv[3])).then((r) => console.log(JSON.stringify(r)))`;
    const out = await new Promise<{ timedOut: boolean; stdout: string }>((done) => {
      execFile(process.execPath, ['-e', code, module, repo!.dir, scratch], { timeout: 15_000, killSignal: 'SIGKILL', encoding: 'utf8' }, (error, stdout) =>
        done({ timedOut: Boolean(error && (error as { killed?: boolean }).killed), stdout }),
      );
    });
    expect(out.timedOut).toBe(false);
    expect(JSON.parse(out.stdout)).toMatchObject({ reused: false, reason: "package-lock.json differs from the main checkout's" });
    expect(existsSync(join(scratch, 'node_modules'))).toBe(false);
  });

  it("the conflict-marker check after a base merge reads no file a worker's link points to", () => {
    repo = createTestRepo();
    const outside = join(repo.root, 'outside.txt');
    writeFileSync(outside, '<<<<<<< secret-looking line\n');
    symlinkSync(outside, join(repo.dir, 'merged.txt'));
    writeFileSync(join(repo.dir, 'real.txt'), 'a\n=======\nb\n');
    expect(conflictMarkers(repo.dir, ['merged.txt', 'real.txt', 'gone.txt'])).toEqual(['real.txt:2: =======']);
  });
});
