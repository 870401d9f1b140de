/**
 * The generated repository the dispatch benches work in (`npm run bench -- dispatch`, and its
 * `--host` variant): `files` small TypeScript files in 100-file directories, one commit on `main`,
 * optionally pushed to a bare `origin` (the hosts' mirror key is origin's URL). Git runs with no
 * global or system config ({@link BENCH_GIT_ENV}), so the machine's settings do not change a figure.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Git's environment for the benches: no global or system config (git-config(1) `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_NOSYSTEM`). */
export const BENCH_GIT_ENV = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

/**
 * Make `root/repo` with `files` files (file i: `src/m<i/1000>/d<i/100 mod 10>/f<i>.ts`, two lines,
 * 30–230 bytes), committed on `main`; with `origin`, also a bare `root/origin.git` it is pushed to.
 * @returns the repository's path.
 * @throws when git fails (its stderr in the error).
 */
export function generateBenchRepo(root: string, files: number, options: { origin?: boolean } = {}): string {
  const dir = join(root, 'repo');
  mkdirSync(dir);
  const env = {
    ...process.env,
    ...BENCH_GIT_ENV,
    GIT_AUTHOR_NAME: 'Bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'Bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
  };
  const git = (args: string[], cwd = dir) => execFileSync('git', args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  git(['init', '-q', '-b', 'main']);
  for (let i = 0; i < files; i++) {
    const d = join(dir, 'src', `m${Math.floor(i / 1000)}`, `d${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(d, { recursive: true });
    writeFileSync(join(d, `f${i}.ts`), `export const value${i} = ${i};\n// ${'x'.repeat(i % 200)}\n`);
  }
  git(['add', '-A']);
  git(['commit', '-q', '-m', 'generated']);
  if (options.origin) {
    const origin = join(root, 'origin.git');
    git(['init', '-q', '--bare', '-b', 'main', origin], root);
    git(['remote', 'add', 'origin', origin]);
    git(['push', '-q', 'origin', 'main']);
  }
  return dir;
}
