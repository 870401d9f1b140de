/**
 * One test file run alone tests the sources on disk, not an old dist/ (issue 31 item 3): in a copy
 * of this repository's build with no dist/, a single-file vitest run builds first; run again, it
 * does not build; after one source file is edited, it builds again and the test sees the edit
 * through the compiled code, as the ~50 test files that spawn dist/ do.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const copy = mkdtempSync(join(tmpdir(), 'polly-build-once-'));

/**
 * A small copy of this repository's build: its real tsconfig.json, package.json, vitest.config.ts,
 * build steps and global setup, with one self-contained room of sources (brain/core/) so tsc
 * takes seconds, not the whole project's minute; no dist/ and a link to node_modules.
 */
function copyRepository(): void {
  const files = [
    'tsconfig.json',
    'package.json',
    'vitest.config.ts',
    'scripts/build-stamp.ts',
    'scripts/post-build.mjs',
    'scripts/bundle-gate.mjs',
    'test/helpers/build-once.ts',
    'test/helpers/skip-log.ts',
    'test/helpers/run-summary.ts',
    'brain/core',
  ];
  for (const f of files) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    cpSync(join(ROOT, f), join(copy, f), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  // The one test file of the copy: it reads the compiled module as a spawned process would.
  writeFileSync(
    join(copy, 'test/probe.test.ts'),
    `import { execFileSync } from 'node:child_process';
import { it } from 'vitest';
it('prints the compiled exports', () => {
  process.stdout.write(execFileSync(process.execPath, ['-e', "import('./dist/brain/core/errors.js').then((m) => console.log('exports:' + Object.keys(m).join(',')))"], { encoding: 'utf8' }));
});
`,
  );
}

function runOneFile(): { out: string; status: number | null } {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', 'test/probe.test.ts', '--reporter=verbose', '--silent=false'], {
    cwd: copy,
    encoding: 'utf8',
    env: { ...process.env, CI: '', FORCE_COLOR: '0', NO_COLOR: '1' },
    timeout: 240_000,
  });
  return { out: `${r.stdout}${r.stderr}`, status: r.status };
}

afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('a single test file runs against the current sources', () => {
  it('builds when dist/ is missing, not when it matches the sources, and again after an edit, which the test then sees', () => {
    copyRepository();
    const first = runOneFile();
    expect(first.status, first.out).toBe(0);
    expect(first.out).toContain('building');
    expect(first.out).toMatch(/exports:[^\n]*PollyError/);

    const fresh = runOneFile();
    expect(fresh.status, fresh.out).toBe(0);
    expect(fresh.out).not.toContain('building');
    expect(fresh.out).not.toContain('BUILD_ONCE_MARKER');

    appendFileSync(join(copy, 'brain/core/errors.ts'), '\nexport const BUILD_ONCE_MARKER = 1;\n');
    const edited = runOneFile();
    expect(edited.status, edited.out).toBe(0);
    expect(edited.out).toContain('test setup: dist/ is not the build of the current sources; building');
    expect(edited.out).toMatch(/exports:[^\n]*BUILD_ONCE_MARKER/);
  }, 300_000);
});
