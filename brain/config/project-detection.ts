/**
 * What kind of project a repository is, read from the files its ecosystems use, and the
 * acceptance and setup commands that fit it: what `polly init` writes into `.polly/config.yaml`,
 * and what dispatch checks a command against before it spends an agent attempt.
 *
 * The files and what they mean:
 * - `package.json` (https://docs.npmjs.com/cli/v11/configuring-npm/package-json#scripts) with its
 *   `scripts`; the lockfile names the package manager: `package-lock.json`/`npm-shrinkwrap.json`
 *   (npm, `npm ci`: https://docs.npmjs.com/cli/v11/commands/npm-ci), `pnpm-lock.yaml`
 *   (`pnpm install --frozen-lockfile`), `yarn.lock` (`yarn install --frozen-lockfile`, or
 *   `--immutable` with a `.yarnrc.yml`, Yarn 2+), `bun.lock`/`bun.lockb` (`bun install --frozen-lockfile`).
 *   Without a lockfile `npm ci` fails ("can only install with an existing package-lock.json"), so
 *   the setup is `npm install --no-package-lock`; a package without dependencies needs no setup.
 *   npm gets `--prefer-offline` (https://docs.npmjs.com/cli/v11/using-npm/config#prefer-offline):
 *   a second worktree installs from npm's cache without asking the registry.
 * - Python: `pyproject.toml`, `setup.cfg`, `setup.py`, `tox.ini`, `pytest.ini`; tests run with
 *   `python -m pytest` (https://docs.pytest.org/en/stable/how-to/usage.html: it also puts the
 *   current directory on `sys.path`). Setup only when a lockfile names the tool (`uv.lock`: `uv sync`,
 *   `poetry.lock`: `poetry install`); otherwise Polly leaves the environment to the user.
 * - Go: `go.mod` → `go test ./...`. Rust: `Cargo.toml` → `cargo test`. Both fetch on demand.
 * - `Makefile`/`makefile`/`GNUmakefile` with a `test:` target → `make test`, which then replaces the
 *   language commands: it is the project's own statement of how its tests run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One ecosystem found in the repository. */
export interface DetectedEcosystem {
  kind: 'npm' | 'pnpm' | 'yarn' | 'bun' | 'python' | 'go' | 'rust' | 'make';
  /** The files that showed it, relative to the repository root. */
  evidence: string[];
  /** The test command it contributes, or null (e.g. a package.json without a test script). */
  test: string | null;
  /** The setup command it contributes (dependencies into a new worktree), or null. */
  setup: string | null;
  /** What the user should know (e.g. why no setup was chosen). */
  notes: string[];
}

/** What `polly init` writes, and why. */
export interface ProjectDetection {
  ecosystems: DetectedEcosystem[];
  /** `acceptance.commands` for the config: the test commands found ([] when none). */
  acceptanceCommands: string[];
  /** `worktrees.setup`: the setup commands joined with ` && `, or null. */
  setup: string | null;
}

const MAKEFILES = ['GNUmakefile', 'makefile', 'Makefile'];
/** npm's placeholder test script (`npm init`): it always fails, so it is not a test command. */
const NPM_PLACEHOLDER_TEST = /no test specified/;

function readText(root: string, file: string): string | null {
  try {
    return readFileSync(join(root, file), 'utf8');
  } catch {
    return null;
  }
}

interface PackageJson {
  scripts?: unknown;
  dependencies?: unknown;
  devDependencies?: unknown;
  optionalDependencies?: unknown;
}

function readPackageJson(root: string): PackageJson | null {
  const text = readText(root, 'package.json');
  if (text === null) return null;
  try {
    const pkg = JSON.parse(text) as unknown;
    return typeof pkg === 'object' && pkg !== null ? (pkg as PackageJson) : {};
  } catch {
    return {};
  }
}

/** The scripts of `<root>/package.json`, or null when there is no package.json. */
export function packageScripts(root: string): Record<string, string> | null {
  const pkg = readPackageJson(root);
  if (pkg === null) return null;
  if (typeof pkg.scripts !== 'object' || pkg.scripts === null) return {};
  return Object.fromEntries(Object.entries(pkg.scripts).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** True when a makefile in `root` defines `target` (a rule line `target:` or `target ... :`, not `target :=`). */
export function makeHasTarget(root: string, target: string): boolean {
  for (const name of MAKEFILES) {
    const text = readText(root, name);
    if (text === null) continue;
    const rule = new RegExp(`^(?:[^\\s:#=]+\\s+)*${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:\\s+[^\\s:#=]+)*\\s*::?(?!=)`, 'm');
    if (rule.test(text)) return true;
  }
  return false;
}

function detectNode(root: string): DetectedEcosystem | null {
  const pkg = readPackageJson(root);
  const scripts = packageScripts(root);
  if (pkg === null || scripts === null) return null;
  const hasDeps = [pkg.dependencies, pkg.devDependencies, pkg.optionalDependencies].some((d) => typeof d === 'object' && d !== null && Object.keys(d).length > 0);
  const has = (f: string) => existsSync(join(root, f));
  let kind: DetectedEcosystem['kind'] = 'npm';
  let setup: string;
  const evidence = ['package.json'];
  const notes: string[] = [];
  if (has('pnpm-lock.yaml')) {
    kind = 'pnpm';
    setup = 'pnpm install --frozen-lockfile';
    evidence.push('pnpm-lock.yaml');
  } else if (has('yarn.lock')) {
    kind = 'yarn';
    setup = has('.yarnrc.yml') ? 'yarn install --immutable' : 'yarn install --frozen-lockfile';
    evidence.push('yarn.lock');
  } else if (has('bun.lock') || has('bun.lockb')) {
    kind = 'bun';
    setup = 'bun install --frozen-lockfile';
    evidence.push(has('bun.lock') ? 'bun.lock' : 'bun.lockb');
  } else if (has('package-lock.json') || has('npm-shrinkwrap.json')) {
    setup = 'npm ci --prefer-offline --no-audit --no-fund';
    evidence.push(has('package-lock.json') ? 'package-lock.json' : 'npm-shrinkwrap.json');
  } else {
    // --no-package-lock: the worktree gains no package-lock.json that Polly's commit would pick up.
    setup = 'npm install --no-package-lock --prefer-offline --no-audit --no-fund';
    if (hasDeps) notes.push('no lockfile: setup is "npm install" (npm ci needs package-lock.json); commit a lockfile for repeatable worktrees');
  }
  const testScript = scripts.test;
  const test = testScript !== undefined && !NPM_PLACEHOLDER_TEST.test(testScript) ? `${kind} test` : null;
  if (test === null) notes.push(testScript === undefined ? 'package.json has no "test" script' : 'package.json\'s "test" script is npm\'s placeholder');
  if (!hasDeps) notes.push('no dependencies: no setup command');
  return { kind, evidence, test, setup: hasDeps ? setup : null, notes };
}

function detectPython(root: string): DetectedEcosystem | null {
  const evidence = ['pyproject.toml', 'setup.cfg', 'setup.py', 'tox.ini', 'pytest.ini'].filter((f) => existsSync(join(root, f)));
  if (evidence.length === 0) return null;
  const notes: string[] = [];
  let setup: string | null = null;
  if (existsSync(join(root, 'uv.lock'))) {
    setup = 'uv sync';
    evidence.push('uv.lock');
  } else if (existsSync(join(root, 'poetry.lock'))) {
    setup = 'poetry install';
    evidence.push('poetry.lock');
  } else {
    notes.push('no uv.lock or poetry.lock: no setup command; the worktrees use the Python environment Polly runs in');
  }
  return { kind: 'python', evidence, test: 'python -m pytest', setup, notes };
}

/**
 * Detect the project in `root` (a checkout; only files at its top level are read).
 * @returns the ecosystems found and the commands for `acceptance.commands` and `worktrees.setup`.
 */
export function detectProject(root: string): ProjectDetection {
  const ecosystems: DetectedEcosystem[] = [];
  const node = detectNode(root);
  if (node) ecosystems.push(node);
  const python = detectPython(root);
  if (python) ecosystems.push(python);
  if (existsSync(join(root, 'go.mod'))) ecosystems.push({ kind: 'go', evidence: ['go.mod'], test: 'go test ./...', setup: null, notes: [] });
  if (existsSync(join(root, 'Cargo.toml'))) ecosystems.push({ kind: 'rust', evidence: ['Cargo.toml'], test: 'cargo test', setup: null, notes: [] });
  const makefile = MAKEFILES.find((f) => existsSync(join(root, f)));
  const makeTest = makefile !== undefined && makeHasTarget(root, 'test');
  if (makefile && makeTest) ecosystems.push({ kind: 'make', evidence: [makefile], test: 'make test', setup: null, notes: [] });
  const tests = makeTest ? ['make test'] : ecosystems.map((e) => e.test).filter((t): t is string => t !== null);
  const setups = ecosystems.map((e) => e.setup).filter((s): s is string => s !== null);
  return { ecosystems, acceptanceCommands: tests, setup: setups.length > 0 ? setups.join(' && ') : null };
}

/** A command that cannot run in the repository, and why. */
export interface CommandProblem {
  command: string;
  /** What is missing, e.g. `package.json` or `the "test" script in package.json`. */
  missing: string;
}

/** `npm`, `pnpm`, `yarn`, `bun`: the script a command runs (`npm test`, `npm run lint`, `yarn build`), or null. */
function scriptOf(words: string[]): string | null {
  const [, sub, name] = words;
  if (sub === undefined) return null;
  if (sub === 'test' || sub === 't' || sub === 'tst') return 'test';
  if ((sub === 'run' || sub === 'run-script') && name !== undefined && !name.startsWith('-')) return name;
  return null;
}

/**
 * The commands among `commands` whose program cannot exist in `root`: a package manager
 * (npm, pnpm, yarn, bun) without `package.json` or without the script it runs; `cargo` without
 * `Cargo.toml`; `go test|build|vet` without `go.mod` or `go.work`; `make <target>` without a
 * makefile defining it. Each command is read up to its first `&&`, `||`, `;` or `|`, after any
 * leading `VAR=value` words and `cd` is not followed. Other programs are not judged (they may be
 * installed on the machine).
 * @returns one problem per command that cannot run; [] when all may.
 */
export function commandProblems(root: string, commands: readonly string[]): CommandProblem[] {
  const problems: CommandProblem[] = [];
  for (const command of commands) {
    const words = (command.split(/&&|\|\||;|\|/)[0] ?? '').trim().split(/\s+/).filter(Boolean);
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
    const program = words[0];
    if (program === undefined) continue;
    const missing = (what: string) => problems.push({ command, missing: what });
    if (['npm', 'pnpm', 'yarn', 'bun'].includes(program)) {
      const scripts = packageScripts(root);
      const script = scriptOf(words);
      if (scripts === null) missing('package.json');
      else if (script !== null && scripts[script] === undefined && !(program === 'bun' && script === 'test')) missing(`the "${script}" script in package.json`);
    } else if (program === 'cargo' && !existsSync(join(root, 'Cargo.toml'))) missing('Cargo.toml');
    else if (program === 'go' && ['test', 'build', 'vet'].includes(words[1] ?? '') && !existsSync(join(root, 'go.mod')) && !existsSync(join(root, 'go.work'))) missing('go.mod');
    else if (program === 'make') {
      const target = words.slice(1).find((w) => !w.startsWith('-') && !w.includes('='));
      if (!MAKEFILES.some((f) => existsSync(join(root, f)))) missing('a Makefile');
      else if (target !== undefined && !makeHasTarget(root, target)) missing(`the "${target}" target in the Makefile`);
    }
  }
  return problems;
}
