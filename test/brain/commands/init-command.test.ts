// `polly init` through the real CLI in real temp git repositories.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { programsMissingFromPath } from '../../../brain/commands/doctor.js';
import { FIRST_STEPS } from '../../../brain/commands/init.js';
import { parseConfig, renderDefaultConfig } from '../../../brain/config/config.js';
import { packageRoot } from '../../../brain/core/install-paths.js';
import { createFileRegistryStore } from '../../../brain/registry/registry-store.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

/** Every file under `dir` (recursively) → its bytes, for "changes nothing" comparisons. */
function snapshot(dir: string, out = new Map<string, Buffer>(), prefix = ''): Map<string, Buffer> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) snapshot(p, out, `${prefix}${name}/`);
    else out.set(`${prefix}${name}`, readFileSync(p));
  }
  return out;
}

describe('polly init', () => {
  it('creates the commented config, the registry and the exclude entry', () => {
    const repo = createTestRepo();
    const r = runCli(['init'], repo.dir);
    // Nothing detected is said plainly, with what to write.
    expect(r.stderr).toMatch(
      /^polly init: no test command detected \(looked for package\.json with a test script, .*\): acceptance\.commands is \[\], so Polly runs no checks of its own/,
    );
    expect(r.stderr).toContain('e.g. acceptance: {commands: ["./run-tests.sh"]}');
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Initialised Polly in ${repo.dir}`);
    expect(r.stdout).toContain('created .polly/config.yaml');
    const config = readFileSync(join(repo.dir, '.polly/config.yaml'), 'utf8');
    expect(config.split('\n').slice(0, 2)).toEqual([
      '# yaml-language-server: $schema=config.schema.json',
      '# (the schema is config.schema.json beside this file, Polly\'s schemas/config.schema.json copied by "polly init" (run it again after updating Polly to refresh it))',
    ]);
    expect(parseConfig(config, 'config.yaml')).toEqual(parseConfig(renderDefaultConfig({ acceptanceCommands: [], setup: null }), 'x'));
    // The $schema path resolves beside the config (not into this install) to a copy of the shipped schema.
    expect(readFileSync(join(repo.dir, '.polly/config.schema.json'), 'utf8')).toBe(readFileSync(join(packageRoot(), 'schemas', 'config.schema.json'), 'utf8'));
    // Next: the README's first-hour lines, the same text.
    expect(r.stdout).toContain(`Next:\n${FIRST_STEPS.map((l) => `  ${l}`).join('\n')}\n`);
    expect(readFileSync(join(packageRoot(), 'README.md'), 'utf8')).toContain(`\n${FIRST_STEPS.join('\n')}\n`);
    const exclude = readFileSync(join(repo.dir, '.git/info/exclude'), 'utf8');
    expect(exclude.split('\n').filter((l) => l === '.worktrees/')).toHaveLength(1);
    // git really ignores a worktree directory now, and the runtime state, but not config.yaml
    mkdirSync(join(repo.dir, '.worktrees/t1'), { recursive: true });
    writeFileSync(join(repo.dir, '.worktrees/t1/file'), 'x');
    expect(repo.git(['status', '--porcelain', '--untracked-files=all'])).toBe('?? .polly/.gitignore\n?? .polly/config.schema.json\n?? .polly/config.yaml');
  });

  it('records an empty registry with one journal entry', async () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const store = createFileRegistryStore(join(repo.dir, '.polly'));
    const reg = await store.read();
    expect(Object.keys(reg.tasks)).toEqual([]);
    expect((await store.journal()).map((e) => [e.seq, e.kind, e.data])).toEqual([[1, 'polly.initialized', { repoRoot: repo.dir }]]);
  });

  it('a second run changes nothing (byte for byte) and says so', () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const before = snapshot(join(repo.dir, '.polly'));
    const exclude = readFileSync(join(repo.dir, '.git/info/exclude'));
    const r = runCli(['init'], repo.dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('already initialised');
    const j = runCli(['init', '--json'], repo.dir);
    expect(JSON.parse(j.stdout)).toEqual({
      initialized: false,
      created: [],
      updated: [],
      repoRoot: repo.dir,
      pollyDir: join(repo.dir, '.polly'),
      detected: null,
      toolExclusions: [],
    });
    expect(snapshot(join(repo.dir, '.polly'))).toEqual(before);
    expect(readFileSync(join(repo.dir, '.git/info/exclude'))).toEqual(exclude);
    // A schema copy from another Polly version is refreshed (it is Polly's file); the config is not touched.
    writeFileSync(join(repo.dir, '.polly/config.schema.json'), '{"stale": true}\n');
    const refreshed = runCli(['init'], repo.dir);
    expect(refreshed.stdout).toContain("updated .polly/config.schema.json (this Polly's schema)");
    expect(snapshot(join(repo.dir, '.polly'))).toEqual(before);
  });

  it('--json lists what it created; it works from a subdirectory', () => {
    const repo = createTestRepo({ 'src/a.ts': 'export {};\n' });
    const r = runCli(['init', '--json'], join(repo.dir, 'src'));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { initialized: boolean; created: string[]; updated: string[]; repoRoot: string };
    expect(out.initialized).toBe(true);
    expect(out.repoRoot).toBe(repo.dir);
    expect(out.created).toEqual(['.polly/', '.polly/config.yaml', '.polly/config.schema.json', '.polly/.gitignore', '.polly/registry.json', '.polly/journal.jsonl']);
    expect(out.updated).toEqual(['.git/info/exclude']);
    expect(existsSync(join(repo.dir, 'src/.polly'))).toBe(false);
  });

  it('from a linked worktree it initialises the main worktree and the common exclude file', () => {
    const repo = createTestRepo();
    const wt = join(repo.root, 'linked');
    repo.git(['worktree', 'add', '-q', '-b', 'side', wt]);
    const r = runCli(['init', '--json'], wt);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).repoRoot).toBe(repo.dir);
    expect(existsSync(join(repo.dir, '.polly/config.yaml'))).toBe(true);
    expect(existsSync(join(wt, '.polly'))).toBe(false);
    expect(readFileSync(join(repo.dir, '.git/info/exclude'), 'utf8')).toContain('\n.worktrees/\n');
    expect(runCli(['init'], repo.dir).stdout).toContain('already initialised');
  });

  it('appends to an exclude file without a final newline, and keeps an existing entry', () => {
    const repo = createTestRepo();
    writeFileSync(join(repo.dir, '.git/info/exclude'), '*.log');
    expect(runCli(['init'], repo.dir).code).toBe(0);
    expect(readFileSync(join(repo.dir, '.git/info/exclude'), 'utf8')).toBe('*.log\n# Polly: worker worktrees\n.worktrees/\n');
    const other = createTestRepo();
    writeFileSync(join(other.dir, '.git/info/exclude'), '/.worktrees/\n');
    const r = JSON.parse(runCli(['init', '--json'], other.dir).stdout) as { updated: string[] };
    expect(r.updated).toEqual([]);
    expect(readFileSync(join(other.dir, '.git/info/exclude'), 'utf8')).toBe('/.worktrees/\n');
  });

  it('an existing invalid config is reported with file:line:column and left untouched', () => {
    const repo = createTestRepo();
    mkdirSync(join(repo.dir, '.polly'));
    const bad = 'policies:\n  spawn_bounds:\n    max_dispatches_per_turn: many\n';
    writeFileSync(join(repo.dir, '.polly/config.yaml'), bad);
    const r = runCli(['init', '--json'], repo.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(repo.dir, '.polly/config.yaml')}:3:30: policies.spawn_bounds.max_dispatches_per_turn`);
    expect(JSON.parse(r.stdout).error.code).toBe('config_invalid');
    expect(readFileSync(join(repo.dir, '.polly/config.yaml'), 'utf8')).toBe(bad);
  });

  it('outside a git repository: not_a_git_repo, exit 2, nothing written', () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'polly-nogit-')));
    const r = runCli(['init'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${dir} is not inside a git repository`);
    expect(r.stderr).toContain('git init');
    expect(JSON.parse(runCli(['init', '--json'], dir).stdout).error.code).toBe('not_a_git_repo');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('warns when the detected toolchain is on no directory of PATH (go here), naming the command; a program by path or a builtin is not looked up', () => {
    const repo = createTestRepo({ 'go.mod': 'module example.com/x\n\ngo 1.22\n' });
    // A PATH with git alone (init needs it): no go.
    const bin = realpathSync(mkdtempSync(join(tmpdir(), 'polly-path-')));
    const git = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(git, join(bin, 'git'));
    const r = runCli(['init'], repo.dir, { PATH: bin });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('polly init: warning: "go test ./..." needs go, which is on no directory of PATH: install it');
    expect(r.stdout).not.toContain('warning');
    expect(programsMissingFromPath(repo.dir, ['CI=1 go vet ./...', './gradlew test', '.venv/bin/python -m pytest', 'cd sub && make test', 'git status'], { PATH: bin })).toEqual([
      { command: 'CI=1 go vet ./...', program: 'go' },
    ]);
  });

  it('a package-lock.json git ignores (or does not track) is in no worktree: setup is npm install, and init says why', () => {
    const pkg = `${JSON.stringify({ name: 'p', scripts: { test: 'node --test test/' }, devDependencies: { left: '1' } })}\n`;
    const ignored = createTestRepo({ '.gitignore': 'package-lock.json\n', 'package.json': pkg, 'test/a.test.js': '' });
    writeFileSync(join(ignored.dir, 'package-lock.json'), '{"lockfileVersion": 3}\n');
    const r = runCli(['init', '--json'], ignored.dir);
    expect(r.code, r.stderr).toBe(0);
    const detected = (JSON.parse(r.stdout) as { detected: { setup: string } }).detected;
    expect(detected.setup).toBe('npm install --no-package-lock --prefer-offline --no-audit --no-fund');
    expect(r.stderr).toContain(
      'package-lock.json is ignored by git (.gitignore:1:package-lock.json), so no worktree has it: the setup does not use it (npm ci would fail in every worktree)',
    );
    // Present but never added: untracked, the same.
    const untracked = createTestRepo({ 'package.json': pkg, 'test/a.test.js': '' });
    writeFileSync(join(untracked.dir, 'package-lock.json'), '{"lockfileVersion": 3}\n');
    const u = runCli(['init', '--json'], untracked.dir);
    expect((JSON.parse(u.stdout) as { detected: { setup: string } }).detected.setup).toMatch(/^npm install /);
    expect(u.stderr).toContain('package-lock.json is not tracked by git, so no worktree has it');
    // Tracked: npm ci, as before.
    const tracked = createTestRepo({ 'package.json': pkg, 'package-lock.json': '{"lockfileVersion": 3}\n', 'test/a.test.js': '' });
    expect((JSON.parse(runCli(['init', '--json'], tracked.dir).stdout) as { detected: { setup: string } }).detected.setup).toMatch(/^npm ci /);
  });

  it('a Python src/ layout without package.json: a pytest default that can import it (PYTHONPATH=src), and the install step named', () => {
    const repo = createTestRepo({
      'pyproject.toml': '[project]\nname = "calc"\n',
      'src/calc/__init__.py': 'def add(a, b):\n    return a + b\n',
      'tests/test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
    });
    const r = runCli(['init', '--json'], repo.dir);
    expect(r.code, r.stderr).toBe(0);
    const cmd = (JSON.parse(r.stdout) as { detected: { acceptanceCommands: string[] } }).detected.acceptanceCommands;
    expect(cmd).toEqual([expect.stringMatching(/^PYTHONPATH=src python3? -m pytest$/)]);
    expect(r.stderr).toContain('src/ layout (calc): pytest cannot import it until it is installed, so the command sets PYTHONPATH=src');
    expect(r.stderr).toContain('python3 -m pip install -e .');
    expect(r.stderr).not.toMatch(/npm|cargo/);
    // The command as written runs the tests (where this machine's python has pytest); without PYTHONPATH the import fails.
    if (spawnSync('python3', ['-m', 'pytest', '--version']).status === 0) {
      const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };
      const run = spawnSync('sh', ['-c', `${cmd[0]!.replace(/ python /, ' python3 ')} -q -p no:cacheprovider`], { cwd: repo.dir, encoding: 'utf8', env });
      expect(run.status, run.stdout).toBe(0);
      expect(spawnSync('sh', ['-c', 'python3 -m pytest -q -p no:cacheprovider'], { cwd: repo.dir, encoding: 'utf8', env }).status).not.toBe(0);
    }
  });

  it('an unknown flag exits 2 naming it', () => {
    const repo = createTestRepo();
    const r = runCli(['init', '--bogus'], repo.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"--bogus"');
    expect(r.stdout).toBe('');
    expect(existsSync(join(repo.dir, '.polly'))).toBe(false);
    expect(runCli(['init', 'extra'], repo.dir).code).toBe(2);
  });
});
