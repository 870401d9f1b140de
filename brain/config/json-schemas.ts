/**
 * JSON Schemas (draft 2020-12, https://json-schema.org/draft/2020-12/schema) for the files users
 * write: `.polly/config.yaml`, plan files, and scripts of the scripted model server. Shipped as
 * `schemas/*.json` in the package so editors can complete and check them: `polly init` writes
 * `# yaml-language-server: $schema=…` at the top of the config
 * (https://github.com/redhat-developer/yaml-language-server#using-inlined-schema).
 *
 * The config schema is derived from the validator's own spec ({@link CONFIG_SPEC}) and the plan
 * schema from the plan's zod schema (zod-to-json-schema), so neither can drift from what Polly
 * accepts; `test/brain/config/json-schemas.test.ts` checks that the files in `schemas/` equal these, and
 * `npm run schemas` rewrites them. Cross-field rules (a reviewer of another vendor, acyclic
 * `depends_on`) are checked by Polly only.
 */
import { zodToJsonSchema } from 'zod-to-json-schema';
import { planSchema } from '../plan/plan-schema.js';
import { CONFIG_COMMENTS, CONFIG_SPEC, type Spec } from './config.js';

type JsonSchema = Record<string, unknown>;

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** The schema files Polly ships, by name → file name under `schemas/`. */
export const SCHEMA_FILES = { config: 'config.schema.json', plan: 'plan.schema.json', modelScript: 'model-script.schema.json' } as const;

function specToSchema(spec: Spec, path: string): JsonSchema {
  const description = CONFIG_COMMENTS[path];
  const withDoc = (s: JsonSchema): JsonSchema => (description ? { description, ...s } : s);
  switch (spec.t) {
    case 'object': {
      const properties: Record<string, JsonSchema> = {};
      for (const [k, sub] of Object.entries(spec.fields)) properties[k] = specToSchema(sub, path ? `${path}.${k}` : k);
      return withDoc({ type: 'object', properties, additionalProperties: false, ...(spec.complete ? { required: Object.keys(spec.fields) } : {}) });
    }
    case 'record': {
      const item = specToSchema(spec.of, '');
      return withDoc({ type: 'object', properties: Object.fromEntries(spec.keys.map((k) => [k, item])), additionalProperties: false });
    }
    case 'map':
      return withDoc({ type: 'object', additionalProperties: specToSchema(spec.of, '') });
    case 'string':
      return withDoc(spec.absolutePath ? { type: 'string', pattern: '^/' } : { type: 'string' });
    case 'int':
      return withDoc({ type: 'integer', minimum: spec.min, ...(spec.max === undefined ? {} : { maximum: spec.max }) });
    case 'number':
      return withDoc(spec.min !== undefined ? { type: 'number', minimum: spec.min } : { type: 'number', exclusiveMinimum: spec.gt });
    case 'bool':
      return withDoc({ type: 'boolean' });
    case 'enum':
      return withDoc({ enum: [...spec.values] });
    case 'list':
      return withDoc({ type: 'array', items: specToSchema(spec.of, '') });
    case 'nullable':
      return withDoc({ anyOf: [specToSchema(spec.of, ''), { type: 'null' }] });
    case 'literal':
      return withDoc({ const: spec.value });
  }
}

/** The JSON Schema of `.polly/config.yaml` (every key optional; unknown keys rejected). */
export function configJsonSchema(): JsonSchema {
  return { $schema: DRAFT, $id: 'https://polly.invalid/schemas/config.schema.json', title: 'Polly configuration (.polly/config.yaml)', ...specToSchema(CONFIG_SPEC, '') };
}

/**
 * zod-to-json-schema writes a strict lower bound (`z.number().positive()`) for targets other than
 * draft 7 in the draft-4 form `{minimum: X, exclusiveMinimum: true}`; drafts 6 and later (2020-12
 * included, https://json-schema.org/draft/2020-12/json-schema-validation#section-6.2.5) spell it
 * `{exclusiveMinimum: X}`. Rewritten in place, recursively.
 */
function modernExclusiveBounds(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) modernExclusiveBounds(n);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as Record<string, unknown>;
  if (o.exclusiveMinimum === true && typeof o.minimum === 'number') {
    o.exclusiveMinimum = o.minimum;
    delete o.minimum;
  }
  for (const v of Object.values(o)) modernExclusiveBounds(v);
}

/** The JSON Schema of a plan file (`polly run plan.yaml`, the Brain's `plan_propose`). */
export function planJsonSchema(): JsonSchema {
  const generated = zodToJsonSchema(planSchema, { target: 'jsonSchema2019-09', $refStrategy: 'none' }) as JsonSchema;
  modernExclusiveBounds(generated);
  const { $schema: _drop, ...body } = generated;
  return { $schema: DRAFT, $id: 'https://polly.invalid/schemas/plan.schema.json', title: 'Polly plan', ...body };
}

const str = { type: 'string' };
const strObject = (fields: string[], optional: Record<string, JsonSchema> = {}): JsonSchema => ({
  type: 'object',
  properties: { ...Object.fromEntries(fields.map((f) => [f, str])), ...optional },
  required: fields,
  additionalProperties: false,
});

/**
 * The JSON Schema of a scripted model server script: the format `parseModelScript` in
 * `scripts/scripted-model/script.ts` accepts (sessions → turns → steps; one kind per step).
 */
export function modelScriptJsonSchema(): JsonSchema {
  const one = (kind: string, value: JsonSchema, description: string): JsonSchema => ({
    type: 'object',
    description,
    properties: { [kind]: value },
    required: [kind],
    additionalProperties: false,
  });
  const step = {
    oneOf: [
      one('write', strObject(['path', 'content']), 'Create or overwrite a file (path relative to the worktree).'),
      one('edit', strObject(['path', 'old', 'new']), 'Replace the text old with new in a file.'),
      one('run', str, "Run a shell command through the harness's shell tool."),
      one('read', str, 'Read a file.'),
      one('finish', str, "End the turn with this final text (the agent's report)."),
      one('call', strObject(['tool'], { input: { type: 'object' } }), 'Call a tool by its exact name (e.g. an MCP tool) with this input.'),
    ],
  };
  return {
    $schema: DRAFT,
    $id: 'https://polly.invalid/schemas/model-script.schema.json',
    title: 'Polly scripted model script',
    type: 'object',
    required: ['sessions'],
    additionalProperties: false,
    properties: {
      sessions: {
        type: 'array',
        items: {
          type: 'object',
          required: ['turns'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', description: 'A name for messages and logs.' },
            match: {
              type: 'object',
              description: 'Which conversation this session answers: all given fields must hold for the system prompt and first user message.',
              additionalProperties: false,
              properties: {
                role: { type: 'string', description: "The token role=<role> of Polly's prompt marker (implement, review, …)." },
                task: { type: 'string', description: "The token task=<id> of Polly's prompt marker." },
                contains: { type: 'array', items: str, description: 'Texts that must all occur (e.g. the task title).' },
              },
            },
            turns: {
              type: 'array',
              description: 'Turn i answers the i-th human message: the task, then each follow-up (red checks, review findings).',
              items: {
                type: 'object',
                required: ['steps'],
                additionalProperties: false,
                properties: { steps: { type: 'array', items: step }, text: { type: 'string', description: 'Final text when no step is a finish.' } },
              },
            },
            repeat_last: { type: 'boolean', description: 'Answer human messages beyond turns with the last turn again.' },
            latency_ms: { type: 'number', minimum: 0, maximum: 60000, description: 'Milliseconds to wait before answering each model call of this session (default 0).' },
            wait_for: {
              type: 'array',
              items: str,
              description: "Names of other sessions: this session's answers wait until each has sent a model request (at most 120 s), so two workers run at once.",
            },
          },
        },
      },
    },
  };
}

/** Every shipped schema by file name, as written to `schemas/` (2-space JSON plus a newline). */
export function renderSchemaFiles(): Record<string, string> {
  const text = (s: JsonSchema) => `${JSON.stringify(s, null, 2)}\n`;
  return {
    [SCHEMA_FILES.config]: text(configJsonSchema()),
    [SCHEMA_FILES.plan]: text(planJsonSchema()),
    [SCHEMA_FILES.modelScript]: text(modelScriptJsonSchema()),
  };
}
