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
 * - Python: a project file (`pyproject.toml`, `setup.cfg`, `setup.py`, `tox.ini`, `pytest.ini`,
 *   `requirements*.txt`, `Pipfile`), `conftest.py`, or test modules pytest collects by default
 *   (`test_*.py` / `*_test.py` at the top or in `tests/` / `test/`:
 *   https://docs.pytest.org/en/stable/explanation/goodpractices.html#test-discovery); tests run
 *   with `python -m pytest` (https://docs.pytest.org/en/stable/how-to/usage.html: it also puts the
 *   current directory on `sys.path`; pytest runs unittest-style tests too), or `python3 -m pytest`
 *   where PATH has no `python` (Debian and Ubuntu install only `python3`). Setup only when a
 *   lockfile names the tool (`uv.lock`: `uv sync`, `poetry.lock`: `poetry install`); otherwise Polly
 *   leaves the environment to the user, and says so when nothing declares pytest.
 * - Go: `go.mod` → `go test ./...`. Rust: `Cargo.toml` → `cargo test`. Both fetch on demand.
 * - Ruby: `Gemfile` → `bundle install`, then `bundle exec rspec` with `.rspec` or `spec/`, else
 *   `bundle exec rake test` with a `Rakefile` (https://bundler.io/man/bundle-exec.1.html).
 * - JVM: `gradlew` → `./gradlew test`, else `build.gradle[.kts]` → `gradle test`
 *   (https://docs.gradle.org/current/userguide/java_testing.html); `mvnw` → `./mvnw test`, else
 *   `pom.xml` → `mvn test` (https://maven.apache.org/guides/getting-started/#how-do-i-run-my-unit-tests).
 * - .NET: a `*.sln`, `*.csproj`, `*.fsproj` or `*.vbproj` at the top → `dotnet test`.
 * - Elixir `mix.exs` → `mix test` (setup `mix deps.get`); PHP `composer.json` → `composer test`
 *   when it has a `test` script, else `vendor/bin/phpunit` with `phpunit.xml[.dist]` (setup
 *   `composer install`); Deno `deno.json[c]` → `deno test`; Swift `Package.swift` → `swift test`;
 *   Dart `pubspec.yaml` → `dart test` (`flutter test` when it depends on flutter; setup `dart pub get`
 *   / `flutter pub get`); Zig `build.zig` → `zig build test`.
 * - `Makefile`/`makefile`/`GNUmakefile` with a `test:` target → `make test` (else a `check:` target,
 *   the GNU convention: `make check`), and a `justfile` with a `test` recipe → `just test`: each then
 *   replaces the language commands, as the project's own statement of how its tests run.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { whichExecutable } from '../../workers/sandbox/sandbox-executable.js';

/** One ecosystem found in the repository. */
export interface DetectedEcosystem {
  kind:
    | 'npm'
    | 'pnpm'
    | 'yarn'
    | 'bun'
    | 'python'
    | 'go'
    | 'rust'
    | 'ruby'
    | 'gradle'
    | 'maven'
    | 'dotnet'
    | 'elixir'
    | 'php'
    | 'deno'
    | 'swift'
    | 'dart'
    | 'zig'
    | 'make'
    | 'just';
  /** The files that showed it, relative to the repository root. */
  evidence: string[];
  /** The test command it contributes, or null (e.g. a package.json without a test script). */
  test: string | null;
  /** The setup command it contributes (dependencies into a new worktree), or null. */
  setup: string | null;
  /** What the user should know (e.g. why no setup was chosen). */
  notes: string[];
}

/**
 * Git's view of the repository's files, as a new worktree gets them: only tracked files are
 * checked out there. `untracked` holds the lockfiles that exist in the checkout but are not
 * tracked, each with why (`ignored by .gitignore:3: package-lock.json`, or `untracked`).
 * Built by {@link gitFileView}; absent, every file present counts as tracked.
 */
export interface GitFileView {
  untracked: ReadonlyMap<string, string>;
}

/** The lockfiles detection reads, whose being tracked decides the setup command. */
export const LOCKFILES: readonly string[] = ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb', 'uv.lock', 'poetry.lock'];

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

/** The note for lockfiles a worktree will not have (`view.untracked`), and the predicate that skips them. */
function lockfileFilter(root: string, view: GitFileView | undefined, notes: string[], what: string): (f: string) => boolean {
  return (f: string) => {
    if (!existsSync(join(root, f))) return false;
    const why = view?.untracked.get(f);
    if (why === undefined) return true;
    notes.push(`${f} is ${why}, so no worktree has it: ${what}; commit it for repeatable installs`);
    return false;
  };
}

function detectNode(root: string, view?: GitFileView): DetectedEcosystem | null {
  const pkg = readPackageJson(root);
  const scripts = packageScripts(root);
  if (pkg === null || scripts === null) return null;
  const hasDeps = [pkg.dependencies, pkg.devDependencies, pkg.optionalDependencies].some((d) => typeof d === 'object' && d !== null && Object.keys(d).length > 0);
  let kind: DetectedEcosystem['kind'] = 'npm';
  let setup: string;
  const evidence = ['package.json'];
  const notes: string[] = [];
  // A lockfile git ignores or does not track is in no worktree: `npm ci` there fails ("can only
  // install with an existing package-lock.json"), so it does not pick the install command.
  const has = lockfileFilter(root, view, notes, 'the setup does not use it (npm ci would fail in every worktree)');
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
    if (hasDeps && notes.length === 0) notes.push('no lockfile: setup is "npm install" (npm ci needs package-lock.json); commit a lockfile for repeatable worktrees');
  }
  const testScript = scripts.test;
  const test = testScript !== undefined && !NPM_PLACEHOLDER_TEST.test(testScript) ? `${kind} test` : null;
  if (test === null) notes.push(testScript === undefined ? 'package.json has no "test" script' : 'package.json\'s "test" script is npm\'s placeholder');
  if (!hasDeps) notes.push('no dependencies: no setup command');
  return { kind, evidence, test, setup: hasDeps ? setup : null, notes };
}

/** Python test modules pytest collects by default (`test_*.py`, `*_test.py`). */
const PY_TEST_FILE = /^(test_.*|.*_test)\.py$/;

function listDir(root: string, dir: string): string[] {
  try {
    return readdirSync(join(root, dir));
  } catch {
    return [];
  }
}

/**
 * The packages of a `src/` layout (https://packaging.python.org/en/latest/discussions/src-layout-vs-flat-layout/):
 * directories under `src/` holding an `__init__.py`, and top-level modules there. pytest cannot
 * import them until the project is installed or `src` is on `sys.path`.
 */
function srcPackages(root: string): string[] {
  return listDir(root, 'src')
    .filter((f) => existsSync(join(root, 'src', f, '__init__.py')) || (/\.py$/.test(f) && f !== 'conftest.py'))
    .map((f) => f.replace(/\.py$/, ''))
    .sort();
}

function detectPython(root: string, env: NodeJS.ProcessEnv, view?: GitFileView): DetectedEcosystem | null {
  const top = listDir(root, '.');
  const projectFiles = ['pyproject.toml', 'setup.cfg', 'setup.py', 'tox.ini', 'pytest.ini', 'Pipfile', 'conftest.py'].filter((f) => top.includes(f));
  const requirements = top.filter((f) => /^requirements.*\.txt$/.test(f)).sort();
  const tests = [
    ...top.filter((f) => PY_TEST_FILE.test(f)),
    ...['tests', 'test'].flatMap((d) =>
      listDir(root, d)
        .filter((f) => PY_TEST_FILE.test(f))
        .map((f) => `${d}/${f}`),
    ),
  ];
  const evidence = [...projectFiles, ...requirements, ...(tests.length > 0 ? [tests.length > 1 ? `${tests[0]!} and ${tests.length - 1} more test module(s)` : tests[0]!] : [])];
  if (evidence.length === 0) return null;
  const notes: string[] = [];
  let setup: string | null = null;
  const lock = lockfileFilter(root, view, notes, 'the setup does not use it');
  if (lock('uv.lock')) {
    setup = 'uv sync';
    evidence.push('uv.lock');
  } else if (lock('poetry.lock')) {
    setup = 'poetry install';
    evidence.push('poetry.lock');
  } else {
    notes.push('no uv.lock or poetry.lock: no setup command; the checks use the Python environment Polly runs in');
  }
  const declared = ['pytest.ini', 'conftest.py'].some((f) => top.includes(f)) || [...projectFiles, ...requirements].some((f) => /\bpytest\b/.test(readText(root, f) ?? ''));
  if (!declared)
    notes.push('nothing here declares pytest (requirements*.txt, pyproject.toml, setup.cfg, tox.ini, Pipfile): install it where Polly runs, e.g. apt-get install python3-pytest');
  // Debian and Ubuntu have python3 but no python unless python-is-python3 is installed.
  const python = whichExecutable('python', env.PATH, root) === null && whichExecutable('python3', env.PATH, root) !== null ? 'python3' : 'python';
  if (python === 'python3') notes.push('no "python" on PATH: the command uses python3');
  // A src/ layout: the package is importable only once installed (uv sync and poetry install do
  // install it) or with src on sys.path (pytest's own `pythonpath` setting, pytest >= 7).
  const packages = srcPackages(root);
  const pythonpath = [...projectFiles].some((f) => /^\s*pythonpath\s*=/m.test(readText(root, f) ?? ''));
  let test = `${python} -m pytest`;
  if (packages.length > 0 && setup === null && !pythonpath) {
    test = `PYTHONPATH=src ${test}`;
    notes.push(
      `src/ layout (${packages.join(', ')}): pytest cannot import it until it is installed, so the command sets PYTHONPATH=src; ` +
        'or install it in each worktree instead (worktrees.setup: "python3 -m pip install -e ." with worktrees.setup_network: true, in a virtualenv), ' +
        'or set pythonpath = ["src"] under [tool.pytest.ini_options] in pyproject.toml',
    );
  }
  return { kind: 'python', evidence, test, setup, notes };
}

/** One ecosystem found by a marker file, with its test and setup commands. */
interface MarkerRule {
  kind: DetectedEcosystem['kind'];
  /** The first of these present (a file name, or a RegExp over top-level names) is the evidence. */
  markers: Array<string | RegExp>;
  test: (has: (f: string) => boolean, read: (f: string) => string | null) => string | null;
  setup?: (has: (f: string) => boolean, read: (f: string) => string | null) => string | null;
}

const MARKER_RULES: MarkerRule[] = [
  { kind: 'go', markers: ['go.mod'], test: () => 'go test ./...' },
  { kind: 'rust', markers: ['Cargo.toml'], test: () => 'cargo test' },
  {
    kind: 'ruby',
    markers: ['Gemfile'],
    test: (has) => (has('.rspec') || has('spec') ? 'bundle exec rspec' : has('Rakefile') ? 'bundle exec rake test' : null),
    setup: () => 'bundle install',
  },
  { kind: 'gradle', markers: ['gradlew', 'build.gradle', 'build.gradle.kts'], test: (has) => (has('gradlew') ? './gradlew test' : 'gradle test') },
  { kind: 'maven', markers: ['mvnw', 'pom.xml'], test: (has) => (has('mvnw') ? './mvnw test' : 'mvn test') },
  { kind: 'dotnet', markers: [/\.(sln|csproj|fsproj|vbproj)$/], test: () => 'dotnet test' },
  { kind: 'elixir', markers: ['mix.exs'], test: () => 'mix test', setup: () => 'mix deps.get' },
  {
    kind: 'php',
    markers: ['composer.json'],
    test: (has, read) => {
      const scripts = (JSON.parse(read('composer.json') || '{}') as { scripts?: Record<string, unknown> }).scripts;
      if (scripts && typeof scripts === 'object' && 'test' in scripts) return 'composer test';
      return has('phpunit.xml') || has('phpunit.xml.dist') ? 'vendor/bin/phpunit' : null;
    },
    setup: () => 'composer install',
  },
  { kind: 'deno', markers: ['deno.json', 'deno.jsonc'], test: () => 'deno test' },
  { kind: 'swift', markers: ['Package.swift'], test: () => 'swift test' },
  {
    kind: 'dart',
    markers: ['pubspec.yaml'],
    test: (_has, read) => (/^\s+flutter:\s*$/m.test(read('pubspec.yaml') ?? '') ? 'flutter test' : 'dart test'),
    setup: (_has, read) => (/^\s+flutter:\s*$/m.test(read('pubspec.yaml') ?? '') ? 'flutter pub get' : 'dart pub get'),
  },
  { kind: 'zig', markers: ['build.zig'], test: () => 'zig build test' },
];

function detectByMarkers(root: string): DetectedEcosystem[] {
  const top = listDir(root, '.');
  const has = (f: string) => top.includes(f);
  const read = (f: string) => readText(root, f);
  const out: DetectedEcosystem[] = [];
  for (const rule of MARKER_RULES) {
    const found = rule.markers.map((m) => (typeof m === 'string' ? (has(m) ? m : undefined) : top.find((f) => m.test(f)))).find((f) => f !== undefined);
    if (found === undefined) continue;
    let test: string | null = null;
    try {
      test = rule.test(has, read);
    } catch {
      // a manifest that does not parse: no test command from it
    }
    const notes = test === null ? [`found ${found} but no test command it implies`] : [];
    out.push({ kind: rule.kind, evidence: [found], test, setup: rule.setup?.(has, read) ?? null, notes });
  }
  return out;
}

/** True when a justfile in `root` has a recipe `name` (a line `name:` or `name arg…:`; https://just.systems/man/en/). */
function justHasRecipe(root: string, name: string): string | null {
  for (const file of ['justfile', 'Justfile', '.justfile']) {
    const text = readText(root, file);
    if (text !== null && new RegExp(`^@?${name}(\\s+[^:=]*)?:(?!=)`, 'm').test(text)) return file;
  }
  return null;
}

/**
 * Detect the project in `root` (a checkout; the files at its top level, and the test modules in
 * `tests/` and `test/`, are read; see the module doc for each ecosystem's evidence).
 * @param env  for PATH: whether `python` exists or only `python3` (default `process.env`).
 * @param view git's view of the lockfiles ({@link gitFileView}): one git ignores or does not track
 *             is in no worktree, so it does not choose the setup (default: every file present counts).
 * @returns the ecosystems found and the commands for `acceptance.commands` and `worktrees.setup`;
 *          `acceptanceCommands` is [] when nothing implies a test command.
 */
export function detectProject(root: string, env: NodeJS.ProcessEnv = process.env, view?: GitFileView): ProjectDetection {
  const ecosystems: DetectedEcosystem[] = [];
  const node = detectNode(root, view);
  if (node) ecosystems.push(node);
  const python = detectPython(root, env, view);
  if (python) ecosystems.push(python);
  ecosystems.push(...detectByMarkers(root));
  const makefile = MAKEFILES.find((f) => existsSync(join(root, f)));
  const makeTarget = makefile === undefined ? null : makeHasTarget(root, 'test') ? 'test' : makeHasTarget(root, 'check') ? 'check' : null;
  const own = makefile && makeTarget ? { kind: 'make' as const, file: makefile, test: `make ${makeTarget}` } : null;
  const justfile = own ? null : justHasRecipe(root, 'test');
  const projectOwn = own ?? (justfile ? { kind: 'just' as const, file: justfile, test: 'just test' } : null);
  if (projectOwn) ecosystems.push({ kind: projectOwn.kind, evidence: [projectOwn.file], test: projectOwn.test, setup: null, notes: [] });
  const tests = projectOwn ? [projectOwn.test] : ecosystems.map((e) => e.test).filter((t): t is string => t !== null);
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
