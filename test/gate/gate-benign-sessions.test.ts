/**
 * False positives on commands from real agent sessions (test/fixtures/gate-benign-sessions.yaml: Claude
 * Code session exports, CLAUDE.md/AGENTS.md command lists, CI steps and issue threads; sources named per
 * group), through the real `decide` with the seed policies, as an implementer in its worktree.
 *
 * The corpus is split up front by a hash of each command (first byte of its SHA-256 odd: held-out). The
 * tuning half's stops are printed; the held-out half is only counted (its stops are shown only when the
 * test fails), and under the sandbox (`GateContext.sandboxed`) its false-positive rate must be ≤ 1%.
 * Unconfined (`sandboxed` false: `workers.allow_unconfined`), the gate stays as strict as before: the
 * rates are printed and pinned to what the gate stopped before the change (5 tuning, 1 held-out), and
 * everything it stops inside the sandbox it stops unconfined too.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { decide } from '../../gate/decide.js';
import type { GateContext } from '../../gate/types.js';

interface Group {
  source: string;
  language: string;
  kind: string;
  commands: string[];
}

const corpus = parseYaml(readFileSync(fileURLToPath(new URL('../fixtures/gate-benign-sessions.yaml', import.meta.url)), 'utf8')) as {
  context: Record<string, string>;
  groups: Group[];
};
const c = corpus.context;
const base: GateContext = {
  repoRoot: c.repo_root as string,
  worktree: c.worktree as string,
  branch: c.branch as string,
  defaultBranch: c.default_branch as string,
  home: c.home as string,
};

/** The highest false-positive rate the gate may have on the held-out half under the sandbox (issue 33 item 7). */
const MAX_RATE = 0.01;
/** How many commands the corpus holds (it fails when a file edit loses some). */
const EXPECTED_COMMANDS = 539;

const rows = corpus.groups.flatMap((g) => g.commands.map((input) => ({ source: g.source, language: g.language, input })));
const heldOut = (input: string): boolean => (createHash('sha256').update(input, 'utf8').digest()[0] as number) % 2 === 1;
const tuning = rows.filter((r) => !heldOut(r.input));
const held = rows.filter((r) => heldOut(r.input));

function stops(half: typeof rows, sandboxed: boolean) {
  return half
    .map((r) => ({ ...r, d: decide({ type: 'tool', tool: 'bash', input: r.input, cwd: c.cwd as string, role: 'implement' }, DEFAULT_CONFIG.policies, { ...base, sandboxed }) }))
    .filter((r) => r.d.decision !== 'allow');
}
const show = (xs: ReturnType<typeof stops>) => xs.map((r) => `  ${JSON.stringify(r.input).slice(0, 160)} → ${r.d.decision} ${r.d.rule}: ${r.d.reason}`).join('\n');
const pct = (n: number, of: number) => `${((n / of) * 100).toFixed(2)}%`;

describe('gate benign corpus from real agent sessions', () => {
  it(`holds ${EXPECTED_COMMANDS} distinct commands from named sources in several languages, split in two halves`, () => {
    expect(rows.filter((r) => typeof r.input !== 'string')).toEqual([]);
    expect(rows.length).toBe(EXPECTED_COMMANDS);
    expect(new Set(rows.map((r) => r.input)).size).toBe(rows.length);
    expect(corpus.groups.every((g) => g.source.length > 0)).toBe(true);
    expect(new Set(rows.map((r) => r.language))).toEqual(new Set(['python', 'javascript', 'typescript', 'go', 'rust', 'java', 'shell']));
    expect(tuning.length).toBeGreaterThan(200);
    expect(held.length).toBeGreaterThan(200);
  });

  it(`under the sandbox stops at most ${MAX_RATE * 100}% of the held-out half`, () => {
    const t = stops(tuning, true);
    const h = stops(held, true);
    process.stdout.write(
      `gate benign sessions, sandboxed: tuning ${t.length} of ${tuning.length} stopped (${pct(t.length, tuning.length)}), held-out ${h.length} of ${held.length} (${pct(h.length, held.length)})\n${show(t)}\n`,
    );
    expect(h.length / held.length, `held-out stops:\n${show(h)}`).toBeLessThanOrEqual(MAX_RATE);
  });

  it('unconfined, prints the rates of the strict gate', () => {
    const t = stops(tuning, false);
    const h = stops(held, false);
    process.stdout.write(
      `gate benign sessions, unconfined: tuning ${t.length} of ${tuning.length} stopped (${pct(t.length, tuning.length)}), held-out ${h.length} of ${held.length} (${pct(h.length, held.length)})\n`,
    );
    // Unconfined the gate is as strict as before issue 33 item 7: it stopped 5 of the tuning half and 1
    // of the held-out half then (measured on this corpus before the change).
    expect([t.length, h.length]).toEqual([5, 1]);
    // Unconfined, only what the sandbox would hold is stopped in addition: the sandboxed stops are a subset.
    const sandboxed = new Set(stops(rows, true).map((r) => r.input));
    const unconfined = new Set([...t, ...h].map((r) => r.input));
    expect([...sandboxed].filter((x) => !unconfined.has(x))).toEqual([]);
  });
});
