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
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeSandbox } from '../../workers/sandbox/sandbox.js';
import { NEEDED_FOR, recordSkip, type SystemPackage } from './skip-log.js';

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** `cmd` is an executable in a PATH entry outside HOME (a toolchain under HOME does not count, as in .ci/run). */
function onSystemPath(cmd: string): boolean {
  const homes = [homedir(), realpathSync(homedir())];
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d && !homes.some((h) => d === h || d.startsWith(`${h}/`)))
    .some((d) => spawnSync('test', ['-x', join(d, cmd)]).status === 0);
}

/** Debian's PostgreSQL server binaries (the newest /usr/lib/postgresql/<v>/bin with initdb), or POLLY_TEST_PG_BIN. */
function hasPostgresServer(): boolean {
  if (process.env.POLLY_TEST_PG_BIN) return existsSync(join(process.env.POLLY_TEST_PG_BIN, 'initdb'));
  if (!existsSync('/usr/lib/postgresql')) return false;
  return readdirSync('/usr/lib/postgresql').some((v) => existsSync(join('/usr/lib/postgresql', v, 'bin', 'initdb')));
}

/** The Chromium the dashboard's browser tests drive: POLLY_TEST_CHROMIUM, else Debian's. */
export function chromiumPath(): string | undefined {
  return [process.env.POLLY_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
}

/** Debian package → how to tell it is there. */
const PRESENT: Record<SystemPackage, () => boolean> = {
  bubblewrap: () => probeSandbox().ok,
  passt: () => onPath('pasta'),
  spin: () => onPath('spin'),
  gcc: () => onPath('cc'),
  chromium: () => chromiumPath() !== undefined,
  tmux: () => onPath('tmux'),
  'openssh-server': () => existsSync('/usr/sbin/sshd') && onPath('ssh') && onPath('ssh-keygen'),
  postgresql: hasPostgresServer,
  'python3-pytest': () => spawnSync('/usr/bin/python3', ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0,
  make: () => onPath('make'),
  'golang-go': () => onSystemPath('go'),
  cargo: () => onSystemPath('cargo'),
};

export type { SystemPackage };

const seen = new Map<SystemPackage, boolean>();

/**
 * True when `pkg` is installed and usable. When it is not: throws under `CI=true` (the message
 * names the package, what needs it and the install line); otherwise records the skip of
 * `testFile` (pass `import.meta.url`) and returns false, for `describe.skipIf(!…)`.
 */
export function hasSystemPackage(pkg: SystemPackage, testFile: string): boolean {
  return hasSystemPackages([pkg], testFile);
}

/**
 * True when every one of `pkgs` is installed and usable; otherwise, as {@link hasSystemPackage},
 * throws under `CI=true` naming every missing one, or records each and returns false.
 */
export function hasSystemPackages(pkgs: readonly SystemPackage[], testFile: string): boolean {
  const missing = pkgs.filter((pkg) => {
    let present = seen.get(pkg);
    if (present === undefined) {
      present = PRESENT[pkg]();
      seen.set(pkg, present);
    }
    return !present;
  });
  if (missing.length === 0) return true;
  const file = relative(process.cwd(), testFile.startsWith('file:') ? fileURLToPath(testFile) : testFile);
  if (process.env.CI === 'true' || process.env.CI === '1') {
    const what = missing.map((pkg) => `${pkg} is missing (needed for ${NEEDED_FOR[pkg]})`).join('; ');
    throw new Error(`${what}, by ${file}; under CI=true a suite must not skip: apt-get install -y ${missing.join(' ')} (see .ci/run)`);
  }
  for (const pkg of missing) recordSkip(pkg, file);
  return false;
}
