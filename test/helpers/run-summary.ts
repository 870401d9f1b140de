/**
 * Vitest global setup: the end of a run says what did not run.
 *
 * - It sets up the run's log of suites skipped for a missing system package
 *   (test/helpers/system-packages.ts records into it) and prints their summary, with the one line
 *   that installs what was missing, after the reporter's own summary.
 * - It fails the run when a test file ran 0 cases and did not say why: every case of the file
 *   skipped (or none collected) with no missing system package recorded for it. A corpus read
 *   from a missing file, an `it.each` over an empty list, a `describe.skipIf` on a probe nobody
 *   reports: each would otherwise pass as a silent zero. A run filtered by test name (`-t`) is
 *   not checked (it skips cases on purpose).
 *
 * It imports nothing but node:fs and the skip log (no dist/, no sandbox), so it works before the
 * build and in a bare copy of the test setup (test/house/run-summary.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { TestProject } from 'vitest/node';
import { SKIP_LOG_ENV, skippedFiles, skipSummary } from './skip-log.js';

/**
 * One test file's outcome, as the guard needs it: its path, how many cases ran, and whether it
 * ended passed or skipped (not failed, nor left unrun by a bail or an interrupt).
 */
export interface FileOutcome {
  file: string;
  ran: number;
  finished: boolean;
}

/**
 * The files that ran 0 cases without a reason: finished, 0 cases passed or failed, and not in
 * `explained` (the files that recorded a missing system package). Paths as given, sorted.
 */
export function silentFiles(outcomes: readonly FileOutcome[], explained: ReadonlySet<string>): string[] {
  return outcomes
    .filter((o) => o.finished && o.ran === 0 && !explained.has(o.file))
    .map((o) => o.file)
    .sort();
}

function outcomes(project: TestProject): FileOutcome[] {
  const root = project.vitest.config.root;
  return project.vitest.state.getTestModules().map((m) => {
    let ran = 0;
    for (const t of m.children.allTests()) {
      const s = t.result().state;
      if (s === 'passed' || s === 'failed') ran++;
    }
    const state = m.state();
    return { file: relative(root, m.moduleId), ran, finished: state === 'passed' || state === 'skipped' };
  });
}

/** Sets up the skip log; the returned teardown prints the skip summary and fails on silent files. */
export default function setup(project: TestProject): () => void {
  const skipDir = mkdtempSync(join(tmpdir(), 'polly-test-skips-'));
  const log = join(skipDir, 'skips.jsonl');
  process.env[SKIP_LOG_ENV] = log;
  return () => {
    const summary = skipSummary(log);
    if (summary) process.stderr.write(`\n${summary}`);
    const filtered = !!project.vitest.config.testNamePattern;
    const silent = filtered ? [] : silentFiles(outcomes(project), skippedFiles(log));
    rmSync(skipDir, { recursive: true, force: true });
    if (silent.length > 0) {
      process.stderr.write(
        `\nFAIL: ${silent.length} test file(s) ran 0 cases without saying why (every case skipped or none collected, no missing system package recorded):\n` +
          silent.map((f) => `  ${f}\n`).join('') +
          'A suite that needs a system package asks hasSystemPackage (test/helpers/system-packages.ts); one that found no cases must fail, not pass empty.\n',
      );
      process.exitCode = 1;
    }
  };
}
