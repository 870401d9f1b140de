/**
 * No test file runs 0 cases silently (issue 31 item 2): the global setup test/helpers/run-summary.ts
 * fails a run in which a file ran no case and recorded no missing system package, and lists the
 * files that did record one, with the install line. Each run here is a real vitest run of small
 * test files in a temp directory, with that global setup.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { silentFiles } from '../helpers/run-summary.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'polly-run-summary-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FILES: Record<string, string> = {
  'ok.test.ts': `import { it } from 'vitest';\nit('runs', () => {});\n`,
  // A file whose only suite is skipped by a probe that reports nothing.
  'silent.test.ts': `import { describe, it } from 'vitest';\ndescribe.skipIf(true)('needs something', () => { it('never runs', () => {}); });\n`,
  // A table read from a corpus that is not there: zero rows.
  'empty-corpus.test.ts': `import { describe, it } from 'vitest';\nconst rows: string[] = [];\ndescribe('the corpus', () => { for (const r of rows) it(r, () => {}); it.skip('a placeholder', () => {}); });\n`,
  // A file that skipped for a missing package and said so, as hasSystemPackage does.
  'recorded.test.ts': `import { describe, it } from 'vitest';\nimport { recordSkip } from ${JSON.stringify(join(ROOT, 'test/helpers/skip-log.ts'))};\nrecordSkip('tmux', 'tests/recorded.test.ts');\ndescribe.skipIf(true)('needs tmux', () => { it('never runs', () => {}); });\n`,
};

function setUp(): void {
  mkdirSync(join(dir, 'tests'), { recursive: true });
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, 'tests', name), text);
  writeFileSync(
    join(dir, 'vitest.config.ts'),
    `export default { test: { include: ['tests/**/*.test.ts'], globalSetup: [${JSON.stringify(join(ROOT, 'test/helpers/run-summary.ts'))}] } };\n`,
  );
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
}

function vitest(...args: string[]): { out: string; status: number | null } {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, CI: '', FORCE_COLOR: '0', NO_COLOR: '1', POLLY_TEST_SKIP_LOG: '' },
    timeout: 120_000,
  });
  return { out: `${r.stdout}${r.stderr}`, status: r.status };
}

describe('a test file that runs 0 cases', () => {
  it('fails the run when it says nothing, and is listed with the install line when it recorded a missing package', () => {
    setUp();
    const all = vitest();
    expect(all.status, all.out).toBe(1);
    expect(all.out).toContain('FAIL: 2 test file(s) ran 0 cases without saying why');
    expect(all.out).toMatch(/^ {2}tests\/empty-corpus\.test\.ts$/m);
    expect(all.out).toMatch(/^ {2}tests\/silent\.test\.ts$/m);
    expect(all.out).not.toMatch(/^ {2}tests\/(ok|recorded)\.test\.ts$/m);
    expect(all.out).toMatch(/^ {2}tmux \(.*\): tests\/recorded\.test\.ts$/m);
    expect(all.out).toContain('Install what is missing: sudo apt-get install -y tmux');

    const explained = vitest('tests/ok.test.ts', 'tests/recorded.test.ts');
    expect(explained.status, explained.out).toBe(0);
    expect(explained.out).not.toContain('ran 0 cases');
    expect(explained.out).toContain('Install what is missing: sudo apt-get install -y tmux');

    // Filtered by name, files skip cases on purpose: not checked.
    const filtered = vitest('-t', 'runs');
    expect(filtered.out).not.toContain('ran 0 cases');
  }, 240_000);

  it('silentFiles: failed or unrun files and explained files are not silent', () => {
    const outcomes = [
      { file: 'a.test.ts', ran: 0, finished: true },
      { file: 'b.test.ts', ran: 0, finished: false },
      { file: 'c.test.ts', ran: 0, finished: true },
      { file: 'd.test.ts', ran: 3, finished: true },
    ];
    expect(silentFiles(outcomes, new Set(['c.test.ts']))).toEqual(['a.test.ts']);
  });
});
