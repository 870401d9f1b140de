/**
 * `polly doctor [--json]`: is this repository and machine ready for Polly? One check per line,
 * each `ok` or a `problem` with what to do; exit 0 when every check is ok, 1 when any is not.
 *
 * Checks: the config validates; each agent CLI is found and answers `--version`; bubblewrap can
 * start a sandbox; which git identity commits will carry; the default branch is not behind its
 * remote-tracking branch (as of the last fetch: doctor does not touch the network); an `origin` to
 * push task branches to, and which forge the PRs go to; the project's
 * test runners and linters will not crawl the worktrees (`worktrees.dir`), and the runners' own
 * collection steps, run against a probe worktree, prove it; the toolchains under HOME the sandbox
 * binds back and the program and version each command runs there; the acceptance commands can run here,
 * and their runners start in the sandbox the checks get (a probe, not the tests);
 * `.polly/config.yaml` is committed and Polly's runtime state is ignored by git;
 * the main checkout has no uncommitted work that worktrees would leave out; which notifications
 * (webhook, desktop) this machine sends; as root, whether Claude Code workers may start
 * (`workers.claude-code.allow_root_sandbox`); which model keys each harness finds (names only);
 * each remote host of `workers.hosts`, over SSH (brain/commands/hosts.ts `checkHosts`).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { detectToolExclusions } from '../config/tool-exclusions.js';
import { resolveWorktreesDir, worktreesDirInRepo } from '../../workers/git/worktrees-dir.js';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { loadConfig } from '../config/config.js';
import { DEFAULT_CONFIG, type PollyConfig } from '../config/config-schema.js';
import { commandProblems, packageScripts } from '../config/project-detection.js';
import { nodeTestFiles } from '../config/node-test-files.js';
import { isPollyError } from '../core/errors.js';
import { HARNESSES } from '../core/vocabulary.js';
import { resolveAgentBinary } from '../../workers/agents/agent-binary.js';
import { describeIdentity, resolveCommitIdentity, uncommittedChanges } from '../../workers/git/commit-identity.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { findRepo, readRepoBranchContext } from '../../workers/git/repo.js';
import { whichExecutable } from '../../workers/sandbox/sandbox-executable.js';
import { detectDesktopNotifier } from '../notify/desktop.js';
import { urlOrigin } from '../notify/webhook.js';
import { originUrl, selectForge } from '../forge/forge-select.js';
import { redactSecrets } from '../core/redact.js';
import { shellQuote } from '../../gate/git/git-grammar.js';
import { agentCredentials } from '../../workers/agents/agent-preflight.js';
import { rootRefusalMessage } from '../../workers/agents/claude-code-adapter.js';
import { agentEnvFrom } from '../process/agent-env.js';
import { runCheck } from '../../workers/acceptance.js';
import { classifyCannotRun, commandProgram, runnerProbe } from '../../workers/check-runner.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { withBaseCheckout } from '../../workers/git/base-checkout.js';
import { probeSandbox, type SandboxProbe } from '../../workers/sandbox/sandbox.js';
import { describeBoundsMechanism, probeBoundsMechanism, type BoundsMechanism } from '../../workers/sandbox/resource-bounds.js';
import { detectHomeToolchains } from '../../workers/sandbox/home-toolchains.js';
import { checkHosts } from './hosts.js';

/**
 * What to do when a command's program resolves under HOME outside every toolchain directory the
 * sandbox binds back (workers/sandbox/home-toolchains.ts: rustup, pyenv, nvm, volta, asdf, mise,
 * `~/.local/bin`, Go, bun, deno and the other PATH directories under HOME, never `~/.config`,
 * `~/.ssh` and the like), so the sandbox hides it: advice for the program's own language, never
 * another's (a Rust crate gets no pyenv advice).
 * @param program the command's program, as written (`cargo`, `python3`, `/home/u/venv/bin/python`).
 */
export function homeProgramAdvice(program: string): string {
  const name = basename(program);
  if (/^(python[\d.]*|pytest|pip[\d.]*|tox|nox|uv|poetry)$/.test(name))
    return (
      'a Python under your home directory is visible in the sandbox when it comes from pyenv (~/.pyenv), asdf, mise or a PATH directory (all bound read-only); ' +
      'a virtualenv elsewhere under HOME is not: make it inside the worktree with worktrees.setup (python3 -m venv .venv && .venv/bin/pip install -e . pytest) and use ".venv/bin/python -m pytest", ' +
      'or use a system python by absolute path (Debian/Ubuntu: apt-get install python3 python3-pytest; "/usr/bin/python3 -m pytest")'
    );
  if (/^(cargo|rustc|rustup|rustdoc|cargo-.*)$/.test(name))
    return 'install Rust with rustup (its ~/.rustup and ~/.cargo/bin are bound read-only in the sandbox, CARGO_HOME stays private) or from the system (Debian/Ubuntu: apt-get install cargo), and keep its directory on PATH';
  if (/^(go|gofmt)$/.test(name))
    return 'install Go where the sandbox sees it: /usr/local/go, ~/sdk/go1.x (golang.org/dl), ~/go/bin or GOROOT under HOME are bound read-only; or from the system (Debian/Ubuntu: apt-get install golang-go)';
  if (/^(node|npm|npx|pnpm|yarn|corepack|bun|bunx|deno)$/.test(name))
    return "install Node where the sandbox sees it: nvm's ~/.nvm, volta's ~/.volta, asdf, mise, ~/.bun and ~/.deno are bound read-only; or from the system (Debian/Ubuntu: apt-get install nodejs npm)";
  return 'put the directory that holds it on PATH (a PATH directory under HOME is bound read-only in the sandbox, but not one inside ~/.config, ~/.ssh, ~/.aws, ~/.cache or ~/.local/state), or install it outside HOME';
}

/** One line of the report. */
export interface DoctorCheck {
  /** Stable id, e.g. `config`, `agent:codex`, `sandbox`, `identity`. */
  id: string;
  status: 'ok' | 'problem';
  /** What was found (a version, a path, an identity, the offending value). */
  detail: string;
  /** What to do, for a problem. */
  fix?: string;
}

export interface DoctorReport {
  repoRoot: string;
  /** True when every check is ok. */
  ok: boolean;
  checks: DoctorCheck[];
}

/**
 * Which notifications this machine sends (brain/notify/): the webhook (its origin only: the URL
 * holds its secret) and the desktop notifier found (notify-send on Linux, osascript on macOS), or
 * that there is none. Never a problem: notifications are optional.
 */
export function notificationCheck(config: Pick<PollyConfig, 'notifications'>, env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): DoctorCheck {
  const desktop = detectDesktopNotifier(platform, env.PATH);
  const webhook = config.notifications.webhook_url ? `webhook to ${urlOrigin(config.notifications.webhook_url)}` : 'no webhook (notifications.webhook_url)';
  const desk = !config.notifications.desktop
    ? 'desktop off (notifications.desktop: false)'
    : desktop
      ? `desktop via ${desktop.kind} (${desktop.path})`
      : `no desktop notifier available (${platform === 'darwin' ? 'no osascript on PATH' : platform === 'linux' ? 'no notify-send on PATH: install libnotify-bin' : `none on ${platform}`})`;
  return { id: 'notifications', status: 'ok', detail: `${webhook}; ${desk}` };
}

/**
 * As root, Claude Code refuses `--permission-mode bypassPermissions` unless `IS_SANDBOX=1`, which
 * Polly sets only with `workers.claude-code.allow_root_sandbox: true`
 * (workers/agents/claude-code-adapter.ts {@link rootRefusalMessage}): without it every claude-code
 * task and review is refused, so this is a problem with the whole fix. Not root, or root with the
 * key set: ok, saying which.
 */
export function rootCheck(config: Pick<PollyConfig, 'workers'>, isRoot: boolean): DoctorCheck {
  if (!isRoot) return { id: 'root', status: 'ok', detail: 'not running as root' };
  if (config.workers['claude-code'].allow_root_sandbox)
    return { id: 'root', status: 'ok', detail: 'running as root; workers.claude-code.allow_root_sandbox is true, so Claude Code workers get IS_SANDBOX=1' };
  return {
    id: 'root',
    status: 'problem',
    detail: 'running as root: every claude-code task and review would be refused (Claude Code refuses bypassPermissions as root unless IS_SANDBOX=1)',
    fix: rootRefusalMessage(),
  };
}

/**
 * One line per harness: the model key variables it reads and whether the agents' environment
 * ({@link agentEnvFrom}: what Polly passes on) has one (workers/agents/agent-preflight.ts
 * {@link agentCredentials}). Names only, never a value. A missing key is a problem (its tasks,
 * reviews and fix rounds would not start); pi on its default provider cannot be checked (ok, saying so).
 */
export function credentialChecks(config: Pick<PollyConfig, 'workers'>, env: NodeJS.ProcessEnv): DoctorCheck[] {
  const agentEnv = agentEnvFrom(env, config);
  return HARNESSES.map((h): DoctorCheck => {
    const c = agentCredentials(h, config.workers, agentEnv);
    const id = `credentials:${h}`;
    if (c.status === 'present') return { id, status: 'ok', detail: `model key set: ${c.variables.join(', ')}` };
    if (c.status === 'unknown') return { id, status: 'ok', detail: `not checked: ${c.fix}` };
    return { id, status: 'problem', detail: `no model key: none of ${c.variables.join(', ')} is set`, fix: c.fix };
  });
}

/**
 * Which mechanism holds each resource bound of `workers.limits` here (workers/sandbox/resource-bounds.ts):
 * cgroup v2, cgroup v1 or rlimits, and what is not bounded. `ok` either way: an unbounded
 * resource is said in the detail, with the fix.
 */
export function boundsCheck(config: PollyConfig, mechanism: BoundsMechanism = probeBoundsMechanism()): DoctorCheck {
  const lines = describeBoundsMechanism(mechanism, config.workers.limits);
  return { id: 'bounds', status: 'ok', detail: `resource bounds: ${lines.join('; ')}` };
}

/**
 * The sandbox probe doctor reports: the sandbox's own (workers/sandbox/sandbox.ts `probeSandbox`,
 * the flags the worker runner starts bubblewrap with), finding `bwrap` on `env`'s PATH.
 */
export function doctorSandboxProbe(env: NodeJS.ProcessEnv): SandboxProbe {
  return probeSandbox({ path: env.PATH ?? '' });
}

function run(binary: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; out: string; error: string | null }> {
  return new Promise((resolve) => {
    execFile(binary, args, { env, timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : null) : 0;
      resolve({ code, out: `${stdout}${stderr}`.trim(), error: error && code === null ? error.message : null });
    });
  });
}

async function agentChecks(config: PollyConfig, env: NodeJS.ProcessEnv, cwd: string): Promise<DoctorCheck[]> {
  return Promise.all(
    HARNESSES.map(async (h): Promise<DoctorCheck> => {
      const configured = config.workers[h].command;
      const binary = resolveAgentBinary(h, { command: configured }, env, cwd);
      if (!binary.includes('/') || !existsSync(binary)) {
        return {
          id: `agent:${h}`,
          status: 'problem',
          detail: `${configured} not found (PATH and Polly's node_modules/.bin)`,
          fix: `install the ${h} CLI, or set workers.${h}.command in .polly/config.yaml to its path`,
        };
      }
      const r = await run(binary, ['--version'], env, 30_000);
      if (r.code !== 0)
        return {
          id: `agent:${h}`,
          status: 'problem',
          detail: `${binary} --version failed: ${r.error ?? r.out.split('\n')[0] ?? `exit ${r.code}`}`,
          fix: `run "${binary} --version" yourself and fix what it says`,
        };
      return { id: `agent:${h}`, status: 'ok', detail: `${binary}: ${r.out.split('\n')[0]}` };
    }),
  );
}

async function behindCheck(git: GitRunner, root: string): Promise<DoctorCheck> {
  // The Brain's own rule (workers/git/repo.ts readRepoBranchContext), so both name the same branch.
  const branch = readRepoBranchContext(root)?.defaultBranch ?? null;
  if (!branch)
    return {
      id: 'default-branch',
      status: 'problem',
      detail: `no default branch: ${root} is not a git working tree git can read`,
      fix: 'run "git status" there and fix what it says',
    };
  const local = await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: root, okExitCodes: [1] });
  if (local.exitCode !== 0)
    return {
      id: 'default-branch',
      status: 'problem',
      detail: `the default branch ${branch} has no local branch (worktrees start from the local ${branch})`,
      fix: `create it (git branch ${shellQuote(branch)} origin/${shellQuote(branch)}), or name the default branch: git remote set-head origin --auto`,
    };
  const upstream = `refs/remotes/origin/${branch}`;
  const has = await git.run(['rev-parse', '--verify', '--quiet', upstream], { cwd: root, okExitCodes: [1] });
  if (has.exitCode !== 0) return { id: 'default-branch', status: 'ok', detail: `${branch} (no origin/${branch} to compare with)` };
  const counts = firstLine(await git.run(['rev-list', '--left-right', '--count', `${branch}...${upstream}`], { cwd: root }));
  const [ahead, behind] = counts.split(/\s+/).map(Number);
  if ((behind ?? 0) > 0) {
    return {
      id: 'default-branch',
      status: 'problem',
      detail: `${branch} is ${behind} commit(s) behind origin/${branch} (as of the last fetch)`,
      fix: `update it before planning: git pull --ff-only (worktrees start from the local ${branch})`,
    };
  }
  return { id: 'default-branch', status: 'ok', detail: `${branch} is up to date with origin/${branch} as of the last fetch${ahead ? ` (${ahead} ahead)` : ''}` };
}

/**
 * Where PRs go and whether they can: every task's branch is pushed to `origin` for its PR, on
 * either forge (brain/task-tools/push.ts; the local forge keeps the PR record in `.polly/` and the
 * branch on `origin`, brain/forge/local-forge.ts). No `origin` is a problem (tasks would stop at
 * push), and so is `forge.kind: github` with an `origin` that is not a GitHub URL
 * (brain/forge/forge-select.ts {@link selectForge}). The URL is shown without its user info (a
 * token in `https://user:token@host/…` is never printed).
 * @param root  the repository's main checkout; `config` its (validated) config.
 * @returns the `forge` line of the report.
 */
export async function forgeCheck(git: GitRunner, root: string, config: PollyConfig): Promise<DoctorCheck> {
  const url = await originUrl(git, root);
  if (url === null) {
    // An absolute path (a relative one would be resolved from each worktree, see below) and the
    // current branch as the bare repository's HEAD (else its HEAD names a branch it does not have).
    const bare = join(dirname(root), `${basename(root)}.git`);
    const branch = firstLine(await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: root, okExitCodes: [1, 128] })) || 'main';
    return {
      id: 'forge',
      status: 'problem',
      detail:
        "no origin remote: Polly pushes each task's branch to origin for its PR (the local forge too: its PR is a record in .polly/ plus the branch on origin), so every task would stop at push",
      fix: `add one: git remote add origin <your GitHub repository URL> (PRs on GitHub); or keep everything on this machine with the local forge and a bare repository: git init --bare -b ${shellQuote(branch)} ${shellQuote(bare)} && git remote add origin ${shellQuote(bare)} && git push -u origin HEAD`,
    };
  }
  if (isRelativeLocalPath(url)) {
    const absolute = resolvePath(root, url);
    return {
      id: 'forge',
      status: 'problem',
      detail: `origin is the relative path "${url}": Polly pushes each task's branch from its worktree (.worktrees/<id>), and git resolves a relative path from the folder it runs in, so every push would fail with "does not appear to be a git repository"`,
      fix: `make it absolute: git remote set-url origin ${shellQuote(absolute)}`,
    };
  }
  const shown = redactSecrets(url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1'));
  try {
    const selection = selectForge(config.forge, url);
    return {
      id: 'forge',
      status: 'ok',
      detail:
        selection.kind === 'github'
          ? `PRs on GitHub: ${selection.owner}/${selection.repo} on ${selection.host} (${selection.reason})`
          : `PRs on the local forge (${selection.reason.replace(url, shown)}): branches pushed to origin ${shown}, reviewed with polly pr`,
    };
  } catch (error) {
    if (!isPollyError(error, 'config_invalid')) throw error;
    return { id: 'forge', status: 'problem', detail: error.message.replace(url, shown) };
  }
}

/**
 * Will the user's own test runners and linters crawl the worker worktrees? With `worktrees.dir`
 * outside the repository, none can. Inside (the default `.worktrees`), each tool whose config is
 * found (brain/config/tool-exclusions.ts: vitest, jest, eslint, a bare `node --test`, pytest with
 * its own `norecursedirs`) and does not name the directory is listed with the exact exclusion to
 * add. Go (`./...` skips directories starting with `.` or `_`) and cargo do not look there.
 */
function worktreeVisibilityCheck(root: string, config: PollyConfig): DoctorCheck {
  const dir = resolveWorktreesDir(root, config.worktrees.dir);
  const rel = worktreesDirInRepo(root, dir);
  if (rel === null) return { id: 'worktrees-visible', status: 'ok', detail: `worktrees live outside the repository (${dir}): no tool of the repository crawls them` };
  const found = detectToolExclusions(root, rel);
  const open = found.filter((t) => !t.excluded);
  if (open.length === 0) {
    const named = found.map((t) => t.tool);
    return { id: 'worktrees-visible', status: 'ok', detail: named.length > 0 ? `${named.join(', ')} exclude ${rel}/` : `no test runner or linter config here would crawl ${rel}/` };
  }
  return {
    id: 'worktrees-visible',
    status: 'problem',
    detail: open.map((t) => `${t.tool} (${t.file}) will also run the tests of every worker worktree under ${rel}/`).join('; '),
    fix: `${open.map((t) => `${t.tool}: ${t.fix}`).join('; ')}; or set worktrees.dir: ../${basename(root)}.polly-worktrees in .polly/config.yaml to keep worktrees out of the repository`,
  };
}

/**
 * Commands whose program resolves (on `env.PATH`, symlinks followed) under the user's home
 * directory outside every toolchain directory the sandbox binds back read-only
 * (workers/sandbox/home-toolchains.ts `detectHomeToolchains`): the sandbox covers HOME
 * (workers/sandbox/sandbox-profiles.ts `commonHidden`), so such a program is not found when Polly
 * runs the command (exit 127), though it runs in this shell. A program from rustup, pyenv, nvm,
 * `~/.local/bin` or another PATH directory under HOME is visible, so it is not listed. The program
 * is the command's first word after `NAME=value` assignments.
 * @returns each such command with what it needs and the advice for its language; [] when HOME is unset or `/`.
 */
export function programsHiddenBySandbox(repoRoot: string, commands: readonly string[], env: NodeJS.ProcessEnv): Array<{ command: string; missing: string; advice: string }> {
  const home = env.HOME ? resolvePath(env.HOME) : null;
  if (!home || home === '/') return [];
  const homeReal = realpathOrSelf(home);
  const visible = detectHomeToolchains(home, env).readOnly;
  const out: Array<{ command: string; missing: string; advice: string }> = [];
  for (const command of commands) {
    const program = commandProgram(command);
    if (!program) continue;
    const found = whichExecutable(program, env.PATH, repoRoot);
    if (!found) continue;
    const paths = [found, realpathOrSelf(found)];
    const inHome = (p: string) => [home, homeReal].some((h) => p === h || p.startsWith(`${h}/`));
    const seen = (p: string) => visible.some((v) => p === v || p.startsWith(`${v}/`));
    const hidden = paths.find((p) => inHome(p) && !seen(p));
    if (hidden)
      out.push({
        command,
        missing: `${program} from outside your home directory (it resolves to ${hidden}, which the sandbox hides: the command would exit 127)`,
        advice: homeProgramAdvice(program),
      });
  }
  return out;
}

/** Shell builtins and keywords a command may start with: nothing to look up on PATH. */
const SHELL_BUILTINS: ReadonlySet<string> = new Set([
  'cd',
  'true',
  'false',
  'test',
  '[',
  ':',
  '.',
  'source',
  'set',
  'export',
  'if',
  'for',
  'while',
  'case',
  '(',
  '{',
  'exit',
  'echo',
  'printf',
  'command',
  'eval',
]);

/**
 * Commands whose program (the first word after `NAME=value` assignments, workers/check-runner.ts
 * {@link commandProgram}) is a bare name found on no directory of `env.PATH`: the project's
 * toolchain (go, cargo, python3, …) is not installed where Polly runs, so every check or setup would
 * exit 127. A program by path (`./gradlew`, `.venv/bin/python`) is not looked up: worktrees.setup
 * may create it. Pure but for the file lookups.
 * @returns each such command with its program, in input order.
 */
export function programsMissingFromPath(repoRoot: string, commands: readonly string[], env: NodeJS.ProcessEnv): Array<{ command: string; program: string }> {
  const out: Array<{ command: string; program: string }> = [];
  for (const command of commands) {
    const program = commandProgram(command);
    if (!program || program.includes('/') || SHELL_BUILTINS.has(program)) continue;
    if (whichExecutable(program, env.PATH, repoRoot) === null) out.push({ command, program });
  }
  return out;
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Whether `command`'s program is made by `setup` (config `worktrees.setup`) in each worktree rather
 * than found in the main checkout: a relative path (`.venv/bin/python`, `node_modules/.bin/vitest`)
 * absent from `root` whose first directory `setup` names as a word (`python3 -m venv .venv && …`).
 * Such a runner cannot be probed in the main checkout; the task's own setup log tells if it fails.
 */
export function madeBySetup(root: string, command: string, setup: string | null): boolean {
  const program = commandProgram(command);
  if (!setup || !program || isAbsolute(program) || !program.includes('/')) return false;
  if (existsSync(join(root, program))) return false;
  const first = program.replace(/^\.\//, '').split('/')[0]!;
  const escaped = first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[\\s'"=/])(\\./)?${escaped}($|[\\s'"/;&|])`).test(setup);
}

/**
 * The checks' sandbox doctor probes in (the repository root as the worktree, no network, the
 * config's passthrough and unconfined settings), or null when it cannot start here
 * (`sandbox_unavailable`: the sandbox line says why). `worktreesDir` defaults to the config's.
 */
async function doctorSandbox(
  root: string,
  config: PollyConfig,
  env: NodeJS.ProcessEnv,
  sandboxProbe: SandboxProbe,
  more: { worktreesDir?: string; realHome?: string; extraEnv?: Record<string, string>; checkout?: string } = {},
): Promise<Awaited<ReturnType<typeof commandSandbox>> | null> {
  try {
    const box = await commandSandbox({
      repoRoot: root,
      worktree: more.checkout ?? root,
      worktreesDir: more.worktreesDir ?? resolveWorktreesDir(root, config.worktrees.dir),
      network: false,
      allowUnconfined: config.workers.allow_unconfined ?? false,
      passthrough: config.workers.env_passthrough ?? [],
      toolPaths: config.workers.tool_paths ?? [],
      probe: sandboxProbe,
      baseEnv: env,
      realHome: more.realHome ?? (env.HOME || homedir()),
      ...(more.extraEnv ? { extraEnv: more.extraEnv } : {}),
    });
    // A checkout's node_modules is the main checkout's, read-only (./base-checkout's link): as a
    // task's worktree gets a copy of it (workers/git/dependency-reuse.ts).
    const modules = join(root, 'node_modules');
    if (!more.checkout || !box.sandbox || !existsSync(join(more.checkout, 'node_modules'))) return box;
    return { ...box, sandbox: { ...box.sandbox, spec: { ...box.sandbox.spec, readOnly: [...box.sandbox.spec.readOnly, modules] } } };
  } catch (error) {
    if (!isPollyError(error, 'sandbox_unavailable')) throw error;
    return null;
  }
}

/**
 * Run `fn` in a detached checkout of the main checkout's HEAD (workers/git/base-checkout.ts), as a
 * task's worktree sees the repository: the tracked tree and a git read view, never the
 * developer's untracked or uncommitted files. Its `node_modules` links to the main checkout's
 * (read-only in the sandbox), as dependency reuse gives a task a copy of it. Null when there is no
 * commit to check out.
 */
async function inDoctorCheckout<T>(root: string, config: PollyConfig, fn: (checkout: string) => Promise<T>, given?: string): Promise<T | null> {
  if (given) return fn(given);
  try {
    return await withBaseCheckout({ repoRoot: root, worktreesDir: resolveWorktreesDir(root, config.worktrees.dir), label: 'doctor', rev: 'HEAD' }, async ({ path }) => {
      const modules = join(root, 'node_modules');
      if (existsSync(modules) && !existsSync(join(path, 'node_modules'))) symlinkSync(modules, join(path, 'node_modules'));
      return fn(path);
    });
  } catch (error) {
    if (isPollyError(error, 'git_failed')) return null;
    throw error;
  }
}

/**
 * Can each acceptance command's runner start in the sandbox and environment the checks get
 * (workers/sandbox/command-sandbox.ts, as brain/task-tools/run-acceptance.ts builds them, in a
 * detached checkout of HEAD with its git read view, as a task's worktree: {@link inDoctorCheckout})? Runs the runner probe of workers/check-runner.ts
 * (`command -v` the program, `find_spec` a `python -m` module) for each command, 30 s at most
 * each, and classifies a failed probe as run_acceptance would a failed check.
 * @param sandboxProbe  the bubblewrap probe doctor made; a sandbox that cannot start without
 *                      `workers.allow_unconfined` means nothing can be probed (said, not a problem:
 *                      the sandbox line is).
 * @returns the `acceptance-runner` line: ok naming what was probed, or a problem per command with its fix.
 */
export async function acceptanceRunnerCheck(root: string, config: PollyConfig, env: NodeJS.ProcessEnv, sandboxProbe: SandboxProbe, checkout?: string): Promise<DoctorCheck> {
  const id = 'acceptance-runner';
  // A runner that worktrees.setup makes in each worktree (.venv/bin/python) is not in the main checkout: not probed here.
  const bySetup = config.acceptance.commands.filter((command) => madeBySetup(root, command, config.worktrees.setup));
  const setupNote = bySetup.length > 0 ? `; not probed, made by worktrees.setup in each worktree: ${bySetup.join('; ')}` : '';
  const probes = config.acceptance.commands
    .filter((command) => !bySetup.includes(command))
    .map((command) => ({ command, probe: runnerProbe(command) }))
    .filter((p): p is { command: string; probe: string } => p.probe !== null);
  if (probes.length === 0) return { id, status: 'ok', detail: bySetup.length > 0 ? setupNote.slice(2) : 'no acceptance command to probe' };
  const found: string[] = [];
  const fixes: string[] = [];
  let where = '';
  const ran = await inDoctorCheckout(
    root,
    config,
    async (dir) => {
      const confinement = await doctorSandbox(root, config, env, sandboxProbe, { checkout: dir });
      if (!confinement) return false;
      where = confinement.sandbox ? "in the checks' sandbox" : 'unconfined (workers.allow_unconfined)';
      for (const { command, probe } of probes) {
        const r = await runCheck(probe, { cwd: dir, env: confinement.env, sandbox: confinement.sandbox, timeoutSeconds: 30 });
        if (r.exitCode === 0) continue;
        const why = r.timedOut ? null : classifyCannotRun({ command, exitCode: r.exitCode, timedOut: false, output: r.output });
        found.push(
          `"${command}" cannot run ${where}: ${why ? `${why.missing} is missing` : `its probe exited ${r.exitCode ?? 'without starting'}`} (${(why?.evidence ?? r.output.trim().split('\n').pop() ?? '').slice(0, 200)})`,
        );
        if (why) fixes.push(why.fix);
      }
      return true;
    },
    checkout,
  );
  if (ran === null) return { id, status: 'ok', detail: 'not probed: the repository has no commit yet (the probes run in a checkout of HEAD, as a task would)' };
  if (!ran) return { id, status: 'ok', detail: "not probed: the checks' sandbox cannot start here (see the sandbox line)" };
  if (found.length === 0) return { id, status: 'ok', detail: `the runner of each acceptance command starts ${where}: ${probes.map((p) => p.command).join('; ')}${setupNote}` };
  return {
    id,
    status: 'problem',
    detail: found.join('; ') + setupNote,
    fix: [...new Set(fixes)].join('; ') || 'run the probe yourself (see polly doctor --json) and fix what it says',
  };
}

/** The probe's directory name under the worktrees directory: shaped like a task's worktree (no leading dot, which pytest's default skips). */
const COLLECT_PROBE_DIR = 'polly-collect-probe';

/** Expand one `node --test` argument as `sh` would for a glob in its last path segment (`test/*.test.js`); others as written. */
function expandArg(root: string, arg: string): string[] {
  if (!/[*?]/.test(arg)) return [arg];
  const slash = arg.lastIndexOf('/');
  const dir = slash >= 0 ? arg.slice(0, slash) : '.';
  if (/[*?]/.test(dir)) return [arg];
  const re = new RegExp(
    `^${arg
      .slice(slash + 1)
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')}$`,
  );
  let names: string[] = [];
  try {
    names = readdirSync(join(root, dir)).filter((n) => !n.startsWith('.') && re.test(n));
  } catch {
    return [arg];
  }
  return names.length === 0 ? [arg] : names.sort().map((n) => (slash >= 0 ? `${dir}/${n}` : n));
}

/**
 * Does the project's own test run from the repository root collect the worker worktrees? The
 * proof, not the config text: a probe worktree (`<worktrees dir>/polly-collect-probe/` with a
 * `polly-collect-probe.test.js` and a `test_polly_collect_probe.py`) is written, each runner's
 * collection step runs in the checks' sandbox with the worktrees directory visible read-only, and
 * any collected path inside the worktrees directory (the probe or a real worktree's file) is a
 * problem naming it. Steps: `vitest list --filesOnly` and `jest --listTests` (from
 * node_modules/.bin, when installed), `<the pytest acceptance command> --collect-only -q` in a
 * Python project, and for a package.json script running `node --test` the files Node 20 would run
 * (brain/config/node-test-files.ts). The probe is removed afterwards. 120 s at most per step.
 * @returns the `worktrees-collected` line.
 */
export async function worktreesCollectedCheck(root: string, config: PollyConfig, env: NodeJS.ProcessEnv, sandboxProbe: SandboxProbe): Promise<DoctorCheck> {
  const id = 'worktrees-collected';
  const absDir = resolveWorktreesDir(root, config.worktrees.dir);
  const rel = worktreesDirInRepo(root, absDir);
  if (rel === null) return { id, status: 'ok', detail: `worktrees live outside the repository (${absDir}): nothing collects them` };
  const scripts = packageScripts(root) ?? {};
  const nodeScripts = Object.entries(scripts).filter(([, cmd]) => /\bnode\s+(?:[^|;&]*\s)?--test\b/.test(cmd));
  const bin = (tool: string) => (existsSync(join(root, 'node_modules', '.bin', tool)) ? join('node_modules', '.bin', tool) : null);
  const usesTool = (tool: string) =>
    Object.values(scripts).some((c) => new RegExp(`(^|[\\s;&|/])${tool}(\\s|$)`).test(c)) ||
    detectToolExclusions(root, rel).some((t) => t.tool === tool) ||
    readdirSafe(root).some((f) => f.startsWith(`${tool}.config.`));
  const steps: Array<{ tool: string; command: string }> = [];
  const notProved: string[] = [];
  for (const tool of ['vitest', 'jest']) {
    if (!usesTool(tool)) continue;
    const b = bin(tool);
    if (b) steps.push({ tool, command: tool === 'vitest' ? `${b} list --filesOnly` : `${b} --listTests` });
    else notProved.push(`${tool} (not installed in this checkout: node_modules/.bin/${tool})`);
  }
  const pytestCommand = config.acceptance.commands.find((c) => /\bpytest\b/.test(c));
  const pythonProject = ['pyproject.toml', 'pytest.ini', 'setup.cfg', 'tox.ini', 'conftest.py', 'setup.py'].some((f) => existsSync(join(root, f)));
  if (pytestCommand || pythonProject) steps.push({ tool: 'pytest', command: `${pytestCommand ?? 'python3 -m pytest'} --collect-only -q -p no:cacheprovider` });
  if (steps.length === 0 && nodeScripts.length === 0)
    return { id, status: 'ok', detail: notProved.length > 0 ? `not proved: ${notProved.join('; ')}` : 'no collection step here (vitest, jest, pytest, node --test)' };

  const probeDir = join(absDir, COLLECT_PROBE_DIR);
  const madeDir = !existsSync(absDir);
  const collected: string[] = [];
  const ran: string[] = [];
  try {
    mkdirSync(probeDir, { recursive: true });
    writeFileSync(join(probeDir, 'polly-collect-probe.test.js'), "// polly doctor's collection probe: a runner that lists this file also runs the worker worktrees' tests\n");
    writeFileSync(join(probeDir, 'test_polly_collect_probe.py'), "# polly doctor's collection probe\ndef test_polly_collect_probe():\n    pass\n");
    for (const [name, cmd] of nodeScripts) {
      const after = (cmd.split(/\bnode\s+(?:[^|;&]*\s)?--test\b/)[1] ?? '').split(/&&|\|\||;|\|/)[0]!.trim();
      const args = after
        .split(/\s+/)
        .filter((a) => a && !a.startsWith('-'))
        .flatMap((a) => expandArg(root, a.replace(/^['"]|['"]$/g, '')));
      const files = nodeTestFiles(root, args);
      ran.push(`node --test (scripts.${name}): ${files.length} file(s)`);
      for (const f of files) if (f.startsWith(`${rel}/`)) collected.push(`node --test (scripts.${name}) runs ${f}`);
    }
    if (steps.length > 0) {
      const confinement = await doctorSandbox(root, config, env, sandboxProbe, { worktreesDir: absDir, extraEnv: { PYTHONDONTWRITEBYTECODE: '1' } });
      if (!confinement) notProved.push(...steps.map((s) => `${s.tool} (the checks' sandbox cannot start here)`));
      if (confinement) {
        // The worktrees directory visible (read-only), as the user's own run from the root sees it;
        // the checkout read-only but for node_modules (vite bundles the config into node_modules/.vite-temp).
        const spec = confinement.sandbox?.spec;
        const box =
          confinement.sandbox && spec
            ? {
                ...confinement.sandbox,
                spec: { ...spec, hidden: spec.hidden.filter((h) => h !== absDir), readOnly: [...spec.readOnly, absDir], writable: [...spec.writable, join(root, 'node_modules')] },
              }
            : null;
        for (const step of steps) {
          const r = await runCheck(step.command, { cwd: root, env: confinement.env, sandbox: box, timeoutSeconds: 120 });
          ran.push(`${step.command} (exit ${r.exitCode ?? 'none'})`);
          const hits = r.output
            .split('\n')
            .map((l) => l.trim().replace(`${root}/`, ''))
            .filter((l) => l.includes(`${rel}/`))
            .map((l) => l.slice(l.indexOf(`${rel}/`)).split(/[\s:]/)[0]!);
          for (const h of [...new Set(hits)]) collected.push(`${step.tool} collects ${h}`);
        }
      }
    }
  } finally {
    rmSync(probeDir, { recursive: true, force: true });
    if (madeDir) rmSync(absDir, { recursive: true, force: true });
  }
  const unproved = notProved.length > 0 ? `; not proved: ${notProved.join('; ')}` : '';
  if (collected.length === 0) return { id, status: 'ok', detail: `nothing under ${rel}/ is collected: ${ran.join('; ')}${unproved}` };
  const fixes = detectToolExclusions(root, rel).filter((t) => !t.excluded);
  return {
    id,
    status: 'problem',
    detail: `the project's own test run from the repository root would also run the worker worktrees: ${collected.slice(0, 6).join('; ')}${collected.length > 6 ? '; …' : ''}${unproved}`,
    fix: `run polly init again (it writes the exclusion for each runner it can edit)${fixes.length > 0 ? `, or add it by hand: ${fixes.map((t) => `${t.tool} (${t.file}): ${t.fix}`).join('; ')}` : ''}; or set worktrees.dir: ../${basename(root)}.polly-worktrees in .polly/config.yaml`,
  };
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** How each program says its version: `go version`, else `--version`. */
const VERSION_ARGS: Readonly<Record<string, string>> = { go: 'version' };

/**
 * Which toolchains under HOME the sandbox binds back read-only (workers/sandbox/home-toolchains.ts),
 * and which program and version each acceptance and setup command runs in the checks' sandbox:
 * `command -v` and `--version` there (`go version`), 10 s at most each. Never a problem (a program
 * that cannot start is the acceptance-runner line's): it says what the checks will run, so a
 * version other than the developer's shows here.
 * @returns the `toolchains` line.
 */
export async function toolchainCheck(root: string, config: PollyConfig, env: NodeJS.ProcessEnv, sandboxProbe: SandboxProbe, checkout?: string): Promise<DoctorCheck> {
  const id = 'toolchains';
  const home = env.HOME || homedir();
  const tilde = (p: string) => (p.startsWith(`${home}/`) ? `~${p.slice(home.length)}` : p);
  const found = detectHomeToolchains(home, env).toolchains;
  const mounted =
    found.length > 0 ? `under HOME, bound read-only in the sandbox: ${found.map((t) => `${t.manager} (${t.paths.map(tilde).join(', ')})`).join(', ')}` : 'no toolchain under HOME';
  const commands = [...config.acceptance.commands, ...(config.worktrees.setup ? config.worktrees.setup.split(/&&|\|\||;/) : [])];
  const programs = [...new Set(commands.map((c) => commandProgram(c.trim())).filter((p): p is string => !!p && !p.includes('/') && !SHELL_BUILTINS.has(p)))];
  if (programs.length === 0) return { id, status: 'ok', detail: mounted };
  const runs: string[] = [];
  const ran = await inDoctorCheckout(
    root,
    config,
    async (dir) => {
      const confinement = await doctorSandbox(root, config, env, sandboxProbe, { realHome: home, checkout: dir });
      if (!confinement) return false;
      for (const p of programs) {
        const q = shellQuote(p);
        const r = await runCheck(`command -v ${q} && ${q} ${VERSION_ARGS[p] ?? '--version'} 2>&1 | head -n 1`, {
          cwd: dir,
          env: confinement.env,
          sandbox: confinement.sandbox,
          timeoutSeconds: 10,
        });
        const [where, version] = r.output.trim().split('\n');
        runs.push(r.exitCode === 0 && where ? `${p} = ${tilde(where.replace(`${dir}/`, ''))}${version ? ` (${version.trim()})` : ''}` : `${p} not found`);
      }
      return true;
    },
    checkout,
  );
  if (ran === null) return { id, status: 'ok', detail: `${mounted}; the programs are not probed: the repository has no commit yet` };
  if (!ran) return { id, status: 'ok', detail: `${mounted}; the programs are not probed: the checks' sandbox cannot start here` };
  return { id, status: 'ok', detail: `${mounted}; the checks run ${runs.join(', ')}` };
}

/** Polly's runtime state in `.polly/`, each of which `.polly/.gitignore` (brain/commands/init.ts) keeps out of git. */
const POLLY_STATE_PATHS = ['.polly/registry.json', '.polly/journal.jsonl', '.polly/runs/'];
/** What `polly init` writes to be committed. */
const POLLY_COMMITTED_FILES = ['.polly/config.yaml', '.polly/config.schema.json', '.polly/.gitignore'];

/**
 * Is `.polly/` in git the way it should be? Polly reads `.polly/config.yaml` from the main
 * checkout (workers/git/repo.ts `findRepo` resolves a linked worktree to it), so a worktree never
 * needs the config committed; but an uncommitted config exists only in this checkout: a fresh clone,
 * a teammate or CI runs with the defaults. Runtime state (registry, journal, run store) must be
 * ignored (`.polly/.gitignore`) and never tracked: a `git add -A` would commit it, and a tracked
 * registry would go into every worktree and PR. Read with `git ls-files`, `git status` and
 * `git check-ignore` (https://git-scm.com/docs/git-check-ignore: exit 0 ignored, 1 not).
 * @returns the `polly-files` line: ok, or a problem naming the files and the commands that fix it.
 */
export async function pollyFilesCheck(git: GitRunner, root: string): Promise<DoctorCheck> {
  const id = 'polly-files';
  if (!existsSync(join(root, '.polly'))) return { id, status: 'ok', detail: 'no .polly/ yet (polly init writes it)' };
  const tracked = (await git.run(['ls-files', '-z', '--', '.polly'], { cwd: root })).stdout.split('\0').filter(Boolean);
  const trackedState = tracked.filter((f) => POLLY_STATE_PATHS.some((s) => (s.endsWith('/') ? f.startsWith(s) : f === s)));
  const present = POLLY_STATE_PATHS.filter((p) => existsSync(join(root, p)) && !trackedState.some((f) => f === p || f.startsWith(p)));
  const notIgnored: string[] = [];
  for (const p of present) {
    const r = await git.run(['check-ignore', '-q', '--no-index', '--', p], { cwd: root, okExitCodes: [1] });
    if (r.exitCode === 1) notIgnored.push(p);
  }
  // Anything else under .polly/ that git would add is state too (a newer Polly writes more of it,
  // e.g. base-checks/, than an older init's .gitignore names): untracked, not ignored, not one of
  // the files init means to be committed. Named by their entry in .polly/ (a directory once, `dir/`).
  const others = (await git.run(['ls-files', '-z', '--others', '--exclude-standard', '--', '.polly'], { cwd: root })).stdout.split('\0').filter(Boolean);
  for (const f of others) {
    if (POLLY_COMMITTED_FILES.includes(f)) continue;
    const parts = f.split('/');
    const entry = parts.length > 2 ? `${parts[0]}/${parts[1]}/` : f;
    if (!notIgnored.some((p) => entry === p || entry.startsWith(p))) notIgnored.push(entry);
  }
  const status = (await git.run(['status', '--porcelain=v1', '-z', '--untracked-files=all', '--', ...POLLY_COMMITTED_FILES], { cwd: root })).stdout
    .split('\0')
    .filter((e) => e.length > 3 && !e.slice(0, 2).includes('D')) // a deleted .gitignore: the not-ignored line says what to do
    .map((e) => ({ path: e.slice(3), untracked: e.startsWith('??') }));
  const details: string[] = [];
  const fixes: string[] = [];
  if (trackedState.length > 0) {
    details.push(`git tracks Polly's runtime state (${trackedState.slice(0, 5).join(', ')}${trackedState.length > 5 ? ', …' : ''}): every worktree and PR would carry it`);
    fixes.push(
      `git rm -r --cached --quiet ${[...new Set(trackedState.map((f) => (f.startsWith('.polly/runs/') ? '.polly/runs' : f)))].join(' ')} && git commit -m "Stop tracking Polly state"`,
    );
  }
  if (notIgnored.length > 0) {
    details.push(`git does not ignore Polly's runtime state (${notIgnored.join(', ')}): a "git add -A" would commit it`);
    fixes.push(existsSync(join(root, '.polly/.gitignore')) ? 'add those paths to .polly/.gitignore' : 'run polly init (it writes .polly/.gitignore, which ignores them)');
  }
  if (status.length > 0) {
    const files = status.map((e) => `${e.path} (${e.untracked ? 'untracked' : 'changed'})`).join(', ');
    details.push(
      `not committed: ${files}. Polly reads the config from this checkout, so runs here use it and worktrees do not need it; but a fresh clone, a teammate or CI gets ${status.some((e) => e.untracked) ? 'none and runs with the defaults' : 'the committed version'}`,
    );
    fixes.push(`git add ${status.map((e) => e.path).join(' ')} && git commit -m "Polly config"`);
  }
  if (details.length === 0)
    return { id, status: 'ok', detail: `${tracked.filter((f) => POLLY_COMMITTED_FILES.includes(f)).join(', ') || 'no config'} committed; runtime state ignored` };
  return { id, status: 'problem', detail: details.join('; '), fix: fixes.join('; ') };
}

/**
 * Run every check for the repository containing `cwd`.
 * @param probe    the sandbox probe (default {@link doctorSandboxProbe}); a parameter so tests can give a machine without one.
 * @param options  `isRoot`: whether Polly runs as root (default `process.getuid() === 0`).
 * @throws PollyError `not_a_git_repo` outside a repository. A bad config is a problem line, not an error.
 */
export async function runDoctor(
  cwd: string,
  env: NodeJS.ProcessEnv,
  probe: (env: NodeJS.ProcessEnv) => SandboxProbe = doctorSandboxProbe,
  options: { isRoot?: boolean } = {},
): Promise<DoctorReport> {
  const repo = await findRepo(cwd, env);
  const git = createGitRunner({ baseEnv: env });
  const checks: DoctorCheck[] = [];
  let config: PollyConfig | null = null;
  try {
    config = await loadConfig(repo.root);
    checks.push({
      id: 'config',
      status: 'ok',
      detail: existsSync(join(repo.pollyDir, 'config.yaml')) ? '.polly/config.yaml is valid' : 'no .polly/config.yaml: the defaults apply (polly init writes one)',
    });
  } catch (error) {
    if (!isPollyError(error, 'config_invalid')) throw error;
    checks.push({ id: 'config', status: 'problem', detail: error.message });
  }
  const effective = config ?? DEFAULT_CONFIG;
  checks.push(...(await agentChecks(effective, env, repo.root)));
  checks.push(...credentialChecks(effective, env));
  checks.push(rootCheck(effective, options.isRoot ?? process.getuid?.() === 0));
  const sandbox = probe(env);
  checks.push(
    sandbox.ok ? { id: 'sandbox', status: 'ok', detail: `bubblewrap works (${sandbox.bwrap})` } : { id: 'sandbox', status: 'problem', detail: sandbox.reason, fix: sandbox.fix },
  );
  if (sandbox.ok) checks.push(boundsCheck(effective));
  const identity = await resolveCommitIdentity(git, repo.root, env);
  const fallback = identity.author.source === 'polly fallback' || identity.committer.source === 'polly fallback';
  checks.push({
    id: 'identity',
    status: fallback ? 'problem' : 'ok',
    detail: `commits by ${describeIdentity(identity)}`,
    ...(fallback ? { fix: 'git config user.name "Your Name" && git config user.email you@example.com (or export GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL)' } : {}),
  });
  checks.push(notificationCheck(effective, env));
  checks.push(await behindCheck(git, repo.root));
  checks.push(await forgeCheck(git, repo.root, effective));
  checks.push(worktreeVisibilityCheck(repo.root, effective));
  checks.push(await worktreesCollectedCheck(repo.root, effective, env, sandbox));
  const missingFiles = commandProblems(repo.root, effective.acceptance.commands);
  const hiddenPrograms = sandbox.ok && !effective.workers.allow_unconfined ? programsHiddenBySandbox(repo.root, effective.acceptance.commands, env) : [];
  const problems = [...missingFiles, ...hiddenPrograms];
  checks.push(
    problems.length === 0
      ? {
          id: 'acceptance',
          status: 'ok',
          detail:
            effective.acceptance.commands.length > 0
              ? `acceptance.commands can run here: ${effective.acceptance.commands.join('; ')}`
              : 'acceptance.commands is empty: each plan task names its own',
        }
      : {
          id: 'acceptance',
          status: 'problem',
          detail: problems.map((p) => `"${p.command}" needs ${p.missing}`).join('; '),
          fix: [
            ...(missingFiles.length > 0 ? ['set acceptance.commands in .polly/config.yaml to commands this project has (polly init detects them in a fresh repository)'] : []),
            ...new Set(hiddenPrograms.map((h) => h.advice)),
          ].join('; '),
        },
  );
  // One checkout of HEAD for both probes (a task's view of the repository: inDoctorCheckout).
  const probeChecks = async (checkout?: string): Promise<DoctorCheck[]> => [
    await toolchainCheck(repo.root, effective, env, sandbox, checkout),
    problems.length === 0
      ? await acceptanceRunnerCheck(repo.root, effective, env, sandbox, checkout)
      : { id: 'acceptance-runner', status: 'ok', detail: 'not probed: see the acceptance line' },
  ];
  checks.push(...((await inDoctorCheckout(repo.root, effective, probeChecks)) ?? (await probeChecks())));
  checks.push(await pollyFilesCheck(git, repo.root));
  if ((effective.workers.hosts ?? []).length > 0) for (const h of await checkHosts(effective, env)) checks.push(...h.checks);
  const changes = await uncommittedChanges(git, repo.root);
  checks.push(
    changes.length === 0
      ? { id: 'uncommitted', status: 'ok', detail: 'no uncommitted changes in the main checkout' }
      : {
          id: 'uncommitted',
          status: 'problem',
          detail: `${changes.length} uncommitted change(s) that no worktree will get: ${changes.slice(0, 10).join(', ')}${changes.length > 10 ? ', …' : ''}`,
          fix: 'commit (or stash) them before a run if the workers need them',
        },
  );
  return { repoRoot: repo.root, ok: checks.every((c) => c.status === 'ok'), checks };
}

export const command: Command = {
  summary: 'check this repository and machine for Polly (config, agents, sandbox, git)',
  usage: `Usage: polly doctor [--json]

Checks, one line each (ok, or PROBLEM with what to do):
  config              .polly/config.yaml validates (unknown keys, wrong types)
  agent:<harness>     claude, codex and pi are found and answer --version
  credentials:<harness>  the model key variable each harness reads is set (names only, never values)
  root                as root, Claude Code needs workers.claude-code.allow_root_sandbox: true
  sandbox             bubblewrap can start a sandbox on this machine
  identity            the git identity Polly's commits will carry, and where it comes from
  default-branch      the default branch is not behind origin (as of the last fetch)
  forge               where PRs go (GitHub or the local forge), and that origin exists to push to
  worktrees-visible   vitest, jest, eslint, node --test and pytest will not crawl the worktrees
                      (each found config is named with its exclusion; none can when worktrees.dir is outside)
  worktrees-collected the proof: with a probe worktree in place, vitest list, jest --listTests,
                      pytest --collect-only and the files node --test would run name nothing in it
  acceptance          acceptance.commands can run in this repository
  toolchains          the toolchains under HOME bound read-only into the sandbox (rustup, pyenv, nvm, …),
                      and which program and version each acceptance/setup command runs there
  acceptance-runner   each command's runner (program, python -m module) starts in the checks' sandbox
  polly-files         .polly/config.yaml is committed (a fresh clone has it) and Polly's state is ignored
  uncommitted         no uncommitted work in the main checkout (worktrees start from a commit)
  host:<name>:<what>  each host of workers.hosts, over SSH: reachable, the same Polly build, node, git,
                      the agent CLIs, Polly's sandbox there, the model keys sent from here (names only),
                      clock skew (the same lines as polly hosts check)

Options:
  --json   print {repoRoot, ok, checks: [{id, status, detail, fix?}]}

Exit codes: 0 every check ok; 1 a problem found; 2 not in a git repository or a bad flag.`,
  async run(argv, io) {
    const args = parseCommandArgs('doctor', argv, { json: { type: 'boolean' } }, 0);
    const report = await runDoctor(io.cwd, io.env);
    if (args.values.json) writeJson(io.stdout, report);
    else {
      writeLine(io.stdout, `Polly doctor for ${report.repoRoot}`);
      for (const c of report.checks) {
        writeLine(io.stdout, `  ${c.status === 'ok' ? 'ok     ' : 'PROBLEM'} ${c.id}: ${c.detail}`);
        if (c.fix) writeLine(io.stdout, `          fix: ${c.fix}`);
      }
      const n = report.checks.filter((c) => c.status !== 'ok').length;
      writeLine(io.stdout, n === 0 ? 'All checks passed.' : `${n} problem(s) found.`);
    }
    return report.ok ? 0 : 1;
  },
};

/**
 * Whether a remote URL is a relative filesystem path (`../x.git`, `x.git`): not a URL with a
 * scheme (`https://`, `ssh://`, `file://`), not git's scp-like `[user@]host:path`, not absolute.
 * Forms from git-clone(1), "GIT URLS" (https://git-scm.com/docs/git-clone#_git_urls).
 */
export function isRelativeLocalPath(url: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || url.startsWith('/')) return false;
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  return !(colon > 0 && (slash === -1 || colon < slash)); // scp-like: a colon before the first slash
}
