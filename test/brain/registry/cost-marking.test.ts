/**
 * Cost figures people can trust (a newcomer's pass found "unknown" unexplained and a scripted
 * model's $0.10 shown as if paid): a cost reported for a model served on this machine (the
 * scripted model of the demo and `polly try`) is marked "not billed"; "unknown" names the harness
 * and why (the PR body's footer used to name codex for a pi review; its assertions share the PR body
 * of test/brain/forge/pr-text.test.ts). Pure functions only.
 */
import { describe, expect, it } from 'vitest';
import { addTurn, formatCost, isLocalEndpoint, ledgerTurn, sumTotals, type LedgerTurn } from '../../../brain/registry/cost-ledger.js';
import { modelEndpoint } from '../../../brain/task-tools/turn-budget.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';

const usage = (input: number, output: number, cost: number | null) =>
  ({ type: 'usage', scope: 'turn', inputTokens: input, outputTokens: output, cacheReadTokens: null, cacheWriteTokens: null, costUsd: cost }) as const;
const turn = (workerId: string, harness: LedgerTurn['harness'], role: LedgerTurn['role'], cost: number | null, endpoint: string | null): LedgerTurn =>
  ledgerTurn([usage(1000, 10, cost)], { at: '2026-12-01T00:00:00Z', role, harness, workerId, orderId: `o-${workerId}`, status: 'ok', endpoint });

const SCRIPTED = 'http://127.0.0.1:43609';

describe('cost of a scripted (local) model', () => {
  it('tells a loopback endpoint from a vendor API', () => {
    expect([SCRIPTED, 'http://localhost:8080/v1', 'http://[::1]:9/v1', 'http://127.1.2.3'].map(isLocalEndpoint)).toEqual([true, true, true, true]);
    expect(['https://api.anthropic.com', 'http://10.0.0.5:8000/v1', null, 'not a url'].map(isLocalEndpoint)).toEqual([false, false, false, false]);
  });

  it('marks the cost claude reported for a scripted turn as not billed, alone and mixed with billed turns, and rolls it up', () => {
    const local = addTurn(undefined, turn('w1', 'claude-code', 'implement', 0.0802, SCRIPTED));
    expect(formatCost(local.totals)).toBe('$0.0802 not billed');
    const mixed = addTurn(local, turn('w2', 'claude-code', 'followup', 0.5, null));
    expect(formatCost(mixed.totals)).toBe('$0.5802 ($0.0802 not billed)');
    const withUnknown = addTurn(local, turn('w3', 'pi', 'review', null, SCRIPTED));
    expect(formatCost(withUnknown.totals)).toBe('≥ $0.0802 not billed (some turns unknown)');
    expect(formatCost(sumTotals([local.totals, local.totals]))).toBe('$0.1604 not billed');
    // Totals without a local turn keep their stored shape (no new keys).
    expect(Object.keys(addTurn(undefined, turn('w4', 'claude-code', 'implement', 0.1, null)).totals)).not.toContain('unbilledCostUsd');
  });

  it('takes the endpoint each harness was pointed at from the agent env and the config', () => {
    const config = structuredClone(DEFAULT_CONFIG);
    expect(modelEndpoint('claude-code', config, {})).toBeNull();
    expect(modelEndpoint('claude-code', config, { ANTHROPIC_BASE_URL: SCRIPTED })).toBe(SCRIPTED);
    config.workers.pi.base_url = `${SCRIPTED}/v1`;
    expect(modelEndpoint('pi', config, {})).toBe(`${SCRIPTED}/v1`);
    expect(modelEndpoint('codex', config, { OPENAI_BASE_URL: 'https://gateway.example/v1' })).toBe('https://gateway.example/v1');
  });
});
