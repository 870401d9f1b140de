/**
 * Can an acceptance check run at all? A check whose runner, interpreter or module is missing fails
 * the same way every time, whatever the agent changes: it is the environment, not the code, and
 * sending it back to the agent as red tests only spends attempts.
 *
 * Two pure parts and one probe:
 * - {@link classifyCannotRun}: a finished check's exit code and output against well-known
 *   signatures: the shell's 127 (command not found) and 126 (found, not executable) (POSIX `sh`,
 *   "Command Search and Execution":
 *   https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_09_01_01);
 *   a Python interpreter's own `<python>: No module named X` line for `-m X`
 *   (https://docs.python.org/3/using/cmdline.html#cmdoption-m); GNU make's `Error 127` for a recipe
 *   command not found (https://www.gnu.org/software/make/manual/html_node/Errors.html); Node's
 *   `Cannot find module` for the entry script (an empty `requireStack`:
 *   https://nodejs.org/api/modules.html) and `Cannot find package` imported from a file inside
 *   `node_modules` (a runner's own dependency not installed; one missing for the project's own code
 *   is the code's: `ERR_MODULE_NOT_FOUND`, https://nodejs.org/api/errors.html#err_module_not_found);
 *   Bundler's `command not found` and `Could not find gem`; cargo's `no such command` (a cargo
 *   plugin such as nextest not installed).
 * - {@link runnerProbe}: a shell command that exits 0 iff the check's runner can start: its
 *   program is on PATH (or the relative path exists and is executable), and for `python -m X` the
 *   module is importable (`importlib.util.find_spec`, which does not import it). Run in the same
 *   sandbox as the checks, it answers for the checks' environment, before any round (polly doctor)
 *   or after a red one whose output matched no signature.
 */
import type { CommandResult } from './proc/shell-command.js';

/** Why a check cannot run. */
export interface CannotRun {
  /** `not_found` (127), `not_executable` (126), `missing_module` (an interpreter's module), `missing_dependencies` (node_modules, gems, a cargo plugin). */
  kind: 'not_found' | 'not_executable' | 'missing_module' | 'missing_dependencies';
  /** What is missing, e.g. `the program "python"`, `the Python module pytest (for /usr/bin/python3)`. */
  missing: string;
  /** The output line that shows it (≤ 200 characters), or null. */
  evidence: string | null;
  /** What to do, in one sentence. */
  fix: string;
}

const clip = (line: string) => line.trim().slice(0, 200);

/** The program a command line starts: its first word after `NAME=value` assignments (and `exec`/`env`). */
export function commandProgram(command: string): string | null {
  const words = (command.split(/&&|\|\||;|\|/)[0] ?? '').trim().split(/\s+/).filter(Boolean);
  while (words.length > 0 && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!) || words[0] === 'exec' || words[0] === 'env')) words.shift();
  return words[0] ?? null;
}

/** `<python> -m <module>` at the start of a command: the interpreter and the module, or null. */
export function pythonModuleOf(command: string): { python: string; module: string } | null {
  const program = commandProgram(command);
  if (program === null || !/(^|\/)python[\d.]*$/.test(program)) return null;
  const rest = command
    .slice(command.indexOf(program) + program.length)
    .trim()
    .split(/\s+/);
  const m = rest.indexOf('-m');
  const module = m >= 0 ? rest[m + 1] : undefined;
  return module && /^[A-Za-z_][\w.]*$/.test(module) ? { python: program, module } : null;
}

/**
 * Python test and lint runners run with `-m`: missing, they are the environment's. Another module
 * missing for `-m` may be the project's own that the task is to write, so it counts only when the
 * project declares it as a dependency (the `declared` argument of {@link classifyCannotRun}).
 */
export const PYTHON_RUNNERS: readonly string[] = [
  'pytest',
  'nose2',
  'tox',
  'nox',
  'coverage',
  'mypy',
  'ruff',
  'flake8',
  'pylint',
  'black',
  'isort',
  'behave',
  'robot',
  'hatch',
  'poetry',
  'uv',
];

const PYTHON_NO_MODULE = /^(\S*python[\d.]*): (?:No module named (\S+)|Error while finding module specification for '([^']+)')/m;
const MAKE_127 = /^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error 127$/m;
const SHELL_NOT_FOUND = /^(?:.*: )?(\S+): (?:command )?not found$/m;
const NODE_ENTRY_MISSING = /Error: Cannot find module '([^']+)'[\s\S]*?requireStack: \[\]/;
/** A package missing for a file inside node_modules (a runner's own import: the install is broken), not for the project's code. */
const NODE_PACKAGE_MISSING = /Cannot find package '([^']+)' imported from \S*\/node_modules\//;
const MAKE_NO_FILE = /^make(?:\[\d+\])?: (\S+): No such file or directory$/m;
const BUNDLER_MISSING = /^bundler: command not found: (\S+)|Could not find gem '([^']+)'|Could not find (\S+) in locally installed gems/m;
const CARGO_NO_COMMAND = /^error: no such command: `([^`]+)`/m;

const INSTALL_PROGRAM =
  "install it where Polly runs, outside your home directory and /tmp (Polly's sandbox hides HOME but for the toolchain directories it binds back read-only: rustup, pyenv, nvm, volta, asdf, mise, ~/.local/bin, Go, bun, deno and the PATH directories under HOME; and it gives each command a private, empty /tmp, so a virtualenv under /tmp is not found either), or with one of those managers: a system package, or a virtualenv or node_modules/.bin inside the repository that worktrees.setup creates";

/**
 * Directories the checks' sandbox hides or replaces (workers/sandbox/sandbox-spec.ts mounts a
 * private tmpfs on /tmp; workers/sandbox/sandbox-profiles.ts `commonHidden` hides HOME and /run),
 * for a program named by an absolute path in one of them: what is actually wrong.
 */
const HIDDEN_PLACES: ReadonlyArray<{ prefix: RegExp; why: string }> = [
  { prefix: /^\/(?:var\/)?tmp\//, why: "is under /tmp, which Polly's sandbox replaces with a private, empty /tmp for every command, so it is not there when the check runs" },
  {
    prefix: /^\/(?:root|home\/[^/]+)\//,
    why: "is under a home directory, which Polly's sandbox hides but for the toolchain directories it binds back (rustup, pyenv, nvm, ~/.local/bin, the PATH directories under HOME), so it is not there when the check runs",
  },
  { prefix: /^\/run\//, why: "is under /run, which Polly's sandbox hides (host sockets), so it is not there when the check runs" },
];

/** A virtualenv's or node_modules' program by relative path: untracked, so no new worktree has it. */
const UNTRACKED_ENV = /^(?:\.\/)?((?:\.?venv|env|\.tox|virtualenv)[^/]*|node_modules)\//;

function notFoundFix(program: string): string {
  const hidden = HIDDEN_PLACES.find((h) => h.prefix.test(program));
  if (hidden) {
    const python = /(^|\/)python[\d.]*$/.test(program);
    return `${program} ${hidden.why}: ${python ? 'make the virtualenv outside /tmp and outside HOME from a system python (/usr/bin/python3 -m venv /opt/venvs/NAME && /opt/venvs/NAME/bin/pip install pytest) and use /opt/venvs/NAME/bin/python, or create .venv in worktrees.setup and use .venv/bin/python' : 'install it outside /tmp and outside HOME (a system package, or /opt) and name that path, or create it inside the worktree with worktrees.setup'}`;
  }
  const env = UNTRACKED_ENV.exec(program);
  if (!env) return INSTALL_PROGRAM;
  return env[1] === 'node_modules'
    ? 'node_modules is untracked, so a new worktree has none: set worktrees.setup to install it (npm ci --prefer-offline with a committed package-lock.json) with worktrees.setup_network: true'
    : `${env[1]}/ is untracked, so a new worktree has none: create it in worktrees.setup (e.g. /usr/bin/python3 -m venv ${env[1]} && ${env[1]}/bin/pip install -r requirements.txt, with worktrees.setup_network: true), or use a virtualenv outside the repository and outside HOME by absolute path`;
}

/**
 * Classify a finished, failed check (pure; see the module doc for the signatures).
 * @param result    the check's result (exit code and output tail). A green or timed-out check is never classified.
 * @param declared  whether the project declares a Python distribution of that name (its requirements, pyproject…).
 * @returns why the check cannot run, or null when its failure looks like the code's.
 */
export function classifyCannotRun(
  result: Pick<CommandResult, 'command' | 'exitCode' | 'timedOut' | 'output'>,
  declared: (module: string) => boolean = () => false,
): CannotRun | null {
  if (result.exitCode === 0 || result.timedOut) return null;
  const out = result.output;
  if (result.exitCode === 127) {
    const line = SHELL_NOT_FOUND.exec(out);
    const program = line?.[1] ?? commandProgram(result.command) ?? result.command;
    return { kind: 'not_found', missing: `the program "${program}"`, evidence: line ? clip(line[0]) : null, fix: notFoundFix(program) };
  }
  if (result.exitCode === 126) {
    const program = commandProgram(result.command) ?? result.command;
    const line = out.split('\n').find((l) => /permission denied|cannot execute/i.test(l));
    return {
      kind: 'not_executable',
      missing: `an executable "${program}"`,
      evidence: line ? clip(line) : null,
      fix: `make it executable and commit that (git update-index --chmod=+x ${program}), or run it through its interpreter (e.g. sh ${program})`,
    };
  }
  const py = PYTHON_NO_MODULE.exec(out);
  const expected = pythonModuleOf(result.command);
  const pyModule = py?.[2] ?? py?.[3] ?? expected?.module ?? '';
  const top = pyModule.split('.')[0]!;
  if (py && expected && (PYTHON_RUNNERS.includes(top) || declared(top))) {
    const module = pyModule;
    return {
      kind: 'missing_module',
      missing: `the Python module ${module} (for ${py[1]})`,
      evidence: clip(py[0]),
      fix: `install ${module} for that interpreter (Debian/Ubuntu: apt-get install python3-${module.split('.')[0]}; or pip install ${module} into a virtualenv outside HOME) and point acceptance.commands at it (e.g. /usr/bin/python3 -m ${expected.module}, or .venv/bin/python -m ${expected.module} with worktrees.setup creating .venv)`,
    };
  }
  const make = MAKE_127.exec(out);
  if (make) {
    const line = SHELL_NOT_FOUND.exec(out) ?? MAKE_NO_FILE.exec(out);
    return {
      kind: 'not_found',
      missing: line ? `the program "${line[1]}" (a recipe of make)` : 'a program a make recipe runs',
      evidence: clip(line?.[0] ?? make[0]),
      fix: INSTALL_PROGRAM,
    };
  }
  const entry = NODE_ENTRY_MISSING.exec(out);
  const pkg = NODE_PACKAGE_MISSING.exec(out);
  if (entry?.[1]?.includes('node_modules') || pkg) {
    const what = pkg ? `the package ${pkg[1]}` : `${entry![1]}`;
    return {
      kind: 'missing_dependencies',
      missing: `${what} (node_modules is not installed where the check runs)`,
      evidence: clip((pkg ?? entry)![0].split('\n')[0]!),
      fix: 'install the dependencies in each worktree: set worktrees.setup (npm ci --prefer-offline with a committed package-lock.json; polly init writes it) with worktrees.setup_network: true',
    };
  }
  const gem = BUNDLER_MISSING.exec(out);
  if (gem) {
    return {
      kind: 'missing_dependencies',
      missing: `the gem ${gem[1] ?? gem[2] ?? gem[3]}`,
      evidence: clip(gem[0]),
      fix: 'install the gems: set worktrees.setup to bundle install (with worktrees.setup_network: true), or bundle install where Polly runs',
    };
  }
  const cargo = CARGO_NO_COMMAND.exec(out);
  if (cargo) {
    return {
      kind: 'missing_dependencies',
      missing: `the cargo subcommand ${cargo[1]}`,
      evidence: clip(cargo[0]),
      fix: `install it where Polly runs (cargo install cargo-${cargo[1]}: ~/.cargo/bin is bound read-only into the sandbox, and keep it on PATH), or change the command`,
    };
  }
  return null;
}

/** Single-quote `s` for `sh`. */
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A shell command that exits 0 iff `command`'s runner can start (see the module doc), printing
 * `<program>: not found` (exit 127) or the interpreter's `No module named X` line (exit 1) when not;
 * null for a command without a program to look for (empty, or a shell builtin/compound).
 */
export function runnerProbe(command: string): string | null {
  const program = commandProgram(command);
  if (program === null || /^[({!]|^(if|for|while|case|test|\[|true|false|cd|exit)$/.test(program)) return null;
  const find = program.includes('/')
    ? `[ -x ${shq(program)} ] || { echo ${shq(`${program}: not found`)} >&2; exit 127; }`
    : `command -v ${shq(program)} >/dev/null 2>&1 || { echo ${shq(`${program}: not found`)} >&2; exit 127; }`;
  const py = pythonModuleOf(command);
  if (!py) return find;
  const spec = `import importlib.util, sys\nname = ${JSON.stringify(py.module)}\nif importlib.util.find_spec(name) is None:\n    sys.stderr.write(sys.executable + ": No module named " + name + "\\n")\n    sys.exit(1)`;
  return `${find} && ${shq(py.python)} -c ${shq(spec)}`;
}
