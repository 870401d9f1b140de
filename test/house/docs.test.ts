/**
 * The documentation as a test (issue 31): the generated reference pages equal what their sources
 * render now (docs/reference/config.md from the config's JSON Schema, docs/reference/cli.md from
 * the commands' own help; regenerate with `npm run docs`), README.md stays a front page (at most
 * 20 KiB), and every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**\/*.md
 * names a file that exists and, with `#anchor`, a heading of that file (GitHub's heading ids), and
 * every docs page is linked from the index docs/README.md. The link checker is also run on planted
 * broken links so the test cannot pass by finding none.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../brain/cli.js';
import { configKeyPaths } from '../../brain/config/config.js';
import { REFERENCE_FILES, REGENERATE, renderCliReference, renderConfigReference } from '../../scripts/docs-reference.js';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const README_MAX_BYTES = 20 * 1024;

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...markdownFiles(path));
    else if (name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** Markdown text without fenced code blocks and inline code spans (links there are not links). */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/**
 * GitHub's heading ids for a Markdown text: the heading lower-cased, punctuation but `-` and `_`
 * removed, each space a `-`, a repeated id suffixed `-1`, `-2`, … (as github-slugger does:
 * https://github.com/Flet/github-slugger).
 */
function headingIds(text: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const plain = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** The relative links of `file` (absolute) that name no file, or a heading its target lacks: `file: target`. */
function brokenLinks(file: string, text: string, read: (path: string) => string | null): string[] {
  const bad: string[] = [];
  const from = relative(ROOT, file);
  for (const m of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    const content = read(path);
    if (content === null) {
      bad.push(`${from}: ${target} (no such file)`);
      continue;
    }
    if (anchor && path.endsWith('.md') && !headingIds(content).has(anchor.toLowerCase())) bad.push(`${from}: ${target} (no heading with that id)`);
  }
  return bad;
}

const readIfExists = (path: string): string | null => {
  if (!existsSync(path)) return null;
  return statSync(path).isDirectory() ? '' : readFileSync(path, 'utf8');
};

describe('the docs', () => {
  it(`the generated reference pages match their sources (run "${REGENERATE}" to regenerate them)`, async () => {
    const expected: Record<string, string> = { [REFERENCE_FILES.config]: renderConfigReference(), [REFERENCE_FILES.cli]: await renderCliReference() };
    for (const [rel, text] of Object.entries(expected)) {
      const onDisk = readIfExists(join(ROOT, rel));
      expect(onDisk, `${rel} is missing or out of date: run "${REGENERATE}"`).toBe(text);
    }
    // They really come from the sources: every config key and every command is in them.
    const paths = configKeyPaths();
    const leaves = paths.filter((p) => !paths.some((q) => q.startsWith(`${p}.`)));
    expect(leaves.length).toBeGreaterThan(40);
    expect(leaves.filter((p) => !expected[REFERENCE_FILES.config]!.includes(`| \`${p}`))).toEqual([]);
    for (const name of Object.keys(COMMANDS)) expect(expected[REFERENCE_FILES.cli]).toContain(`\n## polly ${name}\n`);
    expect(expected[REFERENCE_FILES.config]).toContain('| `pr.max_fix_rounds` | integer 0-10 | `3` |');
    expect(expected[REFERENCE_FILES.cli]).toContain('## polly retry\n');
    expect(expected[REFERENCE_FILES.cli]).toContain('Usage: polly pr list [--all] [--json]');
  });

  it(`README.md is a front page: at most ${README_MAX_BYTES} bytes, the rest in docs/`, () => {
    const bytes = statSync(join(ROOT, 'README.md')).size;
    expect(bytes, `README.md is ${bytes} bytes; move detail into a docs/ page and link it`).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ resolves (file and heading)', () => {
    const files = [join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md'), join(ROOT, 'CHANGELOG.md'), ...markdownFiles(join(ROOT, 'docs'))];
    for (const f of files) expect(existsSync(f), relative(ROOT, f)).toBe(true);
    expect(files.length).toBeGreaterThan(10);
    const links = files.map((f) => [...prose(readFileSync(f, 'utf8')).matchAll(/\]\(/g)].length).reduce((a, b) => a + b, 0);
    expect(links).toBeGreaterThan(30);
    expect(files.flatMap((f) => brokenLinks(f, readFileSync(f, 'utf8'), readIfExists))).toEqual([]);
  });

  it('every page under docs/ is linked from the index, docs/README.md (add a new page there)', () => {
    const index = join(ROOT, 'docs', 'README.md');
    const linked = new Set([...prose(readFileSync(index, 'utf8')).matchAll(/\]\(\s*([^)\s#]+)/g)].map((m) => resolve(dirname(index), decodeURIComponent(m[1]!))));
    const pages = markdownFiles(join(ROOT, 'docs')).filter((f) => f !== index);
    expect(pages.filter((f) => !linked.has(f)).map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('the link check bites: a missing file and a missing heading are reported; code, URLs and good anchors are not', () => {
    const file = join(ROOT, 'docs', 'x.md');
    const text = [
      '# A page',
      '## The `polly ui` dashboard: security',
      'See [gone](gone.md), [bad anchor](../README.md#no-such-heading), [self](#the-polly-ui-dashboard-security),',
      '[site](https://example.com/a.md), `[code](nope.md)` and [config](reference/config.md#pr).',
      '```md',
      '[in a fence](fence.md)',
      '```',
    ].join('\n');
    const pages: Record<string, string> = { [join(ROOT, 'README.md')]: '# Polly\n', [join(ROOT, 'docs/reference/config.md')]: '## `pr`\n', [file]: text };
    expect(brokenLinks(file, text, (p) => pages[p] ?? null)).toEqual(['docs/x.md: gone.md (no such file)', 'docs/x.md: ../README.md#no-such-heading (no heading with that id)']);
  });

  it("GitHub's heading ids: punctuation dropped, spaces dashed, repeats numbered", () => {
    expect([...headingIds('# Set up a fresh machine\n## What `npm run demo` shows\n## Notes\n## Notes\n### A red base: `base_red`\n')]).toEqual([
      'set-up-a-fresh-machine',
      'what-npm-run-demo-shows',
      'notes',
      'notes-1',
      'a-red-base-base_red',
    ]);
  });
});
