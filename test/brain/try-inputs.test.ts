// `polly try` checks its inputs before it starts anything: a plan file that is not there is named
// as polly try's (not polly run's) error and leaves config.yaml untouched with no model server
// started; without --script it points to the README section that exists.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../helpers/git-repo.js';
import { runCli } from '../helpers/registry-cli.js';

describe('polly try inputs', () => {
  it('a missing plan file: exit 2 before any side effect; no --script: the README section it names exists', () => {
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
    const section = /README "([^"]+)"/.exec(noScript.stderr)?.[1];
    expect(section, noScript.stderr).toBe('Try it without API keys: polly try');
    const headings = readFileSync(join(process.cwd(), 'README.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .map((l) => l.replace(/^#+\s*/, '').replaceAll('`', ''));
    expect(headings).toContain(section);
  });
});
