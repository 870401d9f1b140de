/**
 * The agent's own usage stream is only a cross-check of the metering proxy's count
 * (brain/registry/cost-ledger.ts `ledgerTurn`, docs/metering.md): a metered turn takes the
 * proxy's figures whatever the stream says, and what disagrees is a finding.
 */
import { describe, expect, it } from 'vitest';
import { crossCheckUsage, ledgerTurn } from '../../../brain/registry/cost-ledger.js';

const meta = { at: '2026-12-04T00:00:00Z', role: 'implement' as const, harness: 'codex' as const, workerId: 'w1', orderId: 'o1', status: 'ok' };
const usage = (inputTokens: number, outputTokens: number, scope: 'call' | 'turn' = 'turn') => ({
  type: 'usage',
  scope,
  inputTokens,
  outputTokens,
  cacheReadTokens: null,
  cacheWriteTokens: null,
  costUsd: null,
});
const metered = (inputTokens: number, outputTokens: number, costUsd: number | null = null) => ({
  type: 'metered',
  request: { inputTokens, outputTokens, cacheReadTokens: null, cacheWriteTokens: null, costUsd, reported: true, impossible: [], model: 'm' },
});
const metering = { type: 'metering', upstreams: ['http://127.0.0.1:1'], budget: null };

describe('usage cross-check', () => {
  it('a metered turn keeps the proxy figures and flags a forged negative line even inside a positive sum', () => {
    const t = ledgerTurn([metering, metered(100, 10, 0.002), metered(50, 5, 0.001), usage(1000, 0, 'call'), usage(-900, 15, 'call')], meta);
    expect(t).toMatchObject({ source: 'proxy', requests: 2, inputTokens: 150, outputTokens: 15, reported: true });
    expect(t.costUsd).toBeCloseTo(0.003, 12);
    expect(t.findings).toEqual(["the codex stream reported impossible usage (inputTokens -900); the ledger keeps the proxy's count"]);
  });

  it('an unmetered turn (no metering event) keeps the stream as before', () => {
    expect(ledgerTurn([usage(7, 3)], meta)).toMatchObject({ inputTokens: 7, outputTokens: 3, reported: true });
    expect(ledgerTurn([usage(7, 3)], meta).source).toBeUndefined();
  });

  it('differences: any for codex and pi on an ok turn; for claude only a stream claiming more than the proxy saw', () => {
    const p = { inputTokens: 100, outputTokens: 10 };
    const s = (i: number, o: number) => ({ inputTokens: i, outputTokens: o, cacheReadTokens: null, cacheWriteTokens: null, costUsd: null });
    expect(crossCheckUsage(s(100, 10), p, 'codex', 'ok')).toEqual([]);
    expect(crossCheckUsage(s(90, 10), p, 'pi', 'ok')).toEqual([
      "the pi stream reported 90 in / 10 out tokens, the metering proxy counted 100 in / 10 out; the ledger keeps the proxy's count",
    ]);
    // A stopped turn: the last response may never have reached the stream.
    expect(crossCheckUsage(s(90, 10), p, 'pi', 'cancelled')).toEqual([]);
    // claude's side requests (a title) are not in its stream.
    expect(crossCheckUsage(s(80, 5), p, 'claude-code', 'ok')).toEqual([]);
    expect(crossCheckUsage(s(120, 10), p, 'claude-code', 'ok')).toHaveLength(1);
    expect(crossCheckUsage(null, p, 'codex', 'ok')).toEqual([]);
  });
});
