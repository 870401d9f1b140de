/**
 * The gate's policy: the four policies `decide` enforces, their shape and their defaults. Owned
 * here; `brain/config/config-schema.ts` composes it as config `policies` (keys are snake_case as
 * users write them in `.polly/config.yaml`). The rule names `decide` reports (`<policy>.<sub-rule>`)
 * are listed in `gate/decide.ts`.
 */
import type { Purpose } from '../brain/core/vocabulary.js';

export interface BlastRadiusPolicy {
  /** When true, every `git push` is an ask; when false (the default) plain pushes of the task's own branch are allowed. Force-pushes, pushes to the default branch and deletions are always denied. */
  gate_pushes: boolean;
}

export interface SpawnBoundsPolicy {
  /** At most this many dispatches in one Brain turn (default 5). */
  max_dispatches_per_turn: number;
}

export interface PurposeGuardPolicy {
  /** The closed set of purposes a dispatch may carry (default: implement, review, explore, search). */
  allowed: Purpose[];
  /** Purposes whose workers may not write anything; review, explore and search never write, listed or not (brain/core/vocabulary.ts `isReadOnlyRole`). */
  read_only: Purpose[];
}

/** What `decide` takes as its policy (config `policies`). */
export interface GatePolicy {
  blast_radius: BlastRadiusPolicy;
  spawn_bounds: SpawnBoundsPolicy;
  purpose_guard: PurposeGuardPolicy;
  /** Seconds an ask (plan gate, gated call) stays open before it counts as a deny (default 86400). */
  ask_timeout: number;
}

/** The default policy (config defaults compose it). Frozen: copy it (`structuredClone`) before changing anything. */
export const DEFAULT_GATE_POLICY: Readonly<GatePolicy> = deepFreeze({
  blast_radius: { gate_pushes: false },
  spawn_bounds: { max_dispatches_per_turn: 5 },
  purpose_guard: {
    allowed: ['implement', 'review', 'explore', 'search'],
    read_only: ['review', 'explore', 'search'],
  },
  ask_timeout: 86400,
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
