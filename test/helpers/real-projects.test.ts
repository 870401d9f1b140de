/**
 * The real-project fetcher (test/helpers/real-projects.ts) against the real npm registry and the
 * real Debian archive apt is configured with: a pinned file is fetched once into the cache, a cached
 * copy is re-verified (a corrupted one is fetched again), and a wrong pin FAILS with a message
 * naming the file and both hashes. The apt sources parser on both of apt's formats.
 * The small pins here: python3-cachetools 5.2.0-1's .deb (13 kB); the npm half reuses
 * @fastify/error 4.3.0 (the right pin is exercised by test/e2e/e2e-real-package.test.ts).
 */
import { mkdtempSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debianArchiveUris, debianPoolDir, fetchDebianBinary, fetchNpmPackage, realProjectCacheDir, sha256File, unpackDebianBinary } from './real-projects.js';

const CACHETOOLS = {
  package: 'python3-cachetools',
  source: 'python-cachetools',
  version: '5.2.0-1',
  architecture: 'all',
  sha256: 'fb845e9f029b60a02e52314da773967da5c828489a92d81fa420b05da1e9d562',
};

describe('real-projects: the apt sources and the pool', () => {
  it('reads the archive URIs of a suite from both sources formats, as apt does', () => {
    const etc = realpathSync(mkdtempSync(join(tmpdir(), 'polly-apt-etc-')));
    try {
      mkdirSync(join(etc, 'sources.list.d'));
      writeFileSync(join(etc, 'sources.list'), '# comment\ndeb [arch=amd64] http://one.invalid/debian/ bookworm main contrib\ndeb http://sec.invalid/ bookworm-security main\n');
      writeFileSync(
        join(etc, 'sources.list.d', 'a.sources'),
        'Types: deb deb-src\n# note\nURIs: http://two.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://off.invalid/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n',
      );
      writeFileSync(join(etc, 'sources.list.d', 'b.list.disabled'), 'deb http://ignored.invalid/debian bookworm main\n');
      writeFileSync(join(etc, 'sources.list.d', 'c.list'), 'deb http://nomain.invalid/debian bookworm contrib\n');
      expect(debianArchiveUris('bookworm', etc)).toEqual(['http://one.invalid/debian', 'http://two.invalid/debian']);
      expect(() => debianArchiveUris('trixie', etc)).toThrow(/no apt source on this machine carries Debian's "trixie" suite.*configure a trixie source/s);
    } finally {
      rmSync(etc, { recursive: true, force: true });
    }
  });

  it('names pool directories as the archive does (lib* by four letters)', () => {
    expect(debianPoolDir('python-cachetools')).toBe('pool/main/p/python-cachetools');
    expect(debianPoolDir('rust-memchr')).toBe('pool/main/r/rust-memchr');
    expect(debianPoolDir('libyaml')).toBe('pool/main/liby/libyaml');
  });
});

describe('real-projects: fetching pinned files into the cache', () => {
  let cache = '';
  let saved: string | undefined;
  beforeAll(() => {
    saved = process.env.POLLY_TEST_CACHE;
    cache = realpathSync(mkdtempSync(join(tmpdir(), 'polly-real-cache-')));
    process.env.POLLY_TEST_CACHE = cache;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.POLLY_TEST_CACHE;
    else process.env.POLLY_TEST_CACHE = saved;
    rmSync(cache, { recursive: true, force: true });
  });

  it('fetches a Debian binary package once, re-verifies the cached copy (a corrupted one is fetched again), unpacks it; a wrong pin is refused by apt, naming what to check', async () => {
    expect(realProjectCacheDir()).toBe(cache);
    const pin = CACHETOOLS;
    const deb = await fetchDebianBinary(pin);
    expect(deb.startsWith(join(cache, 'debian-binary'))).toBe(true);
    expect(sha256File(deb)).toBe(pin.sha256);
    const good = readFileSync(deb);
    writeFileSync(deb, 'corrupted');
    expect(await fetchDebianBinary(pin)).toBe(deb);
    expect(readFileSync(deb).equals(good)).toBe(true);
    const tree = join(cache, 'deb-tree');
    await unpackDebianBinary(deb, tree);
    expect(readFileSync(join(tree, 'usr', 'lib', 'python3', 'dist-packages', 'cachetools', '__init__.py'), 'utf8')).toContain('__version__ = "5.2.0"');
    const wrong = await fetchDebianBinary({ ...pin, sha256: `0${pin.sha256.slice(1)}` }).catch((e: Error) => e);
    expect(wrong).toBeInstanceOf(Error);
    expect((wrong as Error).message).toMatch(
      /could not download pool\/main\/p\/python-cachetools\/python3-cachetools_5\.2\.0-1_all\.deb with SHA-256 0b845e9f.*still in the bookworm archive.*Hash Sum mismatch/s,
    );
  });

  it('a wrong npm pin fails naming both hashes, and leaves nothing in the cache', async () => {
    const wrong = await fetchNpmPackage({ name: '@fastify/error', version: '4.3.0', sha256: '0'.repeat(64) }).catch((e: Error) => e);
    expect(wrong).toBeInstanceOf(Error);
    expect((wrong as Error).message).toMatch(/npm pack @fastify\/error@4\.3\.0 downloaded a tarball whose SHA-256 is [0-9a-f]{64}, not the pinned 0{64}/);
  });

  it('refuses a pin that is not a SHA-256', async () => {
    await expect(fetchDebianBinary({ ...CACHETOOLS, sha256: 'abc' })).rejects.toThrow(/the pinned sha256 "abc" is not 64 lowercase hex digits/);
  });
});
