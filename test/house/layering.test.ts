/**
 * The layering of the house, as a test: `gate/`, `workers/` and `workflows/` are lower rooms and
 * may import from `brain/` only its ground floor, `brain/core/`; `brain/core/` imports nothing of
 * Polly's outside itself. The scan reads every import specifier (static `from`, `import()`, and
 * `export … from`) of every TypeScript file in the lower rooms; the checker function is also run on
 * a planted violation so the test cannot pass by scanning nothing.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const LOWER_ROOMS = ['gate', 'workers', 'workflows'];

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (/\.(ts|mts|cts)$/.test(name)) out.push(path);
  }
  return out;
}

/** Relative import specifiers in `source`. */
function specifiers(source: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;
  return [...source.matchAll(re)].map((m) => m[2]!);
}

/**
 * The imports of `file` (absolute) that break the layering: a lower room reaching into `brain/`
 * outside `brain/core/`, or `brain/core/` reaching outside itself. Each as `file → target`, repo-relative.
 */
function layeringViolations(file: string, source: string): string[] {
  const from = relative(ROOT, file).split(sep).join('/');
  const room = from.split('/')[0]!;
  const inCore = from.startsWith('brain/core/');
  if (!LOWER_ROOMS.includes(room) && !inCore) return [];
  const bad: string[] = [];
  for (const spec of specifiers(source)) {
    const target = relative(ROOT, resolve(dirname(file), spec))
      .split(sep)
      .join('/');
    if (inCore ? !target.startsWith('brain/core/') : target.startsWith('brain/') && !target.startsWith('brain/core/')) bad.push(`${from} → ${target}`);
  }
  return bad;
}

describe('the house: lower rooms import brain/ only through brain/core/', () => {
  it('gate/, workers/ and workflows/ import nothing in brain/ outside core/, and core/ imports nothing outside itself', () => {
    const files = [...LOWER_ROOMS.flatMap((r) => tsFiles(join(ROOT, r))), ...tsFiles(join(ROOT, 'brain', 'core'))];
    expect(files.length).toBeGreaterThan(50);
    const violations = files.flatMap((f) => layeringViolations(f, readFileSync(f, 'utf8')));
    expect(violations).toEqual([]);
  });

  it('the check bites: a planted import of brain/registry from workers/ and of brain/config from core/ are reported', () => {
    expect(layeringViolations(join(ROOT, 'workers', 'x.ts'), "import type { A } from '../brain/registry/registry-schema.js';")).toEqual([
      'workers/x.ts → brain/registry/registry-schema.js',
    ]);
    expect(layeringViolations(join(ROOT, 'gate', 'hooks', 'y.ts'), "const m = await import('../../brain/commands/gate.js');")).toEqual([
      'gate/hooks/y.ts → brain/commands/gate.js',
    ]);
    expect(layeringViolations(join(ROOT, 'brain', 'core', 'z.ts'), "export { B } from '../config/config-schema.js';")).toEqual(['brain/core/z.ts → brain/config/config-schema.js']);
    expect(layeringViolations(join(ROOT, 'workflows', 'ok.ts'), "import { PollyError } from '../brain/core/errors.js';")).toEqual([]);
    expect(layeringViolations(join(ROOT, 'brain', 'commands', 'free.ts'), "import { x } from '../registry/registry-store.js';")).toEqual([]);
  });
});
