/**
 * The decision log: O_APPEND JSON lines under 4 KiB, secrets redacted, and the in-memory twin.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileJournal, createMemoryJournal, decisionEntry, redact } from '../../gate/decision-log.js';
import type { ToolRequest } from '../../gate/types.js';

const req = (input: string): ToolRequest => ({ type: 'tool', harness: 'claude-code', tool: 'bash', input, cwd: '/w', role: 'implement' });
const deny = { decision: 'deny' as const, rule: 'blast_radius.merge', reason: 'Polly never merges' };

describe('gate decision log', () => {
  it('redacts tokens and credentials from logged inputs', () => {
    const e = decisionEntry(req('curl -H "Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123" https://api.github.com/x?token=s3cr3t'), deny);
    expect(String(e.input)).not.toMatch(/ghp_|s3cr3t/);
    expect(redact('GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnop git push')).not.toMatch(/github_pat_/);
    expect(e).toMatchObject({ type: 'tool', harness: 'claude-code', role: 'implement', tool: 'bash', decision: 'deny', rule: 'blast_radius.merge' });
  });

  it('appends one JSON line per decision, each under 4 KiB even for huge inputs', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'polly-gate-log-')), 'gate-decisions.jsonl');
    const j = createFileJournal(path, () => new Date('2026-11-30T00:00:00Z'));
    j.appendJournal('gate.decision', decisionEntry(req('ls'), { decision: 'allow', rule: 'allow', reason: 'ok' }));
    j.appendJournal('gate.decision', decisionEntry(req(`echo ${'x'.repeat(20000)}`), { ...deny, reason: 'y'.repeat(9000) }));
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(Buffer.byteLength(l)).toBeLessThan(4096);
    expect(JSON.parse(lines[0] as string)).toEqual({ at: '2026-11-30T00:00:00.000Z', kind: 'gate.decision', data: expect.objectContaining({ input: 'ls', decision: 'allow' }) });
  });

  it('has an in-memory twin with the same interface', () => {
    const j = createMemoryJournal();
    j.appendJournal('gate.decision', decisionEntry(req('ls'), deny));
    expect(j.entries).toEqual([{ kind: 'gate.decision', data: expect.objectContaining({ rule: 'blast_radius.merge' }) }]);
  });
});
