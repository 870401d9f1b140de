/**
 * Real git repositories for tests: a temp working repo with one commit on `main` and a bare
 * `origin`, with every GIT_* variable scrubbed (tests may run inside a git hook), a fixed identity,
 * no pager, no editor, no prompts, and no system/global config.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** `env` with all GIT_* removed and the test identity and non-interactive settings added. */
export function gitTestEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.startsWith('GIT_')) out[k] = v;
  return {
    ...out,
    GIT_AUTHOR_NAME: 'Polly Test',
    GIT_AUTHOR_EMAIL: 'polly-test@example.invalid',
    GIT_COMMITTER_NAME: 'Polly Test',
    GIT_COMMITTER_EMAIL: 'polly-test@example.invalid',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_EDITOR: 'true',
    GIT_PAGER: 'cat',
  };
}

/** Run git in `cwd` with the test env; returns trimmed stdout; throws with stderr on failure. */
export function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitTestEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export interface TestRepo {
  /** The working repository (realpath). */
  dir: string;
  /** The bare remote, configured as `origin`. */
  remote: string;
  /** Temp root holding both. */
  root: string;
  git(args: string[]): string;
  write(path: string, content: string): void;
  commitAll(message: string): string;
}

/**
 * Create a temp repo with `files` committed on `main`, pushed to a bare `origin`.
 * @param files  relative path → content; defaults to a README.
 */
export function createTestRepo(files: Record<string, string> = { 'README.md': '# test\n' }): TestRepo {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-test-')));
  const dir = join(root, 'repo');
  const remote = join(root, 'origin.git');
  mkdirSync(dir);
  git(root, ['init', '-q', '--bare', '-b', 'main', remote]);
  git(dir, ['init', '-q', '-b', 'main']);
  const repo: TestRepo = {
    dir,
    remote,
    root,
    git: (args) => git(dir, args),
    write(path, content) {
      const full = join(dir, path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, content);
    },
    commitAll(message) {
      git(dir, ['add', '-A']);
      git(dir, ['commit', '-q', '-m', message]);
      return git(dir, ['rev-parse', 'HEAD']);
    },
  };
  for (const [p, c] of Object.entries(files)) repo.write(p, c);
  repo.commitAll('initial');
  git(dir, ['remote', 'add', 'origin', remote]);
  git(dir, ['push', '-q', '-u', 'origin', 'main']);
  return repo;
}

/** A test repository with a submodule over a `file://` path, and the git config that allows it. */
export interface RepoWithSubmodule {
  /** The superproject: `vendor/lib` is a submodule of `lib`, committed on `main` ("add submodule"). */
  repo: TestRepo;
  /** The submodule's own repository (one commit: `lib.txt` = "library\n"). */
  lib: TestRepo;
  /**
   * A global git config file (in `repo.root`) with `protocol.file.allow = always`: git refuses
   * file-path submodules by default since 2.38.1 (CVE-2022-39253, https://git-scm.com/docs/git-config#Documentation/git-config.txt-protocolallow),
   * so a git runner that clones or updates them needs `GIT_CONFIG_GLOBAL` pointing here.
   */
  globalConfig: string;
}

/**
 * Create {@link createTestRepo}'s repository with a populated submodule at `vendor/lib` (a second
 * test repo, added by its local path) committed on `main`.
 */
export function createRepoWithSubmodule(): RepoWithSubmodule {
  const lib = createTestRepo({ 'lib.txt': 'library\n' });
  const repo = createTestRepo();
  const globalConfig = join(repo.root, 'gitconfig');
  writeFileSync(globalConfig, '[protocol "file"]\n\tallow = always\n');
  repo.git(['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib.dir, 'vendor/lib']);
  repo.git(['commit', '-q', '-m', 'add submodule']);
  return { repo, lib, globalConfig };
}
