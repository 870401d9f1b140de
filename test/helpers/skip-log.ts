/**
 * The run's log of suites skipped for a missing system package, and its end-of-run summary.
 *
 * Kept apart from test/helpers/system-packages.ts (which probes the packages, and so imports the
 * sandbox) so the global setup that prints it (test/helpers/run-summary.ts) imports nothing but
 * node:fs and this: it runs before dist/ is built.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/** Where skips are recorded for the summary (set by the global setup for the whole run). */
export const SKIP_LOG_ENV = 'POLLY_TEST_SKIP_LOG';

/** Debian package → what the suites need it for (shown in the summary and in CI's failure). */
export const NEEDED_FOR = {
  bubblewrap: "Polly's OS sandbox (a bwrap that can start a sandbox here)",
  passt: 'outbound-only networking for checks (pasta)',
  spin: "the model checker's cross-check against Spin",
  gcc: "compiling Spin's verifier and the tests' C probes (cc)",
  chromium: "the dashboard's headless-browser tests",
  tmux: "the terminal tests of polly run's plan-gate prompt (a real pty)",
  'openssh-server': "remote worker hosts: a real sshd per test host (Polly's own ssh client comes with it)",
  postgresql: "the Postgres run store's tests (initdb and postgres of a temporary cluster)",
  'python3-pytest': "the Python real-project test's suite (python3 -m pytest)",
  make: "the npm real-project test's `make test`",
  'golang-go': "the Go real-project test (the system's go, not one under HOME)",
  cargo: "the Rust real-project test (the system's cargo, not one under HOME)",
} as const;

export type SystemPackage = keyof typeof NEEDED_FOR;

/** Appends one skip (`pkg` missing, `file` skipped) to the run's log, when the run has one. */
export function recordSkip(pkg: SystemPackage, file: string): void {
  const log = process.env[SKIP_LOG_ENV];
  if (log) appendFileSync(log, `${JSON.stringify({ pkg, file })}\n`);
}

function readLog(logFile: string): { pkg: string; file: string }[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { pkg: string; file: string });
}

/** The files (paths relative to the run's root) that recorded a skip for a missing package. */
export function skippedFiles(logFile: string): Set<string> {
  return new Set(readLog(logFile).map((e) => e.file));
}

/**
 * The end-of-run summary of skips for missing packages (empty string when none): per package,
 * the files that skipped, then one install line.
 */
export function skipSummary(logFile: string): string {
  const byPkg = new Map<string, Set<string>>();
  for (const { pkg, file } of readLog(logFile)) {
    byPkg.set(pkg, (byPkg.get(pkg) ?? new Set()).add(file));
  }
  if (byPkg.size === 0) return '';
  const lines = ['Skipped: suites that need a missing system package did not run (CI=true makes this a failure):'];
  for (const [pkg, files] of byPkg) {
    lines.push(`  ${pkg} (${NEEDED_FOR[pkg as SystemPackage] ?? pkg}): ${[...files].sort().join(', ')}`);
  }
  lines.push(`Install what is missing: sudo apt-get install -y ${[...byPkg.keys()].join(' ')}`);
  return `${lines.join('\n')}\n`;
}
