/**
 * The system packages some suites need (Debian names, as `.ci/run` installs them), one probe each.
 *
 * A suite asks {@link hasSystemPackage} before it decides to skip. When the package is missing:
 * - under `CI=true` it throws, so the file fails naming the package and the install line: CI
 *   proves that every suite ran, never a green run with suites silently skipped;
 * - elsewhere it records the skip (the file and the package) for the run's summary, which the
 *   global setup's teardown prints at the end (test/helpers/run-summary.ts, test/helpers/skip-log.ts),
 *   with the one line that installs what was missing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeSandbox } from '../../workers/sandbox/sandbox.js';
import { NEEDED_FOR, recordSkip, type SystemPackage } from './skip-log.js';

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** The Chromium the dashboard's browser tests drive: POLLY_TEST_CHROMIUM, else Debian's. */
export function chromiumPath(): string | undefined {
  return [process.env.POLLY_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
}

/** Debian package → how to tell it is there. */
const PRESENT: Record<SystemPackage, () => boolean> = {
  bubblewrap: () => probeSandbox().ok,
  chromium: () => chromiumPath() !== undefined,
  passt: () => onPath('pasta'),
  tmux: () => onPath('tmux'),
  'openssh-server': () => existsSync('/usr/sbin/sshd') && onPath('ssh') && onPath('ssh-keygen'),
};

export type { SystemPackage };

const seen = new Map<SystemPackage, boolean>();

/**
 * True when `pkg` is installed and usable. When it is not: throws under `CI=true` (the message
 * names the package, what needs it and the install line); otherwise records the skip of
 * `testFile` (pass `import.meta.url`) and returns false, for `describe.skipIf(!…)`.
 */
export function hasSystemPackage(pkg: SystemPackage, testFile: string): boolean {
  let present = seen.get(pkg);
  if (present === undefined) {
    present = PRESENT[pkg]();
    seen.set(pkg, present);
  }
  if (present) return true;
  const file = relative(process.cwd(), testFile.startsWith('file:') ? fileURLToPath(testFile) : testFile);
  if (process.env.CI === 'true' || process.env.CI === '1') {
    throw new Error(`${pkg} is missing (needed for ${NEEDED_FOR[pkg]}, by ${file}); under CI=true a suite must not skip: apt-get install -y ${pkg} (see .ci/run)`);
  }
  recordSkip(pkg, file);
  return false;
}
