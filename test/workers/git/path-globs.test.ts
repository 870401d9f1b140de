// The path contract's glob dialect outside git (issue 29): the matcher lists what git lists for
// the same `:(glob)` pathspec, and the overlap test is sound against git on every pair of a
// table of patterns (when git finds a file both match, the test says they may overlap), while
// telling apart the disjoint cases a plan meets most (sibling directories, other extensions).
import { describe, expect, it } from 'vitest';
import { globMatcher, globSetsMayOverlap, globsMayOverlap, literalPrefix } from '../../../workers/git/path-globs.js';
import { createTestRepo } from '../../helpers/git-repo.js';

const FILES = [
  'README.md',
  'src.txt',
  'src/index.ts',
  'src/index.js',
  'src/a.ts',
  'src/ab.ts',
  'src/api/users.ts',
  'src/api/users.test.ts',
  'src/api/v2/orders.ts',
  'src/ui/App.tsx',
  'src/ui/app.css',
  'docs/guide.md',
  'docs/api/index.md',
  'test/a.test.ts',
  'test/b.test.js',
  '.github/workflows/ci.yml',
  '.polly/config.yaml',
  'a[1].txt',
  'lib/x1.c',
  'lib/x2.c',
  'lib/xa.c',
  'Makefile',
  'sub/Makefile',
];

const PATTERNS = [
  'src',
  'src/',
  'src/*',
  'src/**',
  'src/**/*.ts',
  'src/*.ts',
  'src/*.js',
  'src/a*',
  'src/a',
  'src/api',
  'src/api/**',
  'src/api/*.ts',
  'src/ui/**',
  'src/**/users.ts',
  '**/*.md',
  '*.md',
  'docs/**',
  '**',
  '*',
  '**/Makefile',
  'Makefile',
  'lib/x[0-9].c',
  'lib/x[!0-9].c',
  'lib/x?.c',
  'a\\[1\\].txt',
  'test/*.test.ts',
  'test/*.test.js',
  '.github/workflows/*.yml',
  '.polly/**',
  './docs',
  'src/**/v2/*.ts',
];

describe('path globs (git glob pathspecs)', () => {
  const repo = createTestRepo(Object.fromEntries(FILES.map((f) => [f, `${f}\n`])));
  const gitList = (p: string): string[] =>
    repo
      .git(['ls-files', '--', `:(glob)${p}`])
      .split('\n')
      .filter(Boolean)
      .sort();

  it('the matcher lists exactly what git lists for each pattern', () => {
    for (const p of PATTERNS) expect(FILES.filter(globMatcher(p)).sort(), p).toEqual(gitList(p));
  });

  it('overlap is sound: every pair git finds a common file for is reported, with a witness both match', () => {
    const listed = new Map(PATTERNS.map((p) => [p, new Set(gitList(p))]));
    let disjointSeen = 0;
    for (const a of PATTERNS) {
      for (const b of PATTERNS) {
        const common = [...listed.get(a)!].filter((f) => listed.get(b)!.has(f));
        const o = globsMayOverlap(a, b, FILES);
        if (common.length > 0) {
          expect(o, `${a} × ${b} share ${common[0]}`).not.toBeNull();
          expect(common, `${a} × ${b}: witness ${o!.witness}`).toContain(o!.witness);
        } else if (o === null) disjointSeen++;
      }
    }
    // Not everything is "maybe": the test tells most disjoint pairs apart.
    expect(disjointSeen).toBeGreaterThan(200);
  });

  it('tells apart what plans meet most, and is conservative where it cannot', () => {
    expect(globsMayOverlap('src/api/**', 'src/ui/**')).toBeNull();
    expect(globsMayOverlap('src/*.ts', 'src/*.js')).toBeNull();
    expect(globsMayOverlap('src/a', 'src/ab*')).toBeNull();
    expect(globsMayOverlap('src/a.ts', 'src/a.tsx')).toBeNull();
    expect(globsMayOverlap('docs/**', 'src/**')).toBeNull();
    // Shared file: the literal path is the witness.
    expect(globsMayOverlap('src/api/**', 'src/api/users.ts')).toMatchObject({ witness: 'src/api/users.ts' });
    expect(globsMayOverlap('src', 'src/**/*.ts')).toMatchObject({ witness: 'src/x.ts' });
    // Without a file both match, the overlap is still reported (refuse when unsure), naming where.
    expect(globsMayOverlap('src/x/*.ts', 'src/*.ts')).toMatchObject({ witness: null, region: 'src/x/' });
    expect(globSetsMayOverlap(['docs/**', 'src/ui/**'], ['test/**', 'src/ui/App.tsx'])).toMatchObject({ a: 'src/ui/**', b: 'src/ui/App.tsx', witness: 'src/ui/App.tsx' });
    expect(globSetsMayOverlap(['docs/**'], ['test/**', 'src/**'])).toBeNull();
    expect(literalPrefix('./src/api/*.ts')).toBe('src/api/');
  });
});
