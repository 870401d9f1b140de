// `polly doctor` through the real CLI on fixture repositories: all good (exit 0), and each
// problem reported on a fixture that has it (exit 1): a misspelt config key, a missing agent CLI,
// a sandbox that cannot start, no git identity, a default branch behind its remote, no origin, vitest that
// would run the worktrees' tests, an acceptance command that cannot run, uncommitted work, root without
// allow_root_sandbox, a missing model key.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  acceptanceRunnerCheck,
  credentialChecks,
  forgeCheck,
  isRelativeLocalPath,
  pollyFilesCheck,
  doctorSandboxProbe,
  rootCheck,
  runDoctor,
  type DoctorReport,
} from '../../../brain/commands/doctor.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { readRepoBranchContext } from '../../../workers/git/repo.js';
import { probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { createTestRepo, git, gitTestEnv } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

const byId = (r: DoctorReport) => Object.fromEntries(r.checks.map((c) => [c.id, c]));
const workingSandbox = () => ({ ok: true as const, bwrap: '/usr/bin/bwrap' });
// `node --test test/` names its directory: a bare `node --test` would also run the worktrees' tests (worktrees-visible).
const NODE = { 'README.md': '# t\n', 'package.json': `${JSON.stringify({ name: 't', scripts: { test: 'node --test test/' } })}\n` };

describe('polly doctor', () => {
  it('a healthy repository: every check ok, exit 0; --json lists the checks', () => {
    const repo = createTestRepo(NODE);
    repo.git(['config', 'user.name', 'Repo User']);
    repo.git(['config', 'user.email', 'repo@example.org']);
    expect(runCli(['init'], repo.dir).code).toBe(0);
    repo.commitAll('polly init');
    const keys = { ANTHROPIC_API_KEY: 'sk-ant-doctor-test-value', OPENAI_API_KEY: 'sk-openai-doctor-test-value' };
    const r = runCli(['doctor', '--json'], repo.dir, keys);
    const report = JSON.parse(r.stdout) as DoctorReport;
    const problems = report.checks.filter((c) => c.status !== 'ok');
    // The sandbox and root lines depend on this machine and its user; everything else must be ok here.
    expect(
      problems.filter((c) => c.id !== 'sandbox' && c.id !== 'root'),
      r.stdout,
    ).toEqual([]);
    expect(report.checks.map((c) => c.id)).toEqual([
      'config',
      'agent:claude-code',
      'agent:codex',
      'agent:pi',
      'credentials:claude-code',
      'credentials:codex',
      'credentials:pi',
      'root',
      'sandbox',
      'bounds',
      'identity',
      'notifications',
      'default-branch',
      'forge',
      'worktrees-visible',
      'worktrees-collected',
      'acceptance',
      'toolchains',
      'acceptance-runner',
      'polly-files',
      'uncommitted',
    ]);
    expect(byId(report)['agent:claude-code']!.detail).toMatch(/claude: \d+\.\d+/);
    expect(byId(report).identity!.detail).toBe('commits by Polly Test <polly-test@example.invalid> (from environment)');
    // This machine has no notify-send: doctor says so, and that only the (unset) webhook could notify.
    expect(byId(report).notifications!.detail).toMatch(
      /^no webhook \(notifications\.webhook_url\); (no desktop notifier available \(no notify-send on PATH: install libnotify-bin\)|desktop via notify-send \(\/.+\))$/,
    );
    expect(r.code).toBe(problems.length === 0 ? 0 : 1);
    expect(byId(report).forge!.detail).toBe(
      `PRs on the local forge (origin (${repo.remote}) is not on github.com): branches pushed to origin ${repo.remote}, reviewed with polly pr`,
    );
    expect(byId(report)['credentials:claude-code']).toMatchObject({ status: 'ok', detail: 'model key set: ANTHROPIC_API_KEY' });
    expect(byId(report)['credentials:codex']).toMatchObject({ status: 'ok', detail: 'model key set: OPENAI_API_KEY' });
    expect(byId(report)['credentials:pi']!.detail).toMatch(/^not checked: pi uses its own default provider/);
    const human = runCli(['doctor'], repo.dir, keys);
    expect(human.stdout).toContain('ok      config: .polly/config.yaml is valid');
    // A key's value is never printed, in either form.
    for (const out of [r.stdout, r.stderr, human.stdout, human.stderr]) expect(out).not.toMatch(/doctor-test-value/);
  });

  it('as root without allow_root_sandbox, and with model keys missing: a problem each, with the whole fix', () => {
    const env: NodeJS.ProcessEnv = { OPENAI_API_KEY: 'sk-openai-doctor-test-value', PATH: '/usr/bin:/bin' };
    const root = rootCheck(DEFAULT_CONFIG, true);
    expect(root).toMatchObject({ id: 'root', status: 'problem' });
    expect(root.detail).toContain('every claude-code task and review would be refused');
    expect(root.fix).toContain('set `workers: {claude-code: {allow_root_sandbox: true}}` in .polly/config.yaml');
    expect(rootCheck(DEFAULT_CONFIG, false)).toEqual({ id: 'root', status: 'ok', detail: 'not running as root' });
    const allowed = structuredClone(DEFAULT_CONFIG);
    allowed.workers['claude-code'].allow_root_sandbox = true;
    expect(rootCheck(allowed, true)).toMatchObject({ status: 'ok', detail: expect.stringContaining('allow_root_sandbox is true') });

    const c = Object.fromEntries(credentialChecks(DEFAULT_CONFIG, env).map((x) => [x.id, x]));
    expect(c['credentials:claude-code']).toMatchObject({ status: 'problem', detail: 'no model key: none of ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN is set' });
    expect(c['credentials:claude-code']!.fix).toContain('export ANTHROPIC_API_KEY');
    expect(c['credentials:codex']).toMatchObject({ status: 'ok', detail: 'model key set: OPENAI_API_KEY' });
    // a codex provider and pi's own endpoint name their own key variables
    const custom = structuredClone(DEFAULT_CONFIG);
    custom.workers.codex.provider = { id: 'local', base_url: 'http://127.0.0.1:9/v1', env_key: 'LOCAL_CODEX_KEY' };
    custom.workers.pi.base_url = 'http://127.0.0.1:9/v1';
    custom.workers.pi.api_key_env = 'LOCAL_PI_KEY';
    const d = Object.fromEntries(credentialChecks(custom, { LOCAL_PI_KEY: 'x-pi-doctor-test-value' }).map((x) => [x.id, x]));
    expect(d['credentials:codex']).toMatchObject({ status: 'problem', detail: 'no model key: none of LOCAL_CODEX_KEY is set' });
    expect(d['credentials:pi']).toMatchObject({ status: 'ok', detail: 'model key set: LOCAL_PI_KEY' });
    expect(JSON.stringify([c, d])).not.toMatch(/doctor-test-value/);
  });

  it("names the default branch by the Brain's rule: with no origin/HEAD and a feature branch checked out, main", async () => {
    const repo = createTestRepo(NODE);
    expect(runCli(['init'], repo.dir).code).toBe(0);
    repo.git(['checkout', '-q', '-b', 'feature']);
    repo.write('f.txt', 'f\n');
    repo.commitAll('feature work');
    expect(readRepoBranchContext(repo.dir, gitTestEnv())?.defaultBranch).toBe('main');
    const c = byId(await runDoctor(repo.dir, gitTestEnv(), () => ({ ok: false as const, reason: 'not asked', fix: '' })));
    expect(c['default-branch']).toMatchObject({ status: 'ok', detail: 'main is up to date with origin/main as of the last fetch' });
  });

  it('reports each problem on a fixture that has it, and exits 1', async () => {
    const repo = createTestRepo({ ...NODE, 'package.json': `${JSON.stringify({ name: 't', scripts: { test: 'vitest run' }, devDependencies: { vitest: '4' } })}\n` });
    // --no-exclusions: vitest keeps crawling .worktrees/, which worktrees-visible must report.
    expect(runCli(['init', '--no-exclusions'], repo.dir).code).toBe(0);
    const config = join(repo.dir, '.polly/config.yaml');
    // behind: origin/main gets a commit the local main does not have
    const other = join(repo.root, 'other');
    git(repo.root, ['clone', '-q', repo.remote, other]);
    writeFileSync(join(other, 'upstream.txt'), 'u\n');
    git(other, ['add', '-A']);
    git(other, ['commit', '-q', '-m', 'upstream']);
    git(other, ['push', '-q', 'origin', 'main']);
    repo.git(['fetch', '-q', 'origin']);
    repo.git(['remote', 'set-head', 'origin', 'main']);
    // uncommitted work, a misspelt key, an acceptance command that cannot run, a missing CLI
    repo.write('src.js', 'wip\n');
    writeFileSync(config, readFileSync(config, 'utf8').replace('max_attempts:', 'max_atempts:'));
    // Polly drops GIT_CONFIG_GLOBAL with the other GIT_*: an empty HOME keeps this machine's identity out.
    const env: NodeJS.ProcessEnv = { ...gitTestEnv(), PATH: '/usr/bin:/bin', HOME: repo.root, XDG_CONFIG_HOME: repo.root };
    for (const k of ['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL']) delete env[k];
    const noSandbox = () => ({ ok: false as const, reason: 'bubblewrap (bwrap) is not installed', fix: 'install it' });
    const report = await runDoctor(repo.dir, env, noSandbox);
    const c = byId(report);
    expect(report.ok).toBe(false);
    expect(c.config).toMatchObject({ status: 'problem' });
    expect(c.config!.detail).toContain('acceptance.max_atempts: unknown key "max_atempts"');
    expect(c.sandbox).toMatchObject({ status: 'problem', detail: 'bubblewrap (bwrap) is not installed' });
    expect(c.identity).toMatchObject({ status: 'problem', detail: "commits by Polly <polly@localhost> (Polly's fallback: set user.name and user.email with git config)" });
    expect(c['default-branch']).toMatchObject({ status: 'problem', detail: 'main is 1 commit(s) behind origin/main (as of the last fetch)' });
    expect(c['worktrees-visible']).toMatchObject({ status: 'problem' });
    expect(c['worktrees-visible']!.detail).toContain('vitest (package.json) will also run the tests of every worker worktree under .worktrees/');
    expect(c['worktrees-visible']!.fix).toContain("vitest: add vitest.config.ts: export default defineConfig({ test: { exclude: [...configDefaults.exclude, '.worktrees/**'] } })");
    expect(c.uncommitted!.detail).toContain('src.js');
    expect(c.uncommitted!.status).toBe('problem');

    // with config valid again: an acceptance command that cannot run, and a configured CLI that does not exist
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace('max_atempts:', 'max_attempts:').replace('- npm test', '- cargo test').replace('command: pi', 'command: /nonexistent/pi'),
    );
    const again = byId(await runDoctor(repo.dir, env, workingSandbox));
    expect(again.config!.status).toBe('ok');
    expect(again.acceptance).toMatchObject({ status: 'problem', detail: '"cargo test" needs Cargo.toml' });
    expect(again['agent:pi']).toMatchObject({ status: 'problem', detail: "/nonexistent/pi not found (PATH and Polly's node_modules/.bin)" });
    expect(again.sandbox!.status).toBe('ok');

    const cli = runCli(['doctor'], repo.dir);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain('PROBLEM default-branch: main is 1 commit(s) behind origin/main');
  });

  it('a pyenv python under HOME is bound into the sandbox (no problem); one under a HOME directory the sandbox never mounts is, with Python advice', async () => {
    const repo = createTestRepo(NODE);
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const home = join(repo.root, 'home');
    mkdirSync(join(home, '.pyenv/shims'), { recursive: true });
    writeFileSync(join(home, '.pyenv/shims/python'), '#!/bin/sh\n[ "$1" = "--version" ] && echo "Python 3.99.0-pyenv"\nexit 0\n', { mode: 0o755 });
    const config = join(repo.dir, '.polly/config.yaml');
    const text = readFileSync(config, 'utf8');
    const edited = text.replace('  commands:\n    - npm test\n', '  commands: ["PYTHONDONTWRITEBYTECODE=1 python -m pytest"]\n');
    expect(edited).not.toBe(text);
    writeFileSync(config, edited);
    // pyenv's shell setup exports PYENV_ROOT (this machine's own may be set): the test HOME's.
    const env: NodeJS.ProcessEnv = { ...gitTestEnv(), HOME: home, PYENV_ROOT: join(home, '.pyenv'), PATH: `${join(home, '.pyenv/shims')}:/usr/bin:/bin` };
    const confined = byId(await runDoctor(repo.dir, env, workingSandbox));
    expect(confined.acceptance!.status).toBe('ok');
    expect(confined.toolchains!.detail).toContain('pyenv (~/.pyenv)');
    expect(confined.toolchains!.detail).toContain('the checks run python = ~/.pyenv/shims/python (Python 3.99.0-pyenv)');
    // A python under ~/.config (never mounted: tokens live there) is hidden: a problem, with Python advice only.
    mkdirSync(join(home, '.config/py/bin'), { recursive: true });
    writeFileSync(join(home, '.config/py/bin/python'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const hiddenEnv = { ...env, PATH: `${join(home, '.config/py/bin')}:/usr/bin:/bin` };
    const hidden = byId(await runDoctor(repo.dir, hiddenEnv, workingSandbox));
    expect(hidden.acceptance!.status).toBe('problem');
    expect(hidden.acceptance!.detail).toContain(`python from outside your home directory (it resolves to ${join(home, '.config/py/bin/python')}`);
    expect(hidden.acceptance!.fix).toContain('pyenv (~/.pyenv)');
    expect(hidden.acceptance!.fix).not.toMatch(/cargo|rustup|nvm/);
    const unconfined = byId(await runDoctor(repo.dir, hiddenEnv, () => ({ ok: false as const, reason: 'no bwrap', fix: 'install it' })));
    expect(unconfined.acceptance!.status).toBe('ok');
    // polly init in a Python project with the pyenv python: no warning (the sandbox sees it).
    const py = createTestRepo({ 'pyproject.toml': '[project]\nname = "x"\n' });
    const init = runCli(['init'], py.dir, { HOME: home, PYENV_ROOT: env.PYENV_ROOT, PATH: env.PATH });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stderr).not.toContain('warning');
  }, 60_000);

  it('a Rust crate with cargo from rustup under HOME: init and doctor give cargo advice only, and doctor reports no problem that is not there', async () => {
    const repo = createTestRepo({ 'Cargo.toml': '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n', 'src/lib.rs': 'pub fn f() {}\n' });
    const home = join(repo.root, 'home');
    mkdirSync(join(home, '.cargo/bin'), { recursive: true });
    mkdirSync(join(home, '.rustup/toolchains'), { recursive: true });
    writeFileSync(join(home, '.cargo/bin/cargo'), '#!/bin/sh\necho "cargo 1.95.0-home (RUSTUP_HOME=$RUSTUP_HOME)"\n', { mode: 0o755 });
    writeFileSync(join(home, '.cargo/credentials.toml'), 'token = "x"\n');
    const vars = { HOME: home, RUSTUP_HOME: join(home, '.rustup'), CARGO_HOME: join(home, '.cargo'), PATH: `${join(home, '.cargo/bin')}:/usr/bin:/bin` };
    const env: NodeJS.ProcessEnv = { ...gitTestEnv(), ...vars };
    const init = runCli(['init'], repo.dir, vars);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stderr).toContain('polly init: detected rust (Cargo.toml)');
    expect(init.stderr).toContain('acceptance.commands: ["cargo test"]');
    expect(init.stderr).not.toMatch(/pyenv|pytest|python|warning/i);
    const report = byId(await runDoctor(repo.dir, env, workingSandbox));
    expect(report.acceptance).toMatchObject({ status: 'ok' });
    expect(report['acceptance-runner']).toMatchObject({ status: 'ok' });
    expect(report.toolchains!.detail).toBe(
      `under HOME, bound read-only in the sandbox: rustup (~/.rustup), cargo (~/.cargo/bin); the checks run cargo = ~/.cargo/bin/cargo (cargo 1.95.0-home (RUSTUP_HOME=${join(home, '.rustup')}))`,
    );
    expect(JSON.stringify([report.acceptance, report.toolchains, report['acceptance-runner']])).not.toMatch(/pyenv|pytest|python/);
  }, 60_000);

  it('no origin remote is a problem naming how to add one; a GitHub origin with a token shows no token; forge.kind github needs a GitHub origin', async () => {
    const repo = createTestRepo(NODE);
    expect(runCli(['init'], repo.dir).code).toBe(0);
    repo.git(['remote', 'remove', 'origin']);
    const none = byId(await runDoctor(repo.dir, gitTestEnv(), workingSandbox)).forge!;
    expect(none.status).toBe('problem');
    expect(none.detail).toMatch(/^no origin remote: .*every task would stop at push$/);
    expect(none.fix).toContain('git remote add origin <your GitHub repository URL>');
    const bare = `${repo.dir}.git`; // beside the checkout, absolute: a relative origin would be resolved from each worktree
    expect(none.fix).toContain(`git init --bare -b main ${bare} && git remote add origin ${bare} && git push -u origin HEAD`);
    // The other cases through the check itself (a doctor run costs seconds: three agent CLIs answer --version).
    const token = `ghp_${'x'.repeat(36)}`;
    repo.git(['remote', 'add', 'origin', `https://polly:${token}@github.com/octo/widget.git`]);
    const gitRunner = createGitRunner({ baseEnv: gitTestEnv() });
    const github = await forgeCheck(gitRunner, repo.dir, DEFAULT_CONFIG);
    expect(github).toEqual({ id: 'forge', status: 'ok', detail: 'PRs on GitHub: octo/widget on github.com (origin is on github.com)' });
    repo.git(['remote', 'set-url', 'origin', `https://polly:${token}@git.example.org/octo/widget.git`]);
    const local = await forgeCheck(gitRunner, repo.dir, DEFAULT_CONFIG);
    expect(local.detail).toBe(
      'PRs on the local forge (origin (https://git.example.org/octo/widget.git) is not on github.com): branches pushed to origin https://git.example.org/octo/widget.git, reviewed with polly pr',
    );
    const wrong = await forgeCheck(gitRunner, repo.dir, { ...DEFAULT_CONFIG, forge: { kind: 'github', github: { ...DEFAULT_CONFIG.forge.github } } });
    expect(wrong.status).toBe('problem');
    expect(wrong.detail).toContain('forge.kind is github but origin (https://git.example.org/octo/widget.git) is not a github.com repository URL');
    expect(JSON.stringify([github, local, wrong])).not.toContain(token);
    // A relative path (what a newcomer typed from the old advice) is resolved from each worktree: every push failed.
    repo.git(['remote', 'set-url', 'origin', '../widget.git']);
    const relative = await forgeCheck(gitRunner, repo.dir, DEFAULT_CONFIG);
    expect(relative.status).toBe('problem');
    expect(relative.detail).toMatch(/^origin is the relative path "\.\.\/widget\.git": .*worktree/);
    expect(relative.fix).toBe(`make it absolute: git remote set-url origin ${join(repo.dir, '..', 'widget.git')}`);
    expect(['../x.git', 'x.git', 'sub/x'].map(isRelativeLocalPath)).toEqual([true, true, true]);
    expect(['/srv/x.git', 'file:///srv/x.git', 'git@github.com:o/r.git', 'host:r.git', 'ssh://h/r', 'https://h/r'].map(isRelativeLocalPath)).toEqual(Array(6).fill(false));
  }, 60_000);

  it('polly-files: an uncommitted config, state git would commit, and state already tracked each say what to run', async () => {
    const repo = createTestRepo(NODE);
    const gitRunner = createGitRunner({ baseEnv: gitTestEnv() });
    expect(await pollyFilesCheck(gitRunner, repo.dir)).toEqual({ id: 'polly-files', status: 'ok', detail: 'no .polly/ yet (polly init writes it)' });
    expect(runCli(['init'], repo.dir).code).toBe(0);
    // Right after init: config and .gitignore untracked. Worktrees do not need them (the config is read from this checkout), a clone does.
    const fresh = await pollyFilesCheck(gitRunner, repo.dir);
    expect(fresh).toMatchObject({ status: 'problem', fix: 'git add .polly/.gitignore .polly/config.schema.json .polly/config.yaml && git commit -m "Polly config"' });
    expect(fresh.detail).toMatch(
      /^not committed: \.polly\/\.gitignore \(untracked\), \.polly\/config\.schema\.json \(untracked\), \.polly\/config\.yaml \(untracked\)\. .*worktrees do not need it; but a fresh clone/,
    );
    repo.git(['add', '.polly']);
    repo.git(['commit', '-q', '-m', 'Polly config']);
    // `git add .polly` took only what init meant to be committed: the state is ignored.
    expect(repo.git(['ls-files', '.polly']).trim().split('\n')).toEqual(['.polly/.gitignore', '.polly/config.schema.json', '.polly/config.yaml']);
    expect(await pollyFilesCheck(gitRunner, repo.dir)).toEqual({
      id: 'polly-files',
      status: 'ok',
      detail: '.polly/.gitignore, .polly/config.schema.json, .polly/config.yaml committed; runtime state ignored',
    });
    // A .gitignore written by an older init, which does not name what a newer Polly writes (base-checks/): state all the same.
    const ignore = readFileSync(join(repo.dir, '.polly/.gitignore'), 'utf8');
    repo.write('.polly/.gitignore', ignore.replace('base-checks/\n', ''));
    repo.git(['commit', '-q', '-am', 'older .gitignore']);
    repo.write('.polly/base-checks/0a1b.json', '{}\n');
    const older = await pollyFilesCheck(gitRunner, repo.dir);
    expect(older, JSON.stringify(older)).toMatchObject({ status: 'problem', fix: 'add those paths to .polly/.gitignore' });
    expect(older.detail).toBe(`git does not ignore Polly's runtime state (.polly/base-checks/): a "git add -A" would commit it`);
    repo.write('.polly/.gitignore', ignore);
    repo.git(['commit', '-q', '-am', '.gitignore names base-checks/']);
    expect(await pollyFilesCheck(gitRunner, repo.dir)).toMatchObject({ status: 'ok' });
    // A changed config; .gitignore gone (state no longer ignored) and the registry force-added.
    repo.write('.polly/config.yaml', `${readFileSync(join(repo.dir, '.polly/config.yaml'), 'utf8')}\n`);
    repo.git(['rm', '-q', '.polly/.gitignore']);
    repo.git(['add', '-f', '.polly/registry.json']);
    const broken = await pollyFilesCheck(gitRunner, repo.dir);
    expect(broken.status).toBe('problem');
    expect(broken.detail).toContain("git tracks Polly's runtime state (.polly/registry.json)");
    expect(broken.detail).toMatch(/git does not ignore Polly's runtime state \(\.polly\/journal\.jsonl(, \.polly\/runs\/)?(, \.polly\/[^,)]+)*\): a "git add -A" would commit it/);
    expect(broken.detail).toContain('.polly/base-checks/');
    expect(broken.detail).toContain('not committed: .polly/config.yaml (changed)');
    expect(broken.fix).toBe(
      'git rm -r --cached --quiet .polly/registry.json && git commit -m "Stop tracking Polly state"; run polly init (it writes .polly/.gitignore, which ignores them); git add .polly/config.yaml && git commit -m "Polly config"',
    );
  });

  it("acceptance-runner: each command's runner is probed in the checks' sandbox; a missing program or python module is a problem with its fix", async () => {
    // An interpreter that answers as python does without pytest (the machine's python may have it or not).
    const repo = createTestRepo({ 'tools/python3': '#!/bin/sh\necho "$0: No module named pytest" >&2\nexit 1\n', 'run-tests.sh': '#!/bin/sh\nexit 0\n' });
    chmodSync(join(repo.dir, 'tools/python3'), 0o755);
    chmodSync(join(repo.dir, 'run-tests.sh'), 0o755);
    // Committed: the probes run in a checkout of HEAD, as a task's worktree would (an uncommitted mode is the developer's).
    repo.git(['commit', '-q', '-am', 'executable']);
    const config = structuredClone(DEFAULT_CONFIG);
    config.workers.allow_unconfined = true; // confined where bubblewrap works, else unconfined: the probe runs either way
    config.acceptance.commands = ['./run-tests.sh', 'tools/python3 -m pytest -q', 'CI=1 polly-no-such-runner test'];
    const env = { ...gitTestEnv(), PATH: '/usr/bin:/bin' };
    const sandbox = probeSandbox();
    const c = await acceptanceRunnerCheck(repo.dir, config, env, sandbox);
    const where = sandbox.ok ? "in the checks' sandbox" : 'unconfined (workers.allow_unconfined)';
    expect(c.status).toBe('problem');
    expect(c.detail).toBe(
      `"tools/python3 -m pytest -q" cannot run ${where}: the Python module pytest (for tools/python3) is missing (tools/python3: No module named pytest); ` +
        `"CI=1 polly-no-such-runner test" cannot run ${where}: the program "polly-no-such-runner" is missing (polly-no-such-runner: not found)`,
    );
    expect(c.fix).toContain('apt-get install python3-pytest');
    expect(c.fix).toContain('install it where Polly runs, outside your home directory');
    config.acceptance.commands = ['./run-tests.sh', 'sh -c true'];
    expect(await acceptanceRunnerCheck(repo.dir, config, env, sandbox)).toEqual({
      id: 'acceptance-runner',
      status: 'ok',
      detail: `the runner of each acceptance command starts ${where}: ./run-tests.sh; sh -c true`,
    });
    // A virtualenv worktrees.setup makes in each worktree is not in the main checkout: not probed, not a problem.
    config.acceptance.commands = ['./run-tests.sh', '.venv/bin/python -m pytest'];
    config.worktrees.setup = 'python3 -m venv .venv && .venv/bin/pip install pytest';
    expect(await acceptanceRunnerCheck(repo.dir, config, env, sandbox)).toEqual({
      id: 'acceptance-runner',
      status: 'ok',
      detail: `the runner of each acceptance command starts ${where}: ./run-tests.sh; not probed, made by worktrees.setup in each worktree: .venv/bin/python -m pytest`,
    });
    // …but without a setup that makes it, it is missing.
    config.worktrees.setup = 'npm ci';
    expect(await acceptanceRunnerCheck(repo.dir, config, env, sandbox)).toMatchObject({
      status: 'problem',
      detail: expect.stringContaining('".venv/bin/python -m pytest" cannot run'),
    });
  });

  it("doctor's sandbox line is the sandbox's own probe: no bwrap on PATH, and a bwrap that cannot start the runner's sandbox, are problems", () => {
    expect(doctorSandboxProbe({ PATH: '/nonexistent' })).toMatchObject({ ok: false, reason: expect.stringContaining('bubblewrap is not installed') });
    // A bwrap that starts a namespace but refuses the worker runner's --cap-drop: doctor used to
    // probe with other flags and said "bubblewrap works" where every dispatch would be refused.
    const dir = mkdtempSync(join(tmpdir(), 'polly-doctor-bwrap-'));
    writeFileSync(join(dir, 'bwrap'), '#!/bin/sh\ncase " $* " in *" --cap-drop "*) echo "bwrap: cannot drop capabilities here" >&2; exit 1;; esac\nexit 0\n', { mode: 0o755 });
    const probe = doctorSandboxProbe({ PATH: `${dir}:/usr/bin:/bin` });
    expect(probe).toMatchObject({ ok: false, reason: expect.stringContaining('cannot drop capabilities here') });
    expect(probe).toEqual(probeSandbox({ bwrap: join(dir, 'bwrap') }));
  });
});
