/**
 * The shape every real-project e2e shares (test/e2e/real-*.test.ts): a published project's files
 * as a fresh git repository with a bare `origin` (real git, scrubbed env), `polly init`, the
 * scripted model server, one `polly run` of a two-task plan, then the human's merge of both PRs
 * with git and `polly pr sync`. Each test owns its project, its plan and its assertions; this owns
 * only the plumbing, so the four real projects (npm, Python, Go, Rust) run the same way.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, realpathSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, gitTestEnv } from './git-repo.js';
import { trackBrains } from './brain-cleanup.js';
import type { Registry, TaskRecord } from '../../brain/registry/registry-schema.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The compiled CLI (`npm run build` first). */
export const POLLY_CLI = join(ROOT, 'dist', 'brain', 'cli.js');

/** A finished command: exit code (null when killed or timed out), stdout, stderr. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command without blocking the event loop (the scripted model server lives in this process). */
export function runAsync(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const raw = error ? (error as NodeJS.ErrnoException).code : 0;
      const code = typeof raw === 'number' ? raw : error ? null : 0;
      done({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

/** `polly ARGS` in `cwd` with `env` added to the scrubbed test env. */
export function polly(args: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Ran> {
  return runAsync(process.execPath, [POLLY_CLI, ...args], cwd, { ...gitTestEnv(), ...env }, timeoutMs);
}

/** The temp root, the working repository and its bare origin of one real-project test. */
export interface RealProjectRepo {
  root: string;
  repo: string;
  origin: string;
  /** The one commit on `main`: the project as published. */
  initialMain: string;
  /** git in the working repository. */
  git(args: string[]): string;
  /** git on the bare origin. */
  originGit(args: string[]): string;
}

/**
 * A temp root with `repo/` (created by `populate`, then committed as one commit on `main`) and a
 * bare `origin.git` it is pushed to. The repository is tracked for stopTrackedBrains.
 * @param prefix  the temp directory's name prefix.
 * @param populate  fills the (existing, empty) repository directory with the project's files.
 */
export async function createRealProjectRepo(prefix: string, populate: (dir: string) => Promise<void>, message: string): Promise<RealProjectRepo> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const repo = join(root, 'repo');
  const origin = join(root, 'origin.git');
  git(root, ['init', '-q', '-b', 'main', repo]);
  trackBrains(repo);
  await populate(repo);
  git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '-m', message]);
  git(repo, ['remote', 'add', 'origin', origin]);
  git(repo, ['push', '-q', '-u', 'origin', 'main']);
  return {
    root,
    repo,
    origin,
    initialMain: git(repo, ['rev-parse', 'HEAD']),
    git: (args) => git(repo, args),
    originGit: (args) => git(root, ['--git-dir', origin, ...args]),
  };
}

/** The repository's registry (.polly/registry.json). */
export function readRegistry(repo: string): Registry {
  return JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry;
}

/** The registry's tasks, sorted by plan key order (their ids end in the key: p1-t1, p1-t2). */
export function registryTasks(repo: string): TaskRecord[] {
  return Object.values(readRegistry(repo).tasks).sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * Processes whose working directory is inside `dir` (read from /proc/<pid>/cwd): what a Brain,
 * worker or check left running there. Each as `pid cmdline`.
 */
export function processesIn(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
      out.push(`${entry} ${readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`);
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** Wait up to `timeoutMs` for no process to run inside `dir`; returns what is still there. */
export async function waitForNoProcessesIn(dir: string, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = processesIn(dir);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Paths of a tree on the origin (`git ls-tree -r --name-only REF`). */
export function originPaths(project: RealProjectRepo, ref: string): string[] {
  return project.originGit(['ls-tree', '-r', '--name-only', ref]).split('\n').filter(Boolean);
}
