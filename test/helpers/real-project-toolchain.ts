/**
 * The Go and Rust real-project tests' part of test/helpers/real-project-run.ts's shape: a project
 * whose checks need a compiled toolchain (go, cargo), run the same way on this machine and on CI.
 *
 * Every command here and the `polly` it spawns run with PATH stripped of entries under HOME, so the
 * checks use the system's go/cargo (Debian's, installed by .ci/run) wherever the test runs; a
 * toolchain under HOME (rustup's ~/.cargo/bin), which Polly's sandbox hides, is another test's
 * subject. A missing tool is a failure naming the package to install, never a skip.
 *
 * {@link runWithSystemToolchain} does what a user does with a freshly cloned project: run its own
 * tests once, `polly init`, then one `polly run` of `<fixtures>/plan.yaml` with the workers pointed
 * at a scripted model server playing `<fixtures>/workers-script.yaml`.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { gitTestEnv, type TestRepo } from './git-repo.js';
import { createRealProjectRepo, polly, runAsync, type Ran, type RealProjectRepo } from './real-project-run.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';

/** PATH (default: this process's) without its entries under HOME (realpath or not). */
export function systemPath(path: string = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'): string {
  const homes = [homedir(), realpathSync(homedir())];
  return path
    .split(delimiter)
    .filter((p) => p && !homes.some((h) => p === h || p.startsWith(`${h}/`)))
    .join(delimiter);
}

/**
 * Check that `tool` runs from {@link systemPath}; returns what `tool ...versionArgs` printed.
 * @throws naming the Debian package to install when it does not run.
 */
export async function requireSystemTool(tool: string, versionArgs: string[], debianPackage: string): Promise<string> {
  const got = await runAsync(tool, versionArgs, '/', { ...gitTestEnv(), PATH: systemPath() }, 30_000);
  if (got.code !== 0) {
    throw new Error(
      `${tool} ${versionArgs.join(' ')} failed on PATH outside HOME (exit ${got.code}): this test needs the system's ${tool}. ` +
        `Install it (Debian/Ubuntu: apt-get install ${debianPackage}; .ci/run does), then run it again.\n${got.stderr.trim()}`,
    );
  }
  return `${got.stdout}${got.stderr}`.trim();
}

/** A project set up and run by {@link runWithSystemToolchain}. */
export interface ToolchainProjectRun {
  project: RealProjectRepo;
  /** The pristine tree's own tests (`pristineTest`), run once before Polly. */
  pristine: Ran;
  /** `polly init`. */
  init: Ran;
  /** `polly run <plan> --yes --json`. */
  result: Ran;
  /** Wall time of that `polly run`, ms. */
  runMs: number;
  server: ScriptedModelServer;
  /** What `polly` ran with on top of the test git env: PATH outside HOME, the scripted models' keys (and HOME, with `homeToolchain`). */
  env: Record<string, string>;
  /** The main checkout as a TestRepo, for test/helpers/human-merge.ts. */
  testRepo: TestRepo;
}

/**
 * createRealProjectRepo(`prefix`, `populate`, `message`), then `pristineTest` in it (it must pass:
 * the project or the machine is wrong otherwise), `polly init` (must exit 0), the scripted model
 * server and `polly run` of a copy of `<fixtures>/plan.yaml`, whose result is returned for the test
 * to assert. The pristine run's build output (target/, Cargo.lock) stays in the main checkout,
 * ignored, as a developer's would.
 * @throws when the pristine tests or `polly init` fail, with their output.
 */
export async function runWithSystemToolchain(options: {
  prefix: string;
  populate: (dir: string) => Promise<void>;
  message: string;
  fixtures: string;
  pristineTest: string[];
  runTimeoutMs?: number;
  /**
   * Run `polly run` (not the pristine tests or `polly init`) as a developer whose toolchain is
   * installed under HOME: a fresh HOME in the project's root with, in `bin` (e.g. `.cargo/bin`,
   * rustup's proxies), one script per tool that runs the system's tool and then prints
   * {@link HOME_TOOLCHAIN_MARKER} `<tool>` on stderr; that directory goes first on PATH. A check
   * whose output ends with the marker ran the HOME copy, through Polly's sandbox.
   */
  homeToolchain?: { bin: string; tools: string[] };
}): Promise<ToolchainProjectRun> {
  const project = await createRealProjectRepo(options.prefix, options.populate, options.message);
  const path = { PATH: systemPath() };
  const home = options.homeToolchain ? homeWithToolchain(project.root, options.homeToolchain) : null;
  const [cmd, ...args] = options.pristineTest;
  const pristine = await runAsync(cmd!, args, project.repo, { ...gitTestEnv(), ...path }, 180_000);
  if (pristine.code !== 0) throw new Error(`the pristine project's own tests (${options.pristineTest.join(' ')}) must pass:\n${pristine.stdout}\n${pristine.stderr}`);
  const init = await polly(['init'], project.repo, path, 30_000);
  if (init.code !== 0) throw new Error(`polly init failed (exit ${init.code}):\n${init.stderr}`);
  const server = await startScriptedModelServer({ script: parseModelScript(readFileSync(join(options.fixtures, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml') });
  const env = { ...path, ...(home ?? {}), ...useScriptedModels(project.repo, server.url) };
  const plan = join(project.root, 'plan.yaml');
  copyFileSync(join(options.fixtures, 'plan.yaml'), plan);
  const started = Date.now();
  const result = await polly(['run', plan, '--yes', '--json'], project.repo, env, options.runTimeoutMs ?? 240_000);
  const runMs = Date.now() - started;
  const testRepo: TestRepo = {
    dir: project.repo,
    remote: project.origin,
    root: project.root,
    git: project.git,
    write: () => {
      throw new Error('runWithSystemToolchain: the main checkout is written by git merges only');
    },
    commitAll: () => {
      throw new Error('runWithSystemToolchain: the main checkout is written by git merges only');
    },
  };
  return { project, pristine, init, result, runMs, server, env, testRepo };
}

/** What a HOME toolchain shim of {@link runWithSystemToolchain} prints on stderr after the tool ran. */
export const HOME_TOOLCHAIN_MARKER = '[home-toolchain]';

/** A HOME under `root` with shims of `tools` in `bin` (see `homeToolchain`); returns HOME and PATH. */
function homeWithToolchain(root: string, t: { bin: string; tools: string[] }): { HOME: string; PATH: string } {
  const home = join(root, 'home');
  const bin = join(home, t.bin);
  mkdirSync(bin, { recursive: true });
  for (const tool of t.tools) {
    const real = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8', env: { PATH: systemPath() } }).stdout.trim();
    if (!real) throw new Error(`homeToolchain: ${tool} is not on PATH outside HOME; install it first`);
    writeFileSync(
      join(bin, tool),
      `#!/bin/sh
${real} "$@"
rc=$?
echo "${HOME_TOOLCHAIN_MARKER} ${tool}" >&2
exit $rc
`,
    );
    chmodSync(join(bin, tool), 0o755);
  }
  return { HOME: home, PATH: `${bin}${delimiter}${systemPath()}` };
}

/** What `polly pr sync --json` prints: the after-merge pass and the local forge's check of moved bases. */
export interface PrSyncReport {
  done: Array<{ taskId: string; number: number; mergeCommitSha: string | null; backupRef: string | null }>;
  errors: unknown[];
  localChecks?: { checked: Array<{ number: number; conclusion: string; headCommit: string; baseCommit: string }>; errors: unknown[] };
}

/** `polly pr sync --json` in `repo` with `env`. @throws with its output when it exits non-zero. */
export async function prSync(repo: string, env: Record<string, string>): Promise<PrSyncReport> {
  const got = await polly(['pr', 'sync', '--json'], repo, env, 180_000);
  if (got.code !== 0) throw new Error(`polly pr sync failed (exit ${got.code}):\n${got.stdout}\n${got.stderr}`);
  return JSON.parse(got.stdout) as PrSyncReport;
}
