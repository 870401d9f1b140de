// `polly init` fits acceptance.commands and worktrees.setup to the project it finds (npm, pnpm,
// yarn, Python, Go, Rust, make), says so on stderr; and the command check dispatch runs before an
// agent attempt refuses programs that cannot run in the repository.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../brain/config/config.js';
import { commandProblems, detectProject } from '../../../brain/config/project-detection.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

function dirWith(files: Record<string, string>): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'polly-detect-')));
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), c);
  }
  return dir;
}

/** A PATH with only an executable `name` (never run: detection only looks it up). */
function pythonBin(name: string): string {
  const bin = realpathSync(mkdtempSync(join(tmpdir(), 'polly-detect-bin-')));
  writeFileSync(join(bin, name), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return bin;
}

const pkg = (scripts: Record<string, string>, deps: Record<string, string> = {}) => JSON.stringify({ name: 'x', version: '1.0.0', scripts, devDependencies: deps });

describe('detectProject', () => {
  it('npm: npm ci only with package-lock.json; npm install without a lockfile; no setup without dependencies', () => {
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 'vitest run' }, { vitest: '4' }), 'package-lock.json': '{}' }))).toMatchObject({
      acceptanceCommands: ['npm test'],
      setup: 'npm ci --prefer-offline --no-audit --no-fund',
    });
    const noLock = detectProject(dirWith({ 'package.json': pkg({ test: 'nyc mocha' }, { nyc: '17', mocha: '10' }) }));
    expect(noLock.setup).toBe('npm install --no-package-lock --prefer-offline --no-audit --no-fund');
    expect(noLock.ecosystems[0]!.notes.join(' ')).toContain('no lockfile');
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 'node --test' }) }))).toMatchObject({ acceptanceCommands: ['npm test'], setup: null });
    // npm init's placeholder test script always fails: it is not a test command
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 'echo "Error: no test specified" && exit 1' }) })).acceptanceCommands).toEqual([]);
  });

  it('pnpm and yarn by their lockfiles', () => {
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 't' }, { a: '1' }), 'pnpm-lock.yaml': '' }))).toMatchObject({
      acceptanceCommands: ['pnpm test'],
      setup: 'pnpm install --frozen-lockfile',
    });
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 't' }, { a: '1' }), 'yarn.lock': '' }))).toMatchObject({
      acceptanceCommands: ['yarn test'],
      setup: 'yarn install --frozen-lockfile',
    });
    expect(detectProject(dirWith({ 'package.json': pkg({ test: 't' }, { a: '1' }), 'yarn.lock': '', '.yarnrc.yml': '' })).setup).toBe('yarn install --immutable');
  });

  it('Python, Go, Rust, and a Makefile test target', () => {
    const py = { PATH: pythonBin('python') };
    expect(detectProject(dirWith({ 'pyproject.toml': '[project]\nname = "x"\n' }), py)).toMatchObject({ acceptanceCommands: ['python -m pytest'], setup: null });
    expect(detectProject(dirWith({ 'setup.cfg': '[metadata]\n', 'uv.lock': '' }), py)).toMatchObject({ acceptanceCommands: ['python -m pytest'], setup: 'uv sync' });
    expect(detectProject(dirWith({ 'tox.ini': '[tox]\n' })).ecosystems.map((e) => e.kind)).toEqual(['python']);
    expect(detectProject(dirWith({ 'go.mod': 'module x\n\ngo 1.22\n' }))).toMatchObject({ acceptanceCommands: ['go test ./...'], setup: null });
    expect(detectProject(dirWith({ 'Cargo.toml': '[package]\nname = "x"\n' }))).toMatchObject({ acceptanceCommands: ['cargo test'], setup: null });
    expect(detectProject(dirWith({ 'go.mod': 'module x\n', Makefile: 'VAR := 1\nbuild:\n\tgo build\ntest: build\n\tgo test ./...\n' })).acceptanceCommands).toEqual(['make test']);
    // `test :=` is a variable, not a target
    expect(detectProject(dirWith({ 'go.mod': 'module x\n', Makefile: 'test := 1\nall:\n\ttrue\n' })).acceptanceCommands).toEqual(['go test ./...']);
    expect(detectProject(dirWith({ 'README.md': '# x\n' }))).toEqual({ ecosystems: [], acceptanceCommands: [], setup: null });
  });

  it('a plain pytest project without pyproject.toml: requirements*.txt, setup.py, conftest.py or test modules alone', () => {
    const withPython = { PATH: pythonBin('python') };
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'requirements.txt': 'pytest\n', 'stats.py': '' }, 'requirements.txt'],
      [{ 'requirements-dev.txt': 'pytest>=8\n' }, 'requirements-dev.txt'],
      [{ 'setup.py': 'from setuptools import setup\nsetup(tests_require=["pytest"])\n' }, 'setup.py'],
      [{ 'conftest.py': '' }, 'conftest.py'],
      [{ 'test_stats.py': 'def test_x(): pass\n', 'stats.py': '' }, 'test_stats.py'],
      [{ 'tests/test_a.py': '', 'tests/test_b.py': '', 'tests/helpers.py': '' }, 'tests/test_a.py and 1 more test module(s)'],
      [{ 'test/stats_test.py': '' }, 'test/stats_test.py'],
    ];
    for (const [files, evidence] of cases) {
      const d = detectProject(dirWith(files), withPython);
      expect(d.acceptanceCommands, evidence).toEqual(['python -m pytest']);
      expect(d.ecosystems[0]!.evidence, evidence).toEqual([evidence]);
    }
    // Nothing declares pytest: said, with how to get it; declared in requirements: not said.
    expect(detectProject(dirWith({ 'tests/test_a.py': '' }), withPython).ecosystems[0]!.notes.join(' ')).toContain('nothing here declares pytest');
    expect(detectProject(dirWith({ 'requirements.txt': 'pytest\n' }), withPython).ecosystems[0]!.notes.join(' ')).not.toContain('declares pytest');
    // Debian/Ubuntu without python-is-python3: only python3 on PATH.
    const d3 = detectProject(dirWith({ 'tests/test_a.py': '' }), { PATH: pythonBin('python3') });
    expect(d3.acceptanceCommands).toEqual(['python3 -m pytest']);
    expect(d3.ecosystems[0]!.notes.join(' ')).toContain('no "python" on PATH: the command uses python3');
    // a helper module named like a test but not a test module is not evidence; other directories are not read
    expect(detectProject(dirWith({ 'testing.py': '', 'src/test_x.py': '' }), withPython).ecosystems).toEqual([]);
  });

  it('Ruby, Gradle, Maven, .NET, Elixir, PHP, Deno, Swift, Dart/Flutter, Zig; make check; a justfile test recipe', () => {
    const table: Array<[Record<string, string>, string[], string | null]> = [
      [{ Gemfile: '', '.rspec': '' }, ['bundle exec rspec'], 'bundle install'],
      [{ Gemfile: '', Rakefile: 'task :test\n' }, ['bundle exec rake test'], 'bundle install'],
      [{ gradlew: '', 'build.gradle.kts': '' }, ['./gradlew test'], null],
      [{ 'build.gradle': '' }, ['gradle test'], null],
      [{ 'pom.xml': '<project/>' }, ['mvn test'], null],
      [{ mvnw: '', 'pom.xml': '<project/>' }, ['./mvnw test'], null],
      [{ 'App.sln': '' }, ['dotnet test'], null],
      [{ 'app.csproj': '' }, ['dotnet test'], null],
      [{ 'mix.exs': '' }, ['mix test'], 'mix deps.get'],
      [{ 'composer.json': '{"scripts": {"test": "phpunit"}}' }, ['composer test'], 'composer install'],
      [{ 'composer.json': '{}', 'phpunit.xml.dist': '' }, ['vendor/bin/phpunit'], 'composer install'],
      [{ 'deno.json': '{}' }, ['deno test'], null],
      [{ 'Package.swift': '' }, ['swift test'], null],
      [{ 'pubspec.yaml': 'name: x\n' }, ['dart test'], 'dart pub get'],
      [{ 'pubspec.yaml': 'name: x\ndependencies:\n  flutter:\n    sdk: flutter\n' }, ['flutter test'], 'flutter pub get'],
      [{ 'build.zig': '' }, ['zig build test'], null],
      [{ Makefile: 'check:\n\t./configure && true\n' }, ['make check'], null],
      [{ justfile: 'default:\n  just --list\ntest *args:\n  cargo test {{args}}\n', 'Cargo.toml': '' }, ['just test'], null],
    ];
    for (const [files, commands, setup] of table) {
      const d = detectProject(dirWith(files), { PATH: '/nonexistent' });
      expect([d.acceptanceCommands, d.setup], Object.keys(files).join(',')).toEqual([commands, setup]);
    }
    // A Gemfile without specs or a Rakefile: found, no test command, and it says so.
    const gem = detectProject(dirWith({ Gemfile: '' }), { PATH: '/nonexistent' });
    expect(gem.acceptanceCommands).toEqual([]);
    expect(gem.ecosystems[0]!.notes).toEqual(['found Gemfile but no test command it implies']);
  });
});

describe('commandProblems (checked before an agent attempt is spent)', () => {
  it('names the missing manifest, script or target; passes what may run', () => {
    const py = dirWith({ 'pyproject.toml': '' });
    expect(commandProblems(py, ['npm test', 'python -m pytest', 'CI=1 cargo test', 'go test ./...', 'make test', 'go version'])).toEqual([
      { command: 'npm test', missing: 'package.json' },
      { command: 'CI=1 cargo test', missing: 'Cargo.toml' },
      { command: 'go test ./...', missing: 'go.mod' },
      { command: 'make test', missing: 'a Makefile' },
    ]);
    const node = dirWith({ 'package.json': pkg({ test: 'node --test', lint: 'x' }), Makefile: 'check:\n\ttrue\n' });
    expect(commandProblems(node, ['npm test', 'npm run lint', 'npm run typecheck && npm test', 'make check', 'make test', 'node --test'])).toEqual([
      { command: 'npm run typecheck && npm test', missing: 'the "typecheck" script in package.json' },
      { command: 'make test', missing: 'the "test" target in the Makefile' },
    ]);
  });
});

describe('polly init in real repositories', () => {
  const cases: Array<{ name: string; files: Record<string, string>; commands: string[]; setup: string | null; detected: string }> = [
    {
      name: 'npm',
      files: { 'package.json': pkg({ test: 'vitest run' }, { vitest: '4' }), 'package-lock.json': '{}' },
      commands: ['npm test'],
      setup: 'npm ci --prefer-offline --no-audit --no-fund',
      detected: 'detected npm (package.json, package-lock.json)',
    },
    {
      name: 'Python',
      files: { 'pyproject.toml': '[project]\nname = "x"\n', 'tests/test_x.py': '' },
      commands: ['python -m pytest'],
      setup: null,
      detected: 'detected python (pyproject.toml, tests/test_x.py)',
    },
    {
      name: 'plain pytest (no pyproject.toml)',
      files: { 'requirements.txt': 'pytest\n', 'stats.py': '', 'tests/test_stats.py': 'def test_x(): pass\n' },
      commands: ['python -m pytest'],
      setup: null,
      detected: 'detected python (requirements.txt, tests/test_stats.py)',
    },
    { name: 'Go', files: { 'go.mod': 'module example.com/x\n\ngo 1.22\n' }, commands: ['go test ./...'], setup: null, detected: 'detected go (go.mod)' },
    { name: 'Rust', files: { 'Cargo.toml': '[package]\nname = "x"\nversion = "0.1.0"\n' }, commands: ['cargo test'], setup: null, detected: 'detected rust (Cargo.toml)' },
  ];
  for (const c of cases) {
    it(`${c.name}: writes fitting acceptance.commands and worktrees.setup and says what it detected`, () => {
      const repo = createTestRepo(c.files);
      // A PATH with a python outside HOME: the detected command does not depend on this machine's python.
      const r = runCli(['init'], repo.dir, { PATH: `${pythonBin('python')}:/usr/bin:/bin` });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(c.detected);
      expect(r.stderr).toContain(`acceptance.commands: ${JSON.stringify(c.commands)}`);
      const text = readFileSync(join(repo.dir, '.polly/config.yaml'), 'utf8');
      expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=config.schema.json');
      expect(r.stdout).toContain('Next:');
      const config = parseConfig(text, 'config.yaml');
      expect(config.acceptance.commands).toEqual(c.commands);
      expect(config.worktrees.setup).toBe(c.setup);
      // an installing setup fetches packages: inside the sandbox it gets the network only when the config says so
      expect(config.worktrees.setup_network).toBe(c.setup !== null);
      expect(commandProblems(repo.dir, config.acceptance.commands)).toEqual([]);
    });
  }
});
