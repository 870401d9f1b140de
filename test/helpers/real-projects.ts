/**
 * Published projects for the real-project e2e tests: fetched by name, pinned version and pinned
 * SHA-256, cached outside the repository, never copied into it.
 *
 * Two sources, both reachable from CI (.ci/run's machine has the npm registry and Debian's archive):
 * - **npm**: `npm pack NAME@VERSION` (npm's own registry settings, proxy and cache apply); the
 *   tarball's SHA-256 must equal the pin.
 * - **Debian (bookworm)**: binary packages (.deb) from the archive's pool, downloaded with apt's
 *   own downloader (`/usr/lib/apt/apt-helper download-file URI PATH SHA256:…`, so apt's proxy and
 *   transport configuration apply and apt itself refuses a file whose hash differs), unpacked with
 *   `dpkg-deb -x`. Many ship the project's sources: golang-github-*-dev (/usr/share/gocode/src),
 *   librust-*-dev (/usr/share/cargo/registry), some python3-* (tests inside the package). The
 *   mirror is read at run time from the machine's apt sources (/etc/apt/sources.list and
 *   /etc/apt/sources.list.d/*.list, *.sources — the files apt reads); no host name is written here.
 *   The .deb's pool path needs its source package's name (`apt-cache show PKG` prints it as
 *   `Source:`; absent, it is the package's own name). No apt lists are needed (`apt-get update` is
 *   not run): the pinned SHA-256 fixes every byte, more strictly than the signed Release would.
 *   Debian *source* packages are not offered: on the CI-like machine this was written on, the
 *   archive mirror serves a source package's .dsc but answers 404 for its tarballs.
 *
 * Cache: `${POLLY_TEST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/polly-test-projects}/<kind>/<name>@<version>-<sha256 prefix>/`.
 * A cached file is re-hashed on every use; a copy that no longer matches is fetched again. A fetch
 * that fails (no network, no apt sources, a hash mismatch) throws an Error saying what was fetched,
 * from where, apt's or npm's output, and what to do — the calling test FAILS, it never skips.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';

/** A published npm package, pinned. */
export interface NpmPackagePin {
  /** Package name, scoped or not (`@fastify/error`). */
  name: string;
  /** Exact published version (`4.3.0`). */
  version: string;
  /** SHA-256 (hex) of the tarball `npm pack` downloads. */
  sha256: string;
}

/** A Debian binary package (.deb), pinned. */
export interface DebianBinaryPin {
  /** Binary package name (`golang-github-pkg-errors-dev`). */
  package: string;
  /** Its source package's name: it names the pool directory (`apt-cache show PKG`, field `Source:`). */
  source: string;
  /** Debian version, epoch included when it has one. */
  version: string;
  /** `all`, `amd64`, …, as in the .deb's file name. */
  architecture: string;
  /** SHA-256 (hex) of the .deb file. */
  sha256: string;
  /** Suite whose archive holds it; default `bookworm`. */
  suite?: string;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command without blocking the event loop; never throws (the exit code says). */
function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<Ran> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const raw = error ? (error as NodeJS.ErrnoException).code : 0;
      const code = typeof raw === 'number' ? raw : error ? null : 0;
      done({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

/** The cache root: POLLY_TEST_CACHE, else $XDG_CACHE_HOME/polly-test-projects, else ~/.cache/polly-test-projects. */
export function realProjectCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.POLLY_TEST_CACHE) return env.POLLY_TEST_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'polly-test-projects');
}

/** SHA-256 (hex) of a file's bytes. */
export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function checkPin(what: string, sha256: string): void {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`${what}: the pinned sha256 "${sha256}" is not 64 lowercase hex digits; pin the file's real SHA-256.`);
}

/** The cache entry's directory for one pinned artefact (`/` of a scoped name becomes `+`). */
function entryDir(kind: string, name: string, version: string, sha256: string): string {
  return join(realProjectCacheDir(), kind, `${name.replace(/\//g, '+')}@${version}-${sha256.slice(0, 16)}`);
}

/** `path` exists and hashes to `sha256`; a file that does not is removed (to be fetched again). */
function cachedAndIntact(path: string, sha256: string): boolean {
  if (!existsSync(path)) return false;
  if (sha256File(path) === sha256) return true;
  rmSync(path, { force: true });
  return false;
}

/** A fresh private directory next to the cache entry, for a download that is renamed into place when verified. */
function scratchDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.partial-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(tmp);
  return tmp;
}

/**
 * The published npm tarball of `pin`, in the cache (fetched with `npm pack` when absent or corrupt).
 * @returns the tarball's path (a .tgz whose top directory is `package/`).
 * @throws when npm cannot fetch it (no network: the message says so) or its SHA-256 is not the pin.
 */
export async function fetchNpmPackage(pin: NpmPackagePin): Promise<string> {
  const spec = `${pin.name}@${pin.version}`;
  checkPin(`npm package ${spec}`, pin.sha256);
  const dir = entryDir('npm', pin.name, pin.version, pin.sha256);
  const target = join(dir, 'package.tgz');
  if (cachedAndIntact(target, pin.sha256)) return target;
  const tmp = scratchDir(dir);
  try {
    const pack = await run(
      'npm',
      ['pack', spec, '--pack-destination', tmp, '--json', '--fetch-retries=1', '--fetch-retry-mintimeout=2000', '--fetch-retry-maxtimeout=5000'],
      tmp,
      120_000,
    );
    if (pack.code !== 0) {
      throw new Error(
        `npm pack ${spec} failed (exit ${pack.code}): this test needs the npm registry to fetch the published package it works on. ` +
          `Check the network and npm's registry settings, then run it again.\n${pack.stderr.trim()}`,
      );
    }
    const [packed] = JSON.parse(pack.stdout) as Array<{ filename: string }>;
    if (!packed) throw new Error(`npm pack ${spec} printed no tarball: ${pack.stdout.trim()}`);
    const got = join(tmp, basename(packed.filename.replace(/^@/, '').replace(/\//g, '-')));
    const file = existsSync(got) ? got : join(tmp, readdirSync(tmp).find((f) => f.endsWith('.tgz')) ?? packed.filename);
    const actual = sha256File(file);
    if (actual !== pin.sha256) {
      throw new Error(
        `npm pack ${spec} downloaded a tarball whose SHA-256 is ${actual}, not the pinned ${pin.sha256}: ` +
          'the registry serves different bytes for this version. Check that the pin was taken from this exact version.',
      );
    }
    renameSync(file, target);
    return target;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** One apt source entry as apt reads it. */
interface AptSource {
  types: string[];
  uris: string[];
  suites: string[];
  components: string[];
}

/** Parse a one-line-style sources.list (`deb [opts] URI suite comp…`). */
function parseListFile(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const m = /^(deb|deb-src)\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (!m) continue;
    out.push({ types: [m[1]!], uris: [m[2]!], suites: [m[3]!], components: m[4]!.split(/\s+/).filter(Boolean) });
  }
  return out;
}

/** Parse a deb822 .sources file (stanzas of `Field: value`, blank-line separated; `Enabled: no` skipped). */
function parseSourcesFile(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last = '';
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#')) continue;
      if (/^\s/.test(raw) && last) {
        fields.set(last, `${fields.get(last)} ${raw.trim()}`);
        continue;
      }
      const m = /^([A-Za-z-]+):\s*(.*)$/.exec(raw);
      if (m) {
        last = m[1]!.toLowerCase();
        fields.set(last, m[2]!);
      }
    }
    if ((fields.get('enabled') ?? 'yes').toLowerCase() === 'no') continue;
    const list = (k: string) => (fields.get(k) ?? '').split(/\s+/).filter(Boolean);
    if (list('uris').length === 0) continue;
    out.push({ types: list('types'), uris: list('uris'), suites: list('suites'), components: list('components') });
  }
  return out;
}

/**
 * The archive URIs of this machine's apt sources that carry `suite` (exactly, e.g. `bookworm`) with
 * the `main` component, in apt's order, from /etc/apt/sources.list and /etc/apt/sources.list.d/
 * (*.list and *.sources only, as apt reads them).
 * @throws when none does, naming the files read and what to add.
 */
export function debianArchiveUris(suite = 'bookworm', etc = '/etc/apt'): string[] {
  const files: string[] = [];
  if (existsSync(join(etc, 'sources.list'))) files.push(join(etc, 'sources.list'));
  const dir = join(etc, 'sources.list.d');
  if (existsSync(dir)) {
    for (const f of readdirSync(dir).sort()) if (f.endsWith('.list') || f.endsWith('.sources')) files.push(join(dir, f));
  }
  const uris: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const s of file.endsWith('.sources') ? parseSourcesFile(text) : parseListFile(text)) {
      if (!s.suites.includes(suite) || !s.components.includes('main')) continue;
      if (!s.types.some((t) => t === 'deb' || t === 'deb-src')) continue;
      for (const u of s.uris) if (!uris.includes(u.replace(/\/+$/, ''))) uris.push(u.replace(/\/+$/, ''));
    }
  }
  if (uris.length === 0) {
    throw new Error(
      `no apt source on this machine carries Debian's "${suite}" suite with the main component (read: ${files.join(', ') || `nothing under ${etc}`}). ` +
        `These tests fetch pinned Debian packages from the archive apt uses; configure a ${suite} source for apt, then run them again.`,
    );
  }
  return uris;
}

/** The pool directory of a source package: `pool/main/<lib?x or x>/<source>/`. */
export function debianPoolDir(source: string): string {
  const prefix = source.startsWith('lib') && source.length > 3 ? source.slice(0, 4) : source.slice(0, 1);
  return `pool/main/${prefix}/${source}`;
}

/** The version as it appears in pool file names (no epoch). */
function fileVersion(version: string): string {
  return version.replace(/^\d+:/, '');
}

/**
 * Download `poolPath` from the first apt archive URI that serves it with SHA-256 `sha256`, into `target`.
 * apt-helper refuses a file whose hash differs (its "Hash Sum mismatch" is in the error).
 */
async function downloadFromArchive(poolPath: string, sha256: string, target: string, suite: string): Promise<void> {
  const failures: string[] = [];
  for (const uri of debianArchiveUris(suite)) {
    const dir = scratchDir(join(target, '..'));
    const part = join(dir, basename(target));
    try {
      // APT::Sandbox::User=root: the scratch directory is not the _apt user's to write (root only; ignored otherwise).
      const sandbox = process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : [];
      const got = await run('/usr/lib/apt/apt-helper', [...sandbox, 'download-file', `${uri}/${poolPath}`, part, `SHA256:${sha256}`], dir, 180_000);
      if (got.code === 0 && existsSync(part) && sha256File(part) === sha256) {
        renameSync(part, target);
        return;
      }
      failures.push(`${uri}/${poolPath} (exit ${got.code}):\n${got.stderr.trim()}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error(
    `could not download ${poolPath} with SHA-256 ${sha256} from Debian's archive: these tests need the Debian archive apt is configured with. ` +
      `Check the network, or whether the pinned version is still in the ${suite} archive (a newer point release may have replaced it: ` +
      `then pin the new version and its checksum).\n${failures.join('\n')}`,
  );
}

/**
 * A Debian binary package (.deb), in the cache.
 * @returns the .deb's path.
 * @throws when apt's sources carry no `suite` or the download fails (no network, not in the archive, a hash mismatch).
 */
export async function fetchDebianBinary(pin: DebianBinaryPin): Promise<string> {
  checkPin(`Debian package ${pin.package} ${pin.version}`, pin.sha256);
  const dir = entryDir('debian-binary', pin.package, pin.version, pin.sha256);
  mkdirSync(dir, { recursive: true });
  const name = `${pin.package}_${fileVersion(pin.version)}_${pin.architecture}.deb`;
  const deb = join(dir, name);
  if (!cachedAndIntact(deb, pin.sha256)) await downloadFromArchive(`${debianPoolDir(pin.source)}/${name}`, pin.sha256, deb, pin.suite ?? 'bookworm');
  return deb;
}

async function mustRun(what: string, cmd: string, args: string[], cwd: string): Promise<void> {
  const r = await run(cmd, args, cwd, 120_000);
  if (r.code !== 0) throw new Error(`${what} failed (${cmd} ${args.join(' ')}, exit ${r.code}):\n${r.stderr.trim()}`);
}

/** Unpack an npm tarball's `package/` into `dest` (created; must not exist or be empty). */
export async function unpackNpmPackage(tarball: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  await mustRun(`unpacking ${tarball}`, 'tar', ['-xzf', tarball, '-C', dest, '--strip-components=1'], dest);
}

/** Unpack a .deb's data (its file system tree: usr/share/…) into `dest` with `dpkg-deb -x`. */
export async function unpackDebianBinary(deb: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  await mustRun(`unpacking ${deb}`, 'dpkg-deb', ['-x', deb, dest], dest);
}
