/**
 * Toolchains under the developer's HOME in Polly's sandbox (issue 35 item 4), against the real
 * bubblewrap: a check finds the HOME copy first on PATH (rustup's `~/.cargo/bin` and
 * `~/.rustup`, pyenv, nvm, `~/.local/bin` and what it links to, any PATH directory under HOME),
 * cannot read the credentials next to it (`~/.cargo/credentials.toml`, a Node prefix's
 * `etc/npmrc`, a `.pypirc` inside `~/.pyenv`, `~/.npmrc`, `~/.config/gh`), and cannot write into
 * what is mounted. Then a real cargo (Debian's deb, extracted in rustup's layout under a test
 * HOME) runs from HOME inside a check and builds a crate; and, where this machine has rustup under
 * its own HOME, the check runs that version rather than the system's.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasSystemPackage } from '../../helpers/system-packages.js';
import { runCheck } from '../../../workers/acceptance.js';
import { commandSandbox } from '../../../workers/sandbox/command-sandbox.js';
import { detectHomeToolchains } from '../../../workers/sandbox/home-toolchains.js';

const exe = (path: string, body: string): void => {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
};

interface Box {
  root: string;
  repo: string;
  worktree: string;
  home: string;
}

function box(): Box {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-hometc-')));
  const repo = join(root, 'repo');
  const worktree = join(repo, '.worktrees', 't1');
  const home = join(root, 'home');
  mkdirSync(worktree, { recursive: true });
  mkdirSync(home);
  return { root, repo, worktree, home };
}

async function check(b: Box, command: string, path: string): Promise<{ code: number | null; out: string }> {
  const c = await commandSandbox({
    repoRoot: b.repo,
    worktree: b.worktree,
    network: false,
    allowUnconfined: false,
    realHome: b.home,
    stateDir: join(b.root, 'state'),
    baseEnv: { PATH: path },
  });
  expect(c.sandbox).not.toBeNull();
  const r = await runCheck(command, { cwd: b.worktree, env: c.env, sandbox: c.sandbox, timeoutSeconds: 60 });
  return { code: r.exitCode, out: r.output };
}

const sandboxOk = hasSystemPackage('bubblewrap', import.meta.url);

describe.skipIf(!sandboxOk)('toolchains under HOME in the checks sandbox (real bubblewrap)', () => {
  let b: Box;
  let path: string;
  beforeAll(() => {
    b = box();
    const h = (p: string) => join(b.home, p);
    for (const d of [
      '.cargo/bin',
      '.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin',
      '.pyenv/shims',
      '.nvm/versions/node/v99.0.0/bin',
      '.nvm/versions/node/v99.0.0/etc',
      '.local/bin',
      '.local/share/pipx/venvs/black/bin',
      '.config/gh',
      'bin',
      '.ssh',
    ])
      mkdirSync(h(d), { recursive: true });
    exe(h('.cargo/bin/cargo'), 'echo "cargo 9.9.9-home (RUSTUP_HOME=$RUSTUP_HOME)"');
    writeFileSync(h('.cargo/credentials.toml'), '[registry]\ntoken = "CARGO-SECRET"\n');
    writeFileSync(h('.cargo/config.toml'), '[registry]\ntoken = "CARGO-CONFIG-SECRET"\n');
    writeFileSync(h('.rustup/settings.toml'), 'default_toolchain = "stable-x86_64-unknown-linux-gnu"\n');
    exe(h('.pyenv/shims/python3'), 'echo "Python 3.99-home PYENV_ROOT=$PYENV_ROOT"');
    writeFileSync(h('.pyenv/.pypirc'), '[pypi]\npassword = PYPI-SECRET\n');
    exe(h('.nvm/versions/node/v99.0.0/bin/node'), 'echo v99.0.0-home');
    writeFileSync(h('.nvm/versions/node/v99.0.0/etc/npmrc'), '//registry.npmjs.org/:_authToken=NPM-PREFIX-SECRET\n');
    exe(h('.local/share/pipx/venvs/black/bin/black'), 'echo "black 99-home"');
    symlinkSync(h('.local/share/pipx/venvs/black/bin/black'), h('.local/bin/black'));
    exe(h('bin/mytool'), 'echo mytool-home');
    writeFileSync(h('.npmrc'), '//registry.npmjs.org/:_authToken=NPM-SECRET\n');
    writeFileSync(h('.config/gh/hosts.yml'), 'github.com:\n  oauth_token: GH-SECRET\n');
    writeFileSync(h('.ssh/id_ed25519'), 'SSH-SECRET');
    path = [h('.cargo/bin'), h('.pyenv/shims'), h('.nvm/versions/node/v99.0.0/bin'), h('.local/bin'), h('bin'), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
  });

  it('finds the HOME copies first on PATH, with their roots named; credentials stay unreadable; the mounts are read-only', async () => {
    const h = (p: string) => join(b.home, p);
    const r = await check(
      b,
      [
        'cargo --version',
        'python3',
        'node',
        'black',
        'mytool',
        `for f in ${h('.cargo/credentials.toml')} ${h('.cargo/config.toml')} ${h('.pyenv/.pypirc')} ${h('.nvm/versions/node/v99.0.0/etc/npmrc')} ${h('.npmrc')} ${h('.config/gh/hosts.yml')} ${h('.ssh/id_ed25519')}; do cat "$f" 2>/dev/null; done; echo read-done`,
        `for d in ${h('.cargo/bin')} ${h('.rustup')} ${h('.pyenv')} ${h('.nvm/versions/node/v99.0.0/etc')} ${h('.local/bin')} ${h('bin')}; do (echo x > "$d/w") 2>/dev/null && echo "WROTE $d"; done; echo write-done`,
        'echo "HOME=$HOME"',
      ].join('; '),
      path,
    );
    const lines = r.out.split('\n').filter(Boolean);
    expect(lines).toEqual([
      `cargo 9.9.9-home (RUSTUP_HOME=${h('.rustup')})`,
      `Python 3.99-home PYENV_ROOT=${h('.pyenv')}`,
      'v99.0.0-home',
      'black 99-home',
      'mytool-home',
      'read-done',
      'write-done',
      `HOME=${join(b.root, 'state', 'home')}`,
    ]);
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(/SECRET/);
  });

  it('detects each manager, and never mounts the sensitive directories even on PATH', () => {
    const found = detectHomeToolchains(b.home, { PATH: `${join(b.home, '.config/gh')}:${join(b.home, '.ssh')}:${path}` });
    expect(found.toolchains.map((t) => t.manager)).toEqual(['rustup', 'cargo', 'pyenv', 'nvm', 'local-bin', 'path']);
    expect(found.readOnly).toContain(join(b.home, '.local/share/pipx/venvs/black'));
    expect(found.readOnly.some((p) => p.includes('.config') || p.includes('.ssh') || p === join(b.home, '.cargo'))).toBe(false);
    expect(found.maskedFiles.sort()).toEqual([join(b.home, '.nvm/versions/node/v99.0.0/etc/npmrc'), join(b.home, '.pyenv/.pypirc')]);
    expect(found.env).toEqual({ RUSTUP_HOME: join(b.home, '.rustup'), PYENV_ROOT: join(b.home, '.pyenv'), NVM_DIR: join(b.home, '.nvm') });
  });
});

/** Debian's cargo .deb: from apt's cache, else `apt-get download` into a cache dir; null when neither works (offline, not Debian). */
function cargoDeb(cacheDir: string): string | null {
  const pick = (dir: string) =>
    existsSync(dir)
      ? (readdirSync(dir)
          .filter((f) => /^cargo_.*\.deb$/.test(f))
          .map((f) => join(dir, f))[0] ?? null)
      : null;
  const cached = pick('/var/cache/apt/archives') ?? pick(cacheDir);
  if (cached) return cached;
  mkdirSync(cacheDir, { recursive: true });
  const r = spawnSync('apt-get', ['download', 'cargo'], { cwd: cacheDir, encoding: 'utf8', timeout: 120_000 });
  return r.status === 0 ? pick(cacheDir) : null;
}

const cacheDir = join(tmpdir(), 'polly-test-debs');
const deb = sandboxOk && spawnSync('dpkg-deb', ['--version']).status === 0 ? cargoDeb(cacheDir) : null;

describe.skipIf(!deb)('a real cargo under HOME (Debian cargo deb in rustup layout)', () => {
  it('the check runs the HOME copy (its path and version) and builds a crate with it; CARGO_HOME stays writable and private', async () => {
    const b = box();
    const toolchain = join(b.home, '.rustup', 'toolchains', 'stable-x86_64-unknown-linux-gnu');
    const extracted = join(b.root, 'deb');
    execFileSync('dpkg-deb', ['-x', deb!, extracted]);
    mkdirSync(join(toolchain, 'bin'), { recursive: true });
    execFileSync('cp', [join(extracted, 'usr', 'bin', 'cargo'), join(toolchain, 'bin', 'cargo')]);
    mkdirSync(join(b.home, '.cargo', 'bin'), { recursive: true });
    symlinkSync(join(toolchain, 'bin', 'cargo'), join(b.home, '.cargo', 'bin', 'cargo'));
    writeFileSync(join(b.home, '.cargo', 'credentials.toml'), '[registry]\ntoken = "CARGO-SECRET"\n');
    const version = execFileSync(join(toolchain, 'bin', 'cargo'), ['--version'], { encoding: 'utf8' }).trim();
    writeFileSync(join(b.worktree, 'Cargo.toml'), '[package]\nname = "hello"\nversion = "0.1.0"\nedition = "2021"\n');
    mkdirSync(join(b.worktree, 'src'));
    writeFileSync(join(b.worktree, 'src', 'main.rs'), 'fn main() { println!("hello from the crate"); }\n');
    const r = await check(
      b,
      `readlink -f "$(command -v cargo)"; cargo --version; cargo run -q --offline; cat ${join(b.home, '.cargo', 'credentials.toml')} 2>/dev/null || echo no-credentials; ls -d "$HOME/.cargo" 2>/dev/null || echo no-private-cargo-home`,
      `${join(b.home, '.cargo', 'bin')}:/usr/bin:/bin`,
    );
    const lines = r.out.split('\n').filter((l) => l && !/^\s*(Compiling|Finished|Running|warning)/.test(l));
    expect(lines[0]).toBe(join(toolchain, 'bin', 'cargo'));
    expect(lines[1]).toBe(version);
    expect(lines).toContain('hello from the crate');
    expect(lines).toContain('no-credentials');
    expect(r.code).toBe(0);
  });
});

// This machine's own rustup (the case: ~/.cargo/bin/cargo 1.95 over a system cargo 1.65).
const realCargo = join(homedir(), '.cargo', 'bin', 'cargo');
const realRustup = join(homedir(), '.rustup');
describe.skipIf(!sandboxOk || !existsSync(realCargo) || !existsSync(realRustup))("this machine's rustup under HOME", () => {
  it("a check runs the developer's cargo, not the system's", async () => {
    const expected = execFileSync(realCargo, ['--version'], { encoding: 'utf8' }).trim();
    const b = box();
    const c = await commandSandbox({
      repoRoot: b.repo,
      worktree: b.worktree,
      network: false,
      allowUnconfined: false,
      stateDir: join(b.root, 'state'),
      baseEnv: { PATH: `${join(homedir(), '.cargo', 'bin')}:/usr/bin:/bin` },
    });
    const r = await runCheck(`cargo --version; (echo x > ${realRustup}/w) 2>/dev/null && echo WROTE; true`, {
      cwd: b.worktree,
      env: c.env,
      sandbox: c.sandbox,
      timeoutSeconds: 60,
    });
    expect(r.output.trim()).toBe(expected);
    expect(r.exitCode).toBe(0);
  });
});
