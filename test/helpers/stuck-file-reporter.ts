/**
 * A vitest reporter that names what is stuck. Vitest's testTimeout cannot fire while a test's
 * event loop is blocked (a spawnSync waiting on a server that lives in the same process, say), and
 * a whole run that hangs says nothing about where. This reporter watches from vitest's main
 * process: when a test file has run longer than `POLLY_TEST_STUCK_SECONDS` (default 480 s, well
 * over the suite's longest file), it writes to stderr which file, which test is in progress and
 * for how long, and the process forest (`ps --forest`, kernel threads left out) so the blocked child shows. It repeats the
 * list every 5 minutes while anything stays stuck. It prints nothing when all goes well.
 *
 * Used by `.ci/run` (`--reporter=./test/helpers/stuck-file-reporter.ts`). Reporter hooks follow
 * vitest's Reporter interface: https://vitest.dev/advanced/api/reporters
 */
import { execFileSync } from 'node:child_process';
import { relative } from 'node:path';
import type { Reporter, TestCase, TestModule } from 'vitest/node';

const REPEAT_MS = 5 * 60_000;

export default class StuckFileReporter implements Reporter {
  private readonly stuckAfterMs = Number(process.env.POLLY_TEST_STUCK_SECONDS ?? 480) * 1000;
  private readonly running = new Map<string, { since: number; test?: { name: string; since: number } }>();
  private timer: NodeJS.Timeout | undefined;
  private lastReport = 0;
  private forestShown = false;

  onTestRunStart(): void {
    this.timer = setInterval(() => this.check(), 15_000);
    this.timer.unref();
  }

  onTestModuleStart(module: TestModule): void {
    this.running.set(module.moduleId, { since: Date.now() });
  }

  onTestCaseReady(test: TestCase): void {
    const entry = this.running.get(test.module.moduleId);
    if (entry) entry.test = { name: test.fullName, since: Date.now() };
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(module.moduleId);
  }

  onTestRunEnd(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private check(): void {
    const now = Date.now();
    const stuck = [...this.running].filter(([, e]) => now - e.since > this.stuckAfterMs);
    if (stuck.length === 0 || now - this.lastReport < REPEAT_MS) return;
    this.lastReport = now;
    const lines = stuck.map(([id, e]) => {
      const file = relative(process.cwd(), id);
      const test = e.test ? `; in progress: "${e.test.name}" for ${Math.round((now - e.test.since) / 1000)} s` : '; no test reported started (a blocked worker cannot report one)';
      return `  ${file}: running for ${Math.round((now - e.since) / 1000)} s${test}`;
    });
    process.stderr.write(`\n[stuck-file-reporter] test files running longer than ${this.stuckAfterMs / 1000} s:\n${lines.join('\n')}\n`);
    if (!this.forestShown) {
      this.forestShown = true;
      try {
        const forest = execFileSync('ps', ['--ppid', '2', '--pid', '2', '--deselect', '-o', 'pid,ppid,pgid,etimes,stat,args', '--forest'], { encoding: 'utf8', timeout: 10_000 });
        const clipped = forest
          .split('\n')
          .map((l) => (l.length > 240 ? `${l.slice(0, 240)}…` : l))
          .join('\n');
        process.stderr.write(`[stuck-file-reporter] process forest:\n${clipped}\n`);
      } catch (err) {
        process.stderr.write(`[stuck-file-reporter] ps failed: ${(err as Error).message}\n`);
      }
    }
  }
}
