/**
 * What a sandbox shows of the host outside the worker's own directories: an allowlist (issue 27
 * item 1, "deny by default, for reading too"; docs/security.md "The sandbox"). The sandbox's root is
 * an empty tmpfs (./sandbox-spec.ts `bwrapArgs`); on it are bound read-only only:
 *
 * - the system directories programs run from: `/usr`, `/bin`, `/sbin`, `/lib`, `/lib32`, `/lib64`,
 *   `/libx32` (a merged-/usr host's `/bin -> usr/bin` links are made as links), `/sys`, and the
 *   package stores of Nix and Guix (`/nix/store`, `/gnu/store`) where they exist;
 * - the files of `/etc` programs read to start, resolve names and verify TLS ({@link SYSTEM_ETC}):
 *   `passwd`, `group`, `hosts`, `resolv.conf`, `nsswitch.conf`, the loader's cache, CA
 *   certificates, `alternatives`, the shells' profiles, locale and time zone, the JVM's and
 *   Python's config dirs, fonts. Never `shadow`, `ssh/`, `ssl/private`, `sudoers`, nor the global
 *   configs that may hold a registry token or a credential helper (`npmrc`, `pip.conf`,
 *   `gitconfig`, `wgetrc`, `netrc`);
 * - every `PATH` directory outside those (a toolchain under `/opt`: `/opt/node/bin` binds its
 *   prefix `/opt/node`), except those under a path the sandbox hides (HOME, the repository, the
 *   worktrees dir: ./home-toolchains.ts binds HOME's toolchains, the worktree has its own
 *   `node_modules/.bin`);
 * - what the caller adds to the spec's `readOnly`: Polly's install and Node's prefix
 *   (./sandbox.ts), the toolchains under HOME, `workers.tool_paths` from config.
 *
 * Everything else of the host is absent: `/home`, `/root`, `/srv`, `/opt` (but a toolchain on
 * `PATH` there), `/var`, `/mnt`, `/media`, `/run`, other users' files, directories beside the
 * repository. `/tmp` and `/var/tmp` are the sandbox's own empty tmpfs.
 *
 * Global npm configs inside a bound tree (`/usr/etc/npmrc`, `/usr/local/etc/npmrc`, a PATH prefix's
 * `etc/npmrc`: an `_authToken` lives there) are covered by an empty file.
 *
 * Sources: the Filesystem Hierarchy Standard 3.0 (https://refspecs.linuxfoundation.org/FHS_3.0/),
 * nsswitch.conf(5), ld.so(8), resolv.conf(5), update-ca-certificates(8), update-alternatives(1).
 */
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { credentialPaths } from './home-toolchains.js';

/** Top-level system directories every sandbox shows read-only (those that exist). */
export const SYSTEM_DIRS: readonly string[] = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/sys', '/nix/store', '/gnu/store'];

/**
 * The entries of `/etc` every sandbox shows read-only (those that exist). A name ending in `*`
 * matches every entry of `/etc` with that prefix (`java-*`: `java-17-openjdk`).
 */
export const SYSTEM_ETC: readonly string[] = [
  // user and host names (getpwuid, getaddrinfo): nsswitch.conf(5)
  'passwd',
  'group',
  'nsswitch.conf',
  'host.conf',
  'hosts',
  'hostname',
  'resolv.conf',
  'gai.conf',
  'networks',
  'protocols',
  'services',
  'rpc',
  'netconfig',
  // the dynamic loader: ld.so(8)
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  // CA certificates (Debian, Fedora/RHEL), OpenSSL's config; never the private keys beside them
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/tls/cert.pem',
  'pki/tls/openssl.cnf',
  'pki/ca-trust',
  'crypto-policies',
  // shells, terminals, locale and time
  'profile',
  'profile.d',
  'bash.bashrc',
  'bashrc',
  'inputrc',
  'shells',
  'terminfo',
  'localtime',
  'timezone',
  'locale.alias',
  'locale.conf',
  'mtab',
  // Debian's alternatives (/usr/bin/java -> /etc/alternatives/java -> …), file types, the distribution
  'alternatives',
  'mime.types',
  'magic',
  'magic.mime',
  'os-release',
  'lsb-release',
  'debian_version',
  'redhat-release',
  'alpine-release',
  // runtimes whose install under /usr links its config here (the JVM's conf/, Debian's Python, Perl), fonts, Chromium's wrapper
  'java-*',
  'python3',
  'python3.*',
  'perl',
  'fonts',
  'chromium',
  'chromium.d',
];

/**
 * Never bound for being on `PATH`: temp dirs, `/proc`, and users' homes (`/root`, `/home`: the
 * developer's own toolchains there come through ./home-toolchains.ts, which binds only their
 * `bin/` and covers credentials; `~/.cargo/bin` would otherwise bind `~/.cargo`, its
 * `credentials.toml` included).
 */
const NOT_FROM_PATH: readonly string[] = ['/tmp', '/var/tmp', '/proc', '/root', '/home'];

/** The host paths a sandbox shows outside the worker's own dirs. All absolute. */
export interface SystemView {
  /** Bound read-only at the same path (a symlink source is followed: its target's content shows there). */
  binds: string[];
  /** Made as symbolic links (a merged-/usr host's `/bin -> usr/bin`; `/etc/localtime -> /usr/share/zoneinfo/…`). */
  symlinks: Array<{ path: string; target: string }>;
  /** Files inside `binds` covered by an empty one (global npm configs, credentials in a PATH toolchain). */
  masked: string[];
  /** Directories inside `binds` covered by an empty read-only tmpfs (credential dirs in a PATH toolchain). */
  maskedDirs: string[];
}

export interface SystemViewInput {
  /** The sandboxed process's `PATH`: its directories outside the system dirs are bound too. */
  pathVar?: string | undefined;
  /** Paths the sandbox hides (HOME, the repository, the worktrees dir): a PATH directory under one is not bound. */
  hidden?: readonly string[];
  /** Where to look instead of `/` (tests); the view's paths are still absolute in the sandbox. Default `/`. */
  fsRoot?: string;
}

function under(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function lstatKind(path: string): 'link' | 'dir' | 'file' | null {
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return null;
    return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : 'file';
  } catch {
    return null; // not a directory on the way, no permission
  }
}

/** The host part of the view (system dirs, /etc), per `fsRoot`, for the life of the process. */
const hostParts = new Map<string, SystemView>();

/**
 * The host paths a sandbox shows (see the module doc). Reads the file system: the system dirs and
 * `/etc` once per process (an `lstat` per candidate, about 80, and `/etc`'s listing for the `*`
 * names; a package installed later shows from the next worker process on), the PATH directories
 * and the npm configs at each call. A symlink whose target is shown anyway (under a system dir, or `/proc`) is
 * made as a link; any other is bound, so its target's content shows at the link's path
 * (`/etc/resolv.conf -> /run/…/stub-resolv.conf`) without showing the target's directory.
 */
export function systemView(input: SystemViewInput = {}): SystemView {
  const fsRoot = input.fsRoot ?? '/';
  const host = (p: string) => (fsRoot === '/' ? p : join(fsRoot, p));
  const cached = hostParts.get(fsRoot);
  const view: SystemView = cached
    ? { binds: [...cached.binds], symlinks: [...cached.symlinks], masked: [], maskedDirs: [] }
    : { binds: [], symlinks: [], masked: [], maskedDirs: [] };
  const shown = (p: string) => view.binds.some((b) => under(p, b)) || under(p, '/proc');
  const add = (path: string): void => {
    const kind = lstatKind(host(path));
    if (kind === null || view.binds.some((b) => under(path, b))) return;
    if (kind === 'link') {
      const target = readlinkSync(host(path));
      const resolved = resolve(dirname(path), target);
      if (shown(resolved)) {
        view.symlinks.push({ path, target });
        return;
      }
      if (!existsSync(host(path))) return; // dangling
    }
    view.binds.push(path);
  };
  if (!cached) {
    // `/usr` comes first, so `/bin -> usr/bin` (merged /usr) is made as a link.
    for (const dir of SYSTEM_DIRS) add(dir);
    let etcNames: string[] = [];
    try {
      etcNames = readdirSync(host('/etc'));
    } catch {
      // no /etc
    }
    for (const name of SYSTEM_ETC) {
      if (name.endsWith('*')) {
        for (const n of etcNames) if (n.startsWith(name.slice(0, -1))) add(`/etc/${n}`);
      } else add(`/etc/${name}`);
    }
    hostParts.set(fsRoot, { binds: [...view.binds], symlinks: [...view.symlinks], masked: [], maskedDirs: [] });
  }
  // PATH directories outside the system dirs: their prefix (`/opt/node/bin` -> `/opt/node`).
  const hidden = input.hidden ?? [];
  for (const dir of (input.pathVar ?? '').split(':')) {
    if (!isAbsolute(dir) || dir === '/' || NOT_FROM_PATH.some((n) => under(dir, n))) continue;
    if (hidden.some((h) => under(dir, h))) continue;
    if (lstatKind(host(dir)) === null) continue;
    let real = dir;
    try {
      real = fsRoot === '/' ? realpathSync(dir) : dir;
    } catch {
      continue;
    }
    if (hidden.some((h) => under(real, h)) || NOT_FROM_PATH.some((n) => under(real, n)) || shown(real)) continue;
    for (const p of new Set([dir, real])) {
      if (shown(p)) continue;
      const parent = dirname(p);
      const prefix = /\/s?bin$/.test(p) && parent.split('/').filter(Boolean).length >= 2 ? parent : p;
      if (!shown(prefix)) view.binds.push(prefix);
    }
  }
  for (const npmrc of ['/usr/etc/npmrc', '/usr/local/etc/npmrc']) {
    if (lstatKind(host(npmrc)) === 'file' && shown(npmrc)) view.masked.push(npmrc);
  }
  // Credential files in a toolchain bound for being on PATH (`/opt/node/etc/npmrc`, a `.pypirc`):
  // the same names ./home-toolchains.ts covers under HOME, looked for three levels down.
  const fromPath = view.binds.filter((b) => !(cached ?? hostParts.get(fsRoot))!.binds.includes(b));
  if (fromPath.length > 0 && fsRoot === '/') {
    const found = credentialPaths(fromPath);
    view.masked.push(...found.files.filter((f) => !view.masked.includes(f)));
    view.maskedDirs.push(...found.dirs);
  }
  return view;
}
