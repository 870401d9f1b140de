/**
 * `npm run schemas`: write the JSON Schemas Polly ships (`schemas/*.json`) from the sources
 * (brain/config/json-schemas.ts). Run after changing the config spec, the plan schema or the model
 * script format; `test/brain/config/json-schemas.test.ts` fails until the files match.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSchemaFiles } from '../brain/config/json-schemas.js';
import { packageRoot } from '../brain/core/install-paths.js';

const dir = join(packageRoot(), 'schemas');
mkdirSync(dir, { recursive: true });
for (const [name, text] of Object.entries(renderSchemaFiles())) {
  writeFileSync(join(dir, name), text);
  process.stdout.write(`wrote schemas/${name}\n`);
}
