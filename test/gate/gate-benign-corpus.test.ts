/**
 * False positives: everyday agent commands (test/fixtures/gate-benign-corpus.yaml, several languages'
 * workflows) through the real `decide` with the seed policies. Prints the false-positive rate (denied
 * or asked / all) and fails above 1%, listing every command the gate stopped and why.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { decide } from '../../gate/decide.js';
import type { GateContext, GateRole } from '../../gate/types.js';

interface Group {
  workflow: string;
  role: GateRole;
  commands: string[];
}
interface Corpus {
  context: Record<string, string>;
  groups: Group[];
}

const corpus = parseYaml(readFileSync(fileURLToPath(new URL('../fixtures/gate-benign-corpus.yaml', import.meta.url)), 'utf8')) as Corpus;
const c = corpus.context as Record<string, string>;
const context: GateContext = {
  repoRoot: c.repo_root as string,
  worktree: c.worktree as string,
  branch: c.branch as string,
  defaultBranch: c.default_branch as string,
  home: c.home as string,
};

/** The highest false-positive rate the gate may have on the benign corpus (issue 13, item 9). */
const MAX_RATE = 0.01;

describe('gate benign corpus', () => {
  const rows = corpus.groups.flatMap((g) => g.commands.map((input) => ({ workflow: g.workflow, role: g.role, input })));

  it('holds at least 300 commands from several workflows and every role kind', () => {
    expect(rows.filter((r) => typeof r.input !== 'string').map((r) => r.input)).toEqual([]);
    expect(rows.length).toBeGreaterThanOrEqual(300);
    expect(new Set(corpus.groups.map((g) => g.workflow)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(rows.map((r) => r.role))).toEqual(new Set(['implement', 'review', 'explore', 'search']));
  });

  it(`denies or asks on at most ${MAX_RATE * 100}% of it`, () => {
    const stopped = rows
      .map((r) => ({ ...r, d: decide({ type: 'tool', tool: 'bash', input: r.input, cwd: c.cwd as string, role: r.role }, DEFAULT_CONFIG.policies, context) }))
      .filter((r) => r.d.decision !== 'allow');
    const rate = stopped.length / rows.length;
    const lines = stopped.map((r) => `  [${r.role}] ${JSON.stringify(r.input)} → ${r.d.decision} ${r.d.rule}: ${r.d.reason}`);
    process.stdout.write(`gate benign corpus: ${stopped.length} of ${rows.length} stopped, false-positive rate ${(rate * 100).toFixed(2)}%\n${lines.join('\n')}\n`);
    expect(rate, lines.join('\n')).toBeLessThanOrEqual(MAX_RATE);
  });
});
