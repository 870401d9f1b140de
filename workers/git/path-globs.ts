/**
 * The glob dialect of a task's path contract (plan keys `paths` and `protected_paths`, config
 * `worktrees.protected_paths`) outside git: a matcher and the overlap test the plan checker uses.
 *
 * The dialect is git's `glob` pathspec magic (gitglossary(7), "pathspec"; wildmatch with
 * WM_PATHNAME), because git itself matches these patterns at staging (./protected-paths.ts):
 * - a pattern without wildcard characters (`*`, `?`, `[`, `\`) matches that path and everything
 *   under it (`src/api` matches `src/api/users.ts`);
 * - otherwise the whole path must match: `*` and `?` do not cross `/`, `[...]` is a class (`!` or
 *   `^` negates it; it never matches `/`), `\` escapes, and `**` as a whole segment matches any
 *   number of directories (`**\/x`, `a/**\/b`, `a/**`); `**` inside a segment is `*`.
 * Braces (`{a,b}`), extglobs and leading `!` mean nothing special, which is why Polly does not
 * use picomatch or minimatch here: their dialects would disagree with what git refuses.
 *
 * **Overlap** ({@link globsMayOverlap}) is a sound over-approximation: when two patterns can match
 * one path it always says so; it may also say so for patterns that cannot (then the plan is
 * refused although the tasks could not collide: refuse when unsure). The rules, for patterns
 * `a` and `b` with literal prefixes `P(a)`, `P(b)` (the text before the first wildcard character)
 * and literal suffixes `S(a)`, `S(b)` (the text after the last one):
 * - both literal: they overlap exactly when one is the other or a directory above it;
 * - a path matching a pattern starts with its literal prefix, so when neither prefix starts with
 *   the other the patterns are disjoint; a literal `L` against a pattern whose prefix extends `L`
 *   by anything but `/` is disjoint too (`src/a` against `src/ab*`);
 * - a path matching a wildcard pattern ends with its literal suffix, so two wildcard patterns
 *   whose suffixes do not end one another are disjoint (`src/*.ts` against `src/*.js`);
 * - anything else may overlap.
 * A witness (a path both match) is searched in an optional list of the repository's files, then
 * among instances of the two patterns; without one the report names the common prefix.
 */

/** The wildcard characters of git's glob pathspec (a pattern without them is a literal path). */
const WILDCARD = /[*?[\\]/;

const POSIX_CLASSES: Record<string, string> = {
  alnum: 'A-Za-z0-9',
  alpha: 'A-Za-z',
  blank: ' \\t',
  cntrl: '\\x00-\\x1f\\x7f',
  digit: '0-9',
  graph: '\\x21-\\x7e',
  lower: 'a-z',
  print: '\\x20-\\x7e',
  punct: '!-\\/:-@\\[-`{-~',
  space: ' \\t\\n\\r\\f\\v',
  upper: 'A-Z',
  xdigit: '0-9A-Fa-f',
};

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** A pattern as git reads it from the repository root: leading `./` dropped, `.` alone is everything. */
export function normalizeGlob(pattern: string): string {
  let p = pattern;
  while (p.startsWith('./')) p = p.slice(2);
  if (p === '.' || p === '') return '**';
  return p;
}

/** Whether `pattern` has no wildcard character: git then matches it as a path and everything under it. */
export function isLiteralGlob(pattern: string): boolean {
  return !WILDCARD.test(normalizeGlob(pattern));
}

/** Parse a `[...]` class starting at `p[i] === '['`; null when it is not terminated (then `[` is literal, as in wildmatch). */
function parseClass(p: string, i: number): { re: string; end: number } | null {
  let j = i + 1;
  let negate = false;
  if (p[j] === '!' || p[j] === '^') {
    negate = true;
    j++;
  }
  let body = '';
  let first = true;
  while (j < p.length) {
    const c = p[j]!;
    if (c === ']' && !first) return { re: negate ? `[^${body}/]` : `(?!/)[${body}]`, end: j + 1 };
    first = false;
    if (c === '[' && p[j + 1] === ':') {
      const close = p.indexOf(':]', j + 2);
      const name = close > 0 ? p.slice(j + 2, close) : '';
      if (close > 0 && POSIX_CLASSES[name]) {
        body += POSIX_CLASSES[name];
        j = close + 2;
        continue;
      }
    }
    if (c === '\\' && j + 1 < p.length) {
      body += escapeRe(p[j + 1]!);
      j += 2;
      continue;
    }
    if (c === '-' && body !== '' && p[j + 1] !== ']' && j + 1 < p.length) {
      body += '-';
      j++;
      continue;
    }
    body += escapeRe(c);
    j++;
  }
  return null;
}

/** The regular expression git's wildmatch (WM_PATHNAME) applies to a whole path for a wildcard `pattern`. */
function wildmatchRegExp(pattern: string): RegExp {
  const p = pattern;
  let re = '^';
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '*') {
      let j = i;
      while (p[j] === '*') j++;
      const segmentStart = i === 0 || p[i - 1] === '/';
      const segmentEnd = j === p.length || p[j] === '/';
      if (j - i >= 2 && segmentStart && segmentEnd) {
        if (j === p.length) {
          re += '.*';
          i = j;
        } else {
          re += '(?:.*/)?';
          i = j + 1;
        }
        continue;
      }
      re += '[^/]*';
      i = j;
      continue;
    }
    if (c === '?') {
      re += '[^/]';
      i++;
      continue;
    }
    if (c === '[') {
      const cls = parseClass(p, i);
      if (cls) {
        re += cls.re;
        i = cls.end;
        continue;
      }
    }
    if (c === '\\' && i + 1 < p.length) {
      re += escapeRe(p[i + 1]!);
      i += 2;
      continue;
    }
    re += escapeRe(c);
    i++;
  }
  return new RegExp(`${re}$`, 's');
}

/**
 * A matcher for one pattern of the dialect above: `(path) => boolean` for a path relative to the
 * repository root (`/`-separated, no leading `./`). Matches what `git ls-files -- ':(glob)PATTERN'`
 * lists (test/workers/git/path-globs.test.ts holds it against git).
 */
export function globMatcher(pattern: string): (path: string) => boolean {
  const p = normalizeGlob(pattern);
  if (!WILDCARD.test(p)) {
    const dir = p.replace(/\/+$/, '');
    return (path) => path === dir || path.startsWith(`${dir}/`);
  }
  const re = wildmatchRegExp(p);
  return (path) => re.test(path);
}

/** The literal text before the first wildcard character (the whole path, without a trailing `/`, for a literal). */
export function literalPrefix(pattern: string): string {
  const p = normalizeGlob(pattern);
  const m = WILDCARD.exec(p);
  return m ? p.slice(0, m.index) : p.replace(/\/+$/, '');
}

/** The literal text after the last wildcard character (`]` counts, conservatively); empty for a literal. */
function literalSuffix(pattern: string): string {
  const p = normalizeGlob(pattern);
  let last = -1;
  for (let i = 0; i < p.length; i++) if ('*?[]\\'.includes(p[i]!)) last = i;
  return p.slice(last + 1);
}

/** One concrete path a wildcard pattern matches (wildcards replaced by `x`, `**` segments dropped), or null. */
function instance(pattern: string): string | null {
  const p = normalizeGlob(pattern);
  if (!WILDCARD.test(p)) return p.replace(/\/+$/, '');
  const out = p
    .replace(/(^|\/)\*\*\/(?=.)/g, '$1')
    .replace(/\/\*\*$/, '/x')
    .replace(/^\*\*$/, 'x')
    .replace(/\[!?\^?([^\]]*)\]/g, (_m, body: string) => (body[0] && body[0] !== '-' ? body[0] : 'x'))
    .replace(/\\(.)/g, '$1')
    .replace(/[*?]+/g, 'x');
  return globMatcher(p)(out) ? out : null;
}

/** What {@link globsMayOverlap} found for two patterns that may match one path. */
export interface GlobOverlap {
  a: string;
  b: string;
  /** A path both match, when one was found; null: none found, the overlap is possible, not shown. */
  witness: string | null;
  /** Where they may meet: the longer literal prefix (empty: anywhere in the repository). */
  region: string;
}

/**
 * Whether patterns `a` and `b` may match a common path (sound: never false when they can; see the
 * module doc for the rules and where it is conservative). Pure.
 * @param files  optional: the repository's files, searched for a witness.
 * @returns the overlap with a witness when one is found, or null when they are disjoint.
 */
export function globsMayOverlap(a: string, b: string, files: readonly string[] = []): GlobOverlap | null {
  const na = normalizeGlob(a);
  const nb = normalizeGlob(b);
  const pa = literalPrefix(na);
  const pb = literalPrefix(nb);
  const la = !WILDCARD.test(na);
  const lb = !WILDCARD.test(nb);
  const [short, long] = pa.length <= pb.length ? [pa, pb] : [pb, pa];
  if (!long.startsWith(short)) return null;
  if (la && lb && short !== long && long[short.length] !== '/') return null;
  // A literal L matches L or L/…: a pattern whose prefix extends L by anything but "/" is disjoint.
  if (la && !lb && pb.length > pa.length && pb[pa.length] !== '/') return null;
  if (lb && !la && pa.length > pb.length && pa[pb.length] !== '/') return null;
  if (!la && !lb) {
    const sa = literalSuffix(na);
    const sb = literalSuffix(nb);
    const [s1, s2] = sa.length <= sb.length ? [sa, sb] : [sb, sa];
    if (!s2.endsWith(s1)) return null;
  }
  const ma = globMatcher(na);
  const mb = globMatcher(nb);
  const candidates = [...files, instance(na), instance(nb)].filter((c): c is string => c !== null);
  const witness = candidates.find((c) => ma(c) && mb(c)) ?? null;
  return { a, b, witness, region: long };
}

/**
 * The first pair of patterns of two sets that may overlap ({@link globsMayOverlap}), preferring a
 * pair with a witness; null when every pair is disjoint. Pure.
 */
export function globSetsMayOverlap(as: readonly string[], bs: readonly string[], files: readonly string[] = []): GlobOverlap | null {
  let first: GlobOverlap | null = null;
  for (const a of as) {
    for (const b of bs) {
      const o = globsMayOverlap(a, b, files);
      if (o?.witness) return o;
      first ??= o;
    }
  }
  return first;
}
