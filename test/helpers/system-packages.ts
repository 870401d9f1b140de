/**
 * The system packages some suites need (Debian names, as `.ci/run` installs them), one probe each.
 *
 * A suite asks {@link hasSystemPackage} before it decides to skip. When the package is missing:
 * - under `CI=true` it throws, so the file fails naming the package and the install line: CI
 *   proves that every suite ran, never a green run with suites silently skipped;
 * - elsewhere it records the skip (the file and the package) for the run's summary, which the
 *   global setup's teardown prints at the end (test/helpers/build-once.ts → {@link printSkipSummary}),
 *   with the one line that installs what was missing.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeSandbox } from '../../workers/sandbox/sandbox.js';

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** The Chromium the dashboard's browser tests drive: POLLY_TEST_CHROMIUM, else Debian's. */
export function chromiumPath(): string | undefined {
  return [process.env.POLLY_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
}

/** Debian package → what it is for and how to tell it is there. */
const PACKAGES = {
  bubblewrap: { forWhat: "Polly's OS sandbox (a bwrap that can start a sandbox here)", present: () => probeSandbox().ok },
  chromium: { forWhat: "the dashboard's headless-browser tests", present: () => chromiumPath() !== undefined },
  passt: { forWhat: 'outbound-only networking for checks (pasta)', present: () => onPath('pasta') },
} as const;

export type SystemPackage = keyof typeof PACKAGES;

/** Where skips are recorded for the summary (set by the global setup for the whole run). */
export const SKIP_LOG_ENV = 'POLLY_TEST_SKIP_LOG';

const seen = new Map<SystemPackage, boolean>();

/**
 * True when `pkg` is installed and usable. When it is not: throws under `CI=true` (the message
 * names the package, what needs it and the install line); otherwise records the skip of
 * `testFile` (pass `import.meta.url`) and returns false, for `describe.skipIf(!…)`.
 */
export function hasSystemPackage(pkg: SystemPackage, testFile: string): boolean {
  let present = seen.get(pkg);
  if (present === undefined) {
    present = PACKAGES[pkg].present();
    seen.set(pkg, present);
  }
  if (present) return true;
  const file = relative(process.cwd(), testFile.startsWith('file:') ? fileURLToPath(testFile) : testFile);
  if (process.env.CI === 'true' || process.env.CI === '1') {
    throw new Error(`${pkg} is missing (needed for ${PACKAGES[pkg].forWhat}, by ${file}); under CI=true a suite must not skip: apt-get install -y ${pkg} (see .ci/run)`);
  }
  const log = process.env[SKIP_LOG_ENV];
  if (log) appendFileSync(log, `${JSON.stringify({ pkg, file })}\n`);
  return false;
}

/**
 * The end-of-run summary of skips for missing packages (empty string when none): per package,
 * the files that skipped, then one install line.
 */
export function skipSummary(logFile: string): string {
  if (!existsSync(logFile)) return '';
  const byPkg = new Map<string, Set<string>>();
  for (const line of readFileSync(logFile, 'utf8').split('\n').filter(Boolean)) {
    const { pkg, file } = JSON.parse(line) as { pkg: string; file: string };
    byPkg.set(pkg, (byPkg.get(pkg) ?? new Set()).add(file));
  }
  if (byPkg.size === 0) return '';
  const lines = ['Skipped: suites that need a missing system package did not run (CI=true makes this a failure):'];
  for (const [pkg, files] of byPkg) {
    lines.push(`  ${pkg} (${PACKAGES[pkg as SystemPackage]?.forWhat ?? pkg}): ${[...files].sort().join(', ')}`);
  }
  lines.push(`Install what is missing: sudo apt-get install -y ${[...byPkg.keys()].join(' ')}`);
  return `${lines.join('\n')}\n`;
}
