/**
 * One published project through `polly run` as a user would take it, for the real-project e2e
 * tests (test/e2e/e2e-real-go.test.ts, e2e-real-rust.test.ts): its sources as a fresh git
 * repository with a bare origin (real git, scrubbed GIT_* env), its own tests run once on the
 * pristine tree, `polly init`, the scripted model server behind the real claude/codex/pi CLIs, and
 * one `polly run` of a plan from test/fixtures/real-projects/<project>/ (plan.yaml,
 * workers-script.yaml). Then the human's side: merging a PR with git on the main checkout and
 * pushing (test/helpers/human-merge.ts), `polly pr sync`, and a look for anything still running.
 *
 * The toolchain: every command here and the `polly` it spawns run with PATH stripped of entries
 * under HOME, so the checks use the system's go/cargo (Debian's, installed by .ci/run) on this
 * machine and on CI alike; a toolchain under HOME (rustup) is another test's subject. A missing
 * tool is a failure naming the package to install, never a skip.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, gitTestEnv, type TestRepo } from './git-repo.js';
import { trackBrains } from './brain-cleanup.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry } from '../../brain/registry/registry-schema.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The compiled CLI (`npm run build` first). */
export const POLLY_CLI = join(ROOT, 'dist', 'brain', 'cli.js');

/** What a command did: exit code (null when killed or timed out), stdout, stderr. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command without blocking the event loop (the scripted model server lives in this process); never throws. */
export function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const raw = error ? (error as NodeJS.ErrnoException).code : 0;
      const code = typeof raw === 'number' ? raw : error ? null : 0;
      done({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

/** `env` (default: the test git env) with every PATH entry under HOME removed (see the module doc). */
export function systemToolchainEnv(env: NodeJS.ProcessEnv = gitTestEnv()): NodeJS.ProcessEnv {
  const home = realpathSync(homedir());
  const path = (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter).filter((p) => p && p !== home && !p.startsWith(`${home}/`) && !p.startsWith(`${homedir()}/`));
  return { ...env, PATH: path.join(delimiter) };
}

/**
 * Check that `tool` runs from the system PATH ({@link systemToolchainEnv}); returns its
 * `--version`-style output. Throws naming the Debian package to install when it does not.
 */
export async function requireSystemTool(tool: string, versionArgs: string[], debianPackage: string): Promise<string> {
  const got = await run(tool, versionArgs, ROOT, systemToolchainEnv(), 30_000);
  if (got.code !== 0) {
    throw new Error(
      `${tool} ${versionArgs.join(' ')} failed outside HOME (exit ${got.code}): this test needs the system's ${tool}. ` +
        `Install it (Debian/Ubuntu: apt-get install ${debianPackage}; .ci/run does), then run it again.\n${got.stderr.trim()}`,
    );
  }
  return `${got.stdout}${got.stderr}`.trim();
}

/** A real project set up and run through `polly run` (see {@link runRealProject}). */
export interface RealProjectRun {
  /** Temp root holding everything (removed by the caller's afterAll). */
  root: string;
  /** The working repository (main checkout). */
  repo: string;
  /** The bare origin. */
  origin: string;
  /** main's commit before Polly ran: the published sources, one commit. */
  initialMain: string;
  /** `polly init`'s result. */
  init: Ran;
  /** The pristine tree's own tests, run once before Polly. */
  pristine: Ran;
  /** `polly run <plan> --yes --json`. */
  result: Ran;
  /** Wall time of that `polly run`, ms. */
  runMs: number;
  server: ScriptedModelServer;
  /** The env `polly` ran with (system toolchain, scripted model keys). */
  env: NodeJS.ProcessEnv;
  /** The main checkout as a {@link TestRepo}, for humanMerge. */
  testRepo: TestRepo;
}

/**
 * Make `repo` (already holding the unpacked sources, under `root`) a git repository with one
 * commit on main pushed to a bare origin, run `pristineTest` there, `polly init`, point the workers
 * at a scripted model server playing `<fixtures>/workers-script.yaml`, and `polly run` a copy of
 * `<fixtures>/plan.yaml`. Throws when the pristine tests or `polly init` fail (the project or the
 * machine is wrong, not Polly's run); `polly run`'s own result is returned for the test to assert.
 * @param config  more config settings ([path, value]) on top of init's and the scripted models'.
 */
export async function runRealProject(options: {
  root: string;
  repo: string;
  fixtures: string;
  commitMessage: string;
  pristineTest: string[];
  config?: Array<[string[], unknown]>;
  runTimeoutMs?: number;
}): Promise<RealProjectRun> {
  const { root, repo, fixtures } = options;
  const base = systemToolchainEnv();
  trackBrains(repo);
  const origin = join(root, 'origin.git');
  git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
  git(repo, ['init', '-q', '-b', 'main']);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '-m', options.commitMessage]);
  git(repo, ['remote', 'add', 'origin', origin]);
  git(repo, ['push', '-q', '-u', 'origin', 'main']);
  const initialMain = git(repo, ['rev-parse', 'HEAD']);

  const [cmd, ...args] = options.pristineTest;
  const pristine = await run(cmd!, args, repo, base, 180_000);
  if (pristine.code !== 0) throw new Error(`the pristine project's own tests (${options.pristineTest.join(' ')}) must pass:\n${pristine.stdout}\n${pristine.stderr}`);
  // Its build output (target/, Cargo.lock) stays in the main checkout, ignored, as a developer's would.

  const init = await run(process.execPath, [POLLY_CLI, 'init'], repo, base, 30_000);
  if (init.code !== 0) throw new Error(`polly init failed (exit ${init.code}):\n${init.stderr}`);
  const server = await startScriptedModelServer({
    script: parseModelScript(readFileSync(join(fixtures, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml'),
  });
  const env = { ...base, ...useScriptedModels(repo, server.url, { extra: options.config ?? [] }) };
  const plan = join(root, 'plan.yaml');
  copyFileSync(join(fixtures, 'plan.yaml'), plan);
  const started = Date.now();
  const result = await run(process.execPath, [POLLY_CLI, 'run', plan, '--yes', '--json'], repo, env, options.runTimeoutMs ?? 240_000);
  const runMs = Date.now() - started;
  const testRepo: TestRepo = {
    dir: repo,
    remote: origin,
    root,
    git: (a) => git(repo, a),
    write: () => {
      throw new Error('not used');
    },
    commitAll: () => {
      throw new Error('not used');
    },
  };
  return { root, repo, origin, initialMain, init, pristine, result, runMs, server, env, testRepo };
}

/** The registry of `repo` (.polly/registry.json). */
export function readRegistry(repo: string): Registry {
  return JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry;
}

/** `polly pr sync --json` in `repo`: the after-merge pass and the local forge's check of moved bases. */
export async function prSync(
  repo: string,
  env: NodeJS.ProcessEnv,
): Promise<{
  done: Array<{ taskId: string; number: number; mergeCommitSha: string | null; backupRef: string | null }>;
  errors: unknown[];
  localChecks?: { checked: Array<{ number: number; conclusion: string; headCommit: string; baseCommit: string }>; errors: unknown[] };
}> {
  const got = await run(process.execPath, [POLLY_CLI, 'pr', 'sync', '--json'], repo, env, 180_000);
  if (got.code !== 0) throw new Error(`polly pr sync failed (exit ${got.code}):\n${got.stdout}\n${got.stderr}`);
  return JSON.parse(got.stdout);
}

/**
 * Processes (pid → command line, first 160 characters) whose working directory is inside `dir` or
 * whose command line names it; zombies and this process are left out.
 */
export function processesIn(dir: string): Map<number, string> {
  const found = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${name}/cwd`);
      } catch {
        // exited meanwhile, or not ours to read
      }
      if (cwd === dir || cwd.startsWith(`${dir}/`) || cmd.includes(dir)) found.set(Number(name), cmd.slice(0, 160));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** Wait up to `ms` for {@link processesIn}(dir) to be empty; returns what is still there (empty when all ended). */
export async function waitForNoProcessesIn(dir: string, ms: number): Promise<Map<number, string>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = processesIn(dir);
    if (left.size === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 250));
  }
}
