/**
 * Real data onto the checked domain: a tool's result (a count of 5, a ticket status "open", extra
 * fields) becomes the action data the checker explored (`count: 2` on `int 0..2`), by the rules the
 * workflow declares per data field (`map`, see {@link DataMap} in `workflow-schema.ts`) and per
 * action (`extra: payload`).
 *
 * Why the checker's proof covers the mapped values: the checker enumerates every valuation of
 * every data field's declared domain. Each rule's image lies inside that domain by construction —
 * `saturate` clamps into [min, max]; every `buckets` value and every `rename` target (and
 * `otherwise`) was checked to be in the domain when the workflow loaded (`workflow-format.ts`) —
 * and a value no rule maps is passed on unchanged, so the interpreter refuses it as out of domain
 * (`bad_data`) exactly as before. So every data valuation the runtime applies was explored.
 * `test/workflows/run/data-mapping.test.ts` checks the image property over many real values.
 */
import type { ActionDecl, DataField, DataMap, Value } from '../workflow-schema.js';

/** The data an action is applied with, what it was mapped from, and the payload kept aside. */
export interface MappedData {
  /** Data fields only, mapped onto their domains (unmappable values unchanged: the interpreter refuses them). */
  data: Record<string, unknown>;
  /** Fields whose real value differed from the applied one: name → {real, applied}. */
  mapped: Record<string, { real: unknown; applied: Value }>;
  /** Reported fields that are not data fields, when the action keeps them (`extra: payload`); else null. */
  payload: Record<string, unknown> | null;
}

/** Map one real value by `map` onto the field's domain; undefined when no rule applies. */
export function mapValue(field: DataField, map: DataMap, real: unknown): Value | undefined {
  switch (map.kind) {
    case 'saturate': {
      if (field.type !== 'int' || typeof real !== 'number' || !Number.isInteger(real)) return undefined;
      return Math.min(field.max, Math.max(field.min, real));
    }
    case 'buckets': {
      if (typeof real !== 'number' || !Number.isInteger(real)) return undefined;
      let out: number | undefined;
      for (const b of map.buckets) if (real >= b.at_least) out = b.value;
      return out;
    }
    case 'rename': {
      if (typeof real !== 'string') return undefined;
      if (Object.hasOwn(map.values, real)) return map.values[real];
      if (field.type === 'enum' && field.values.includes(real)) return real;
      return map.otherwise ?? undefined;
    }
  }
}

/**
 * Map reported `raw` data for `action`: each mapped field by its rule; other fields as they are.
 * Fields the action does not declare stay in `data` (and are refused by the interpreter) unless the
 * action says `extra: payload`, which moves them to `payload`.
 */
export function mapActionData(action: ActionDecl, raw: Record<string, unknown>): MappedData {
  const data: Record<string, unknown> = {};
  const mapped: MappedData['mapped'] = {};
  let payload: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(raw)) {
    const field = action.data.find((f) => f.name === k);
    if (!field) {
      if (action.extra === 'payload') (payload ??= {})[k] = v;
      else data[k] = v;
      continue;
    }
    const m = field.map ? mapValue(field, field.map, v) : undefined;
    if (m === undefined) {
      data[k] = v;
    } else {
      data[k] = m;
      if (m !== v) mapped[k] = { real: v, applied: m };
    }
  }
  if (action.extra === 'payload' && payload === null) payload = {};
  return { data, mapped, payload };
}
