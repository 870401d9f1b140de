// `polly try` checks its inputs before it starts anything: a plan file that is not there is named
// as polly try's (not polly run's) error and leaves config.yaml untouched with no model server
// started; both errors point to a docs page and a section of it that exist.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

/** The docs page and section an error names as `docs/PAGE.md "SECTION"`. */
function docsSection(stderr: string): { page: string; section: string } {
  const m = /(docs\/[\w./-]+\.md) "([^"]+)"/.exec(stderr);
  if (!m) throw new Error(`no docs section named in: ${stderr}`);
  return { page: m[1]!, section: m[2]! };
}

describe('polly try inputs', () => {
  it('a missing plan file: exit 2 before any side effect; it and no --script name a docs section that exists', () => {
    const repo = createTestRepo();
    expect(runCli(['init'], repo.dir).code).toBe(0);
    const config = join(repo.dir, '.polly', 'config.yaml');
    const before = readFileSync(config, 'utf8');
    const script = join(repo.root, 'script.yaml');
    writeFileSync(script, 'sessions: []\n');
    const missing = runCli(['try', join(repo.root, 'nope.yaml'), '--script', script], repo.dir);
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toContain(`polly try: cannot read the plan file ${join(repo.root, 'nope.yaml')}`);
    expect(missing.stderr).not.toContain('polly run');
    expect(missing.stderr).not.toContain('scripted model server');
    expect(readFileSync(config, 'utf8')).toBe(before);

    const noScript = runCli(['try', 'plan.yaml'], repo.dir);
    expect(noScript.code).toBe(2);
    expect(docsSection(noScript.stderr)).toEqual({ page: 'docs/guide.md', section: 'Try it without API keys: polly try' });
    expect(docsSection(missing.stderr)).toEqual({ page: 'docs/guide.md', section: 'The plan format' });
    for (const { page, section } of [docsSection(noScript.stderr), docsSection(missing.stderr)]) {
      const headings = readFileSync(join(process.cwd(), page), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('#'))
        .map((l) => l.replace(/^#+\s*/, '').replaceAll('`', ''));
      expect(headings, page).toContain(section);
    }
  });
});
