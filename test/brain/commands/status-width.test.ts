/**
 * `polly status` fits the terminal (issue 32 item 9): over a repository with long titles, reasons,
 * budgets and PR states (test/helpers/ui-state.ts), every line of the human view is at most the
 * width (a terminal's columns, or COLUMNS), cells cut with …, the least needed columns left out and
 * named, other lines wrapped; a pipe without COLUMNS gets whole lines as before.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openRepoContext } from '../../../brain/registry/repo-context.js';
import { formatStatus, loadStatus, statusWidth } from '../../../brain/commands/status.js';
import { wrapLine } from '../../../brain/commands/table.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { needsYouState } from '../../helpers/ui-state.js';

const cli = join(process.cwd(), 'dist/brain/cli.js');

describe('polly status fits the terminal width', () => {
  it('every line fits 80, 120 and 60 columns; cut cells end in …, left-out columns are named; reasons wrap whole', async () => {
    const repo = createTestRepo();
    execFileSync(process.execPath, [cli, 'init'], { cwd: repo.dir, env: gitTestEnv(), stdio: 'pipe' });
    repo.commitAll('polly init');
    repo.git(['push', '-q', 'origin', 'main']);
    const ctx = await openRepoContext(repo.dir, gitTestEnv());
    const state = await needsYouState(ctx, repo);
    const report = await loadStatus(repo.dir, gitTestEnv());
    const whole = formatStatus(report);
    expect(Math.max(...whole.map((l) => l.length)), 'the unfitted view is wider than a terminal').toBeGreaterThan(150);
    for (const width of [120, 80, 60]) {
      const lines = formatStatus(report, width);
      const over = lines.filter((l) => l.length > width);
      expect(over, `${width} columns`).toEqual([]);
      // Nothing of the reasons is lost: the wrapped lines hold every word of the whole view's.
      const words = (ls: string[]) => ls.join(' ').split(/\s+/).filter(Boolean);
      const why = (ls: string[]) => ls.slice(ls.findIndex((l) => l.startsWith('Why (')));
      expect(words(why(lines)).slice(0, 40), `${width}: the reasons' words`).toEqual(words(why(whole)).slice(0, 40));
      // Each task still has its id and status.
      for (const id of [state.parked, state.failed, state.ready])
        expect(
          lines.some((l) => l.startsWith(`  ${id} `)),
          `${width}: ${id}`,
        ).toBe(true);
    }
    const narrow = formatStatus(report, 80);
    expect(narrow.some((l) => /^ {2}\(left out to fit: BRANCH, .*; polly status --json has them\)$/.test(l))).toBe(true);
    expect(narrow.some((l) => l.includes('…'))).toBe(true);
    const taskHeader = narrow.find((l) => /^ {2}ID\s+TITLE/.test(l))!;
    expect(taskHeader).toMatch(/STATUS/);
    expect(taskHeader).not.toMatch(/BRANCH/);

    // The command: COLUMNS is the width when stdout is not a terminal; without it, whole lines.
    const run = (env: NodeJS.ProcessEnv) => execFileSync(process.execPath, [cli, 'status'], { cwd: repo.dir, env: { ...gitTestEnv(), ...env }, encoding: 'utf8' }).split('\n');
    expect(run({ COLUMNS: '80' }).filter((l) => l.length > 80)).toEqual([]);
    const env = gitTestEnv();
    delete env.COLUMNS;
    expect(
      Math.max(
        ...execFileSync(process.execPath, [cli, 'status'], { cwd: repo.dir, env, encoding: 'utf8' })
          .split('\n')
          .map((l) => l.length),
      ),
    ).toBeGreaterThan(150);
  }, 60_000);

  it("the width: a terminal's columns, else COLUMNS, else none; never under 40", () => {
    expect(statusWidth({ isTTY: true, columns: 100 }, { COLUMNS: '70' })).toBe(100);
    expect(statusWidth({ isTTY: false }, { COLUMNS: '70' })).toBe(70);
    expect(statusWidth({}, {})).toBeUndefined();
    expect(statusWidth({}, { COLUMNS: 'wide' })).toBeUndefined();
    expect(statusWidth({ isTTY: true, columns: 20 }, {})).toBe(40);
  });

  it('wrapLine wraps at spaces with a hanging indent and cuts a word longer than the line', () => {
    expect(wrapLine('  p1-a failed: the quick brown fox jumps over the lazy dog', 24)).toEqual(['  p1-a failed: the quick', '    brown fox jumps over', '    the lazy dog']);
    expect(wrapLine('x'.repeat(25), 10)).toEqual(['xxxxxxxxxx', '  xxxxxxxx', '  xxxxxxx']);
    expect(wrapLine('short', 10)).toEqual(['short']);
  });
});
