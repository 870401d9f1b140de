/**
 * Toolchains installed under the developer's HOME, which Polly's sandbox would otherwise hide
 * (./sandbox-profiles.ts covers the real HOME with an empty tmpfs): rustup's `~/.rustup` and
 * `~/.cargo/bin`, pyenv, nvm, volta, asdf, mise, `~/.local/bin`, Go's `~/go/bin` and `~/sdk`
 * (golang.org/dl), bun and deno, and any other `PATH` directory under HOME. The sandbox binds
 * their installation directories back read-only at the same paths, so a check runs the same
 * `cargo` or `python` the developer runs (issue 35 item 4), and sets the variables each manager
 * reads to find its root (which it would otherwise derive from the private `$HOME`).
 *
 * Never their credentials: `~/.cargo` is bound only as `bin/` (its `credentials.toml`,
 * `config.toml` and registry cache stay hidden; `CARGO_HOME` stays the private, writable
 * `~/.cargo`); inside each mounted directory, files and directories named like credentials
 * (`.npmrc`, a Node prefix's `etc/npmrc`, `.pypirc`, `.netrc`, `credentials*`, `.docker`, …) are
 * covered ({@link HomeToolchains.maskedFiles}, {@link HomeToolchains.maskedDirs}); sensitive directories (`~/.ssh`, `~/.config`,
 * `~/.aws`, `~/.docker`, …) are never mounted even when they are on PATH.
 *
 * Where each manager keeps its root (their documentation):
 * - rustup: `RUSTUP_HOME`, default `~/.rustup`; proxies in `$CARGO_HOME/bin`, default `~/.cargo/bin`
 *   (https://rust-lang.github.io/rustup/environment-variables.html)
 * - pyenv: `PYENV_ROOT`, default `~/.pyenv` (https://github.com/pyenv/pyenv#environment-variables)
 * - nvm: `NVM_DIR`, default `~/.nvm`; volta: `VOLTA_HOME`, default `~/.volta`
 * - asdf: `ASDF_DATA_DIR`, default `~/.asdf` (https://asdf-vm.com/manage/configuration.html)
 * - mise: `MISE_DATA_DIR`, default `$XDG_DATA_HOME/mise` = `~/.local/share/mise`; its global
 *   config `~/.config/mise` (https://mise.jdx.dev/configuration.html)
 * - Go: `GOPATH/bin`, default `~/go/bin`; `golang.org/dl` toolchains in `~/sdk/go1.x`; `GOROOT`
 * - bun: `BUN_INSTALL`, default `~/.bun`; deno: `DENO_INSTALL`, default `~/.deno`
 */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { hostUserDirs } from './agent-state-dir.js';

/** One toolchain manager (or PATH directory) found under HOME. */
export interface HomeToolchain {
  /** `rustup`, `cargo`, `pyenv`, `nvm`, `volta`, `asdf`, `mise`, `local-bin`, `go`, `bun`, `deno`, or `path` (another PATH directory under HOME). */
  manager: string;
  /** The directories (or files) it needs, bound read-only. Absolute. */
  paths: string[];
}

/** What the sandbox adds for the toolchains under HOME. Paths absolute, each existing when detected. */
export interface HomeToolchains {
  /** What was found, for `polly doctor` and `polly init`. */
  toolchains: HomeToolchain[];
  /** Every path to bind read-only at the same path (the union of `toolchains[].paths`). */
  readOnly: string[];
  /** Credential files inside `readOnly`, each covered by an empty file (`/dev/null` bound read-only). */
  maskedFiles: string[];
  /** Credential directories inside `readOnly`, each covered by an empty read-only tmpfs. */
  maskedDirs: string[];
  /** Variables a process needs to find the mounted roots (`RUSTUP_HOME`, `PYENV_ROOT`, …). */
  env: Record<string, string>;
}

/** Names that hold credentials wherever they sit (npm, PyPI, netrc, cargo, docker, gh, gem, yarn 2+, composer). */
const CREDENTIAL_NAMES: ReadonlySet<string> = new Set([
  '.npmrc',
  'npmrc',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  'credentials',
  'credentials.toml',
  'credentials.json',
  '.credentials.json',
  '.docker',
  '.ssh',
  '.gnupg',
  '.aws',
  'hosts.yml',
  'auth.json',
  '.yarnrc.yml',
  '.env',
]);

/** Directories under HOME never mounted, even when on PATH: keys, tokens, cloud and tool configs. */
const SENSITIVE = ['.ssh', '.gnupg', '.aws', '.azure', '.config', '.docker', '.kube', '.password-store', '.local/share/keyrings', '.local/state', '.cache', '.gem', '.m2', '.npm'];

function under(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** True when `text` (a config file) looks like it holds a secret: a token, password, credential or an `[env]` table. */
export function mayHoldSecrets(text: string): boolean {
  return /token|secret|passw|credential|api[_-]?key|^\s*\[env\]/im.test(text);
}

/**
 * Find the toolchains under `realHome` (see the module doc). Pure but for reading the file system.
 * @param realHome the developer's HOME (absolute); `/` or empty finds nothing.
 * @param env      Polly's environment: `PATH` (its directories under HOME are mounted too) and the
 *                 managers' variables (`RUSTUP_HOME`, `PYENV_ROOT`, `NVM_DIR`, `VOLTA_HOME`,
 *                 `ASDF_DATA_DIR`, `MISE_DATA_DIR`, `XDG_DATA_HOME`, `GOPATH`, `GOROOT`,
 *                 `BUN_INSTALL`, `DENO_INSTALL`): where one is set, it names the root.
 * @returns the mounts, masks and variables; all empty when nothing is installed under HOME.
 */
export function detectHomeToolchains(realHome: string, env: NodeJS.ProcessEnv = process.env): HomeToolchains {
  const out: HomeToolchains = { toolchains: [], readOnly: [], maskedFiles: [], maskedDirs: [], env: {} };
  if (!realHome || resolve(realHome) === '/') return out;
  const home = realOrNull(realHome) ?? resolve(realHome);
  // Under HOME, or under a host XDG dir the sandbox hides too (mise in an XDG_DATA_HOME outside HOME).
  const hiddenRoots = [home, ...hostUserDirs(env)];
  const inHome = (p: string) => hiddenRoots.some((r) => under(p, r) && p !== r);
  const sensitive = (p: string) => SENSITIVE.some((s) => under(p, join(home, s)));
  const root = (variable: string, fallback: string): string => {
    const v = env[variable];
    return v && isAbsolute(v) ? v : join(home, fallback);
  };
  const add = (manager: string, paths: string[], vars: Record<string, string> = {}): void => {
    const present = paths.filter((p) => existsSync(p) && !sensitive(p));
    if (present.length === 0) return;
    const mounted = present.filter((p) => inHome(p) && !out.readOnly.some((r) => under(p, r)));
    // Outside HOME (and the hidden XDG dirs) the root is visible already: only its variable is needed.
    Object.assign(out.env, vars);
    if (mounted.length === 0) return;
    out.toolchains.push({ manager, paths: mounted });
    out.readOnly.push(...mounted);
  };

  const rustup = root('RUSTUP_HOME', '.rustup');
  if (isDir(rustup)) add('rustup', [rustup], { RUSTUP_HOME: rustup });
  // Only bin/: CARGO_HOME itself holds credentials.toml and config.toml (registry tokens), and must stay writable for downloads.
  add('cargo', [join(root('CARGO_HOME', '.cargo'), 'bin')]);
  const pyenv = root('PYENV_ROOT', '.pyenv');
  if (isDir(pyenv)) add('pyenv', [pyenv], { PYENV_ROOT: pyenv });
  const nvm = root('NVM_DIR', '.nvm');
  if (isDir(nvm)) add('nvm', [nvm], { NVM_DIR: nvm });
  const volta = root('VOLTA_HOME', '.volta');
  if (isDir(volta)) add('volta', [volta], { VOLTA_HOME: volta });
  const asdf = root('ASDF_DATA_DIR', '.asdf');
  if (isDir(asdf)) add('asdf', [asdf, join(home, '.tool-versions'), join(home, '.asdfrc')], { ASDF_DATA_DIR: asdf });
  const xdgData = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(home, '.local', 'share');
  const mise = env.MISE_DATA_DIR && isAbsolute(env.MISE_DATA_DIR) ? env.MISE_DATA_DIR : join(xdgData, 'mise');
  if (isDir(mise)) {
    add('mise', [mise, join(home, '.tool-versions')], { MISE_DATA_DIR: mise });
    // mise's global config names the versions; bound only when it holds no secret (an [env] table may).
    const config = join(home, '.config', 'mise', 'config.toml');
    let text: string | null = null;
    try {
      text = readFileSync(config, 'utf8');
    } catch {
      // none
    }
    if (text !== null && !mayHoldSecrets(text)) {
      out.readOnly.push(config);
      out.toolchains.find((t) => t.manager === 'mise')?.paths.push(config);
      out.env.MISE_GLOBAL_CONFIG_FILE = config;
    }
  }
  add('local-bin', [join(home, '.local', 'bin')]);
  const gopaths = (env.GOPATH ?? '').split(':').filter((p) => isAbsolute(p));
  add('go', [...(gopaths.length > 0 ? gopaths : [join(home, 'go')]).map((p) => join(p, 'bin')), join(home, 'sdk')]);
  if (env.GOROOT && isAbsolute(env.GOROOT) && isDir(env.GOROOT)) add('go', [env.GOROOT], { GOROOT: env.GOROOT });
  add('bun', [join(root('BUN_INSTALL', '.bun'), 'bin')]);
  add('deno', [join(root('DENO_INSTALL', '.deno'), 'bin')]);
  // Any other PATH directory under HOME (~/bin, an npm prefix's bin, …).
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!isAbsolute(dir) || !isDir(dir)) continue;
    const real = realOrNull(dir) ?? dir;
    if (inHome(real) && !out.readOnly.some((r) => under(real, r))) add('path', [real]);
  }
  // Links in the mounted bin directories that point elsewhere under HOME (pipx, uv tools, an npm
  // prefix's lib/node_modules/<pkg>): the prefix two levels above the target (<prefix>/bin/tool).
  for (const t of [...out.toolchains]) {
    for (const p of t.paths) {
      if (!/\/bin$/.test(p)) continue;
      let names: string[] = [];
      try {
        names = readdirSync(p);
      } catch {
        continue;
      }
      for (const name of names) {
        const target = realOrNull(join(p, name));
        if (!target || !inHome(target) || out.readOnly.some((r) => under(target, r))) continue;
        const prefix = dirname(dirname(target));
        if (inHome(prefix) && !sensitive(prefix) && ![join(home, '.local'), join(home, '.local', 'share')].includes(prefix)) {
          out.readOnly.push(prefix);
          t.paths.push(prefix);
        }
      }
    }
  }
  const masked = credentialPaths(out.readOnly);
  out.maskedFiles = masked.files;
  out.maskedDirs = masked.dirs;
  return out;
}

/**
 * Credential files and directories inside `roots`: names from {@link CREDENTIAL_NAMES} down to
 * three levels below each root, and every Node prefix's `etc/npmrc` (nvm's `versions/node/*`,
 * volta's `tools/image/node/*`). Regular files and directories only (a symlink into the hidden
 * HOME already shows nothing). Bounded: at most 20,000 entries looked at.
 */
export function credentialPaths(roots: readonly string[]): { files: string[]; dirs: string[] } {
  const files: string[] = [];
  const dirs: string[] = [];
  let budget = 20_000;
  const walk = (dir: string, depth: number): void => {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (--budget < 0) return;
      const p = join(dir, name);
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) continue;
      if (CREDENTIAL_NAMES.has(name) && st.isFile()) files.push(p);
      else if (CREDENTIAL_NAMES.has(name) && st.isDirectory()) dirs.push(p);
      else if (st.isDirectory() && depth < 3 && name !== 'node_modules') walk(p, depth + 1);
    }
  };
  for (const r of roots) {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(r);
    } catch {
      continue;
    }
    if (!st.isDirectory()) continue;
    walk(r, 1);
    for (const nodes of [join(r, 'versions', 'node'), join(r, 'tools', 'image', 'node')]) {
      let versions: string[] = [];
      try {
        versions = readdirSync(nodes);
      } catch {
        continue;
      }
      for (const v of versions) {
        const npmrc = join(nodes, v, 'etc', 'npmrc');
        try {
          if (lstatSync(npmrc).isFile() && !files.includes(npmrc)) files.push(npmrc);
        } catch {
          // none
        }
      }
    }
  }
  return { files, dirs };
}
