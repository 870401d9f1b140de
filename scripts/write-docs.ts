/**
 * `npm run docs`: write the generated reference pages (docs/reference/config.md from the config's
 * JSON Schema, docs/reference/cli.md from the commands' help; scripts/docs-reference.ts). Run after
 * changing a config key, its comment or default, or a command's usage; `test/house/docs.test.ts`
 * fails until the files match.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../brain/core/install-paths.js';
import { REFERENCE_FILES, renderCliReference, renderConfigReference } from './docs-reference.js';

const pages: Record<string, string> = { [REFERENCE_FILES.config]: renderConfigReference(), [REFERENCE_FILES.cli]: await renderCliReference() };
for (const [rel, text] of Object.entries(pages)) {
  const path = join(packageRoot(), rel);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  process.stdout.write(`wrote ${rel}\n`);
}
