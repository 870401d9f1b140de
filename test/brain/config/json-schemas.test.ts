// The JSON Schemas shipped in schemas/: equal to what the sources generate, and they accept what
// Polly accepts (the default config, the demo plan, the demo model scripts) and reject a misspelt key.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig, renderDefaultConfig } from '../../../brain/config/config.js';
import { renderSchemaFiles, SCHEMA_FILES } from '../../../brain/config/json-schemas.js';
import { packageRoot } from '../../../brain/core/install-paths.js';
import { parsePlanFile } from '../../../brain/plan/plan-schema.js';
import { PollyError } from '../../../brain/core/errors.js';

const root = packageRoot();
const shipped = (file: string) => JSON.parse(readFileSync(join(root, 'schemas', file), 'utf8')) as Record<string, unknown>;
const validator = (file: string) => new Ajv2020({ allErrors: true, strict: false }).compile(shipped(file));

describe('shipped JSON Schemas', () => {
  it('are exactly what the sources generate (run "npm run schemas" after changing them)', () => {
    for (const [file, text] of Object.entries(renderSchemaFiles())) expect(readFileSync(join(root, 'schemas', file), 'utf8'), file).toBe(text);
  });

  it('are in the package ("files" ships schemas/)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schemas');
  });

  it('the config schema accepts the default config and a detected one, and rejects a misspelt key and a wrong type', () => {
    const validate = validator(SCHEMA_FILES.config);
    expect(validate(parse(renderDefaultConfig())), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(parse(renderDefaultConfig({ acceptanceCommands: ['go test ./...'], setup: null, schemaRef: '../x.json' })))).toBe(true);
    const misspelt = renderDefaultConfig().replace('max_attempts:', 'max_attempt:');
    expect(() => parseConfig(misspelt, 'c.yaml')).toThrow(PollyError); // Polly refuses it too
    expect(validate(parse(misspelt))).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ keyword: 'additionalProperties', params: { additionalProperty: 'max_attempt' } });
    expect(validate(parse(renderDefaultConfig().replace('max_rounds: 2', 'max_rounds: many')))).toBe(false);
  });

  it('the plan schema accepts the demo plan and rejects a misspelt key and a missing prompt', () => {
    const validate = validator(SCHEMA_FILES.plan);
    const text = readFileSync(join(root, 'scripts/demo/plan.yaml'), 'utf8');
    expect(parsePlanFile(text, 'plan.yaml').tasks.length).toBeGreaterThan(1);
    const plan = parse(text) as { tasks: Array<Record<string, unknown>> };
    expect(validate(plan), JSON.stringify(validate.errors)).toBe(true);
    const misspelt = { ...plan, tasks: [{ ...plan.tasks[0], dependsOn: [] }] };
    expect(validate(misspelt)).toBe(false);
    expect(validate.errors?.some((e) => e.keyword === 'additionalProperties' && e.params.additionalProperty === 'dependsOn')).toBe(true);
    const { prompt: _prompt, ...noPrompt } = plan.tasks[0]!;
    expect(validate({ tasks: [noPrompt] })).toBe(false);
  });

  it('the model script schema accepts the demo scripts and rejects a step with two kinds', () => {
    const validate = validator(SCHEMA_FILES.modelScript);
    for (const f of ['scripts/demo/workers-script.yaml', 'scripts/demo/brain-script.yaml']) {
      expect(validate(parse(readFileSync(join(root, f), 'utf8'))), `${f}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(validate({ sessions: [{ turns: [{ steps: [{ read: 'a', run: 'b' }] }] }] })).toBe(false);
    expect(validate({ sessions: [{ turns: [{ stepz: [] }] }] })).toBe(false);
  });
});
