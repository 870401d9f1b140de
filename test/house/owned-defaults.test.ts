/**
 * Each part owns its defaults and the config composes them: the gate's policy
 * (gate/policy-types.ts) and the checker's guarantee policy (workflows/check/guarantees.ts) state
 * the same dispatch bound, and DEFAULT_CONFIG carries the gate's policy unchanged.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../brain/config/config-schema.js';
import { DEFAULT_GATE_POLICY } from '../../gate/policy-types.js';
import { DEFAULT_GUARANTEE_POLICY } from '../../workflows/check/guarantees.js';

describe('owned defaults, composed by the config', () => {
  it('config policies are the gate default, and the guarantee default bounds dispatches the same', () => {
    expect(DEFAULT_CONFIG.policies).toEqual(DEFAULT_GATE_POLICY);
    expect(DEFAULT_CONFIG.policies).not.toBe(DEFAULT_GATE_POLICY);
    expect(DEFAULT_GUARANTEE_POLICY.maxDispatchesPerTurn).toBe(DEFAULT_GATE_POLICY.spawn_bounds.max_dispatches_per_turn);
  });

  it('the owned defaults are frozen, so a caller cannot change every later default', () => {
    expect(() => {
      (DEFAULT_GATE_POLICY.spawn_bounds as { max_dispatches_per_turn: number }).max_dispatches_per_turn = 9;
    }).toThrow(TypeError);
    expect(() => {
      (DEFAULT_GUARANTEE_POLICY as { maxDispatchesPerTurn: number }).maxDispatchesPerTurn = 9;
    }).toThrow(TypeError);
  });
});
