/**
 * Reading workflow files: YAML text → validated {@link Workflow}, with every error located at
 * `file:line:column` (positions come from the `yaml` package's document API and LineCounter).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Node as YamlNode } from 'yaml';
import { PollyError } from '../brain/core/errors.js';
import { validateWorkflow } from './workflow-format.js';
import type { Workflow } from './workflow-schema.js';

/** The file name of a workflow inside its directory. */
export const WORKFLOW_FILE = 'workflow.yaml';

/**
 * Parse and validate workflow YAML.
 *
 * @param text the YAML source.
 * @param file the label used in error messages (normally the path).
 * @throws PollyError `workflow_invalid`: YAML syntax errors, duplicate keys, schema violations and
 *   expression errors, each as `file:line:column: field.path: what — what to do`.
 */
export function parseWorkflow(text: string, file: string): Workflow {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const firstError = doc.errors[0];
  if (firstError) {
    const pos = lineCounter.linePos(firstError.pos[0]);
    throw new PollyError('workflow_invalid', `${file}:${pos.line}:${pos.col}: not valid YAML: ${firstError.message.split('\n')[0]}. Fix the syntax and run "polly check" again.`, {
      details: { file, line: pos.line, column: pos.col },
    });
  }
  const positions: Workflow['positions'] = {};
  const quoteOffsets: Record<string, number> = {};
  const at = (offset: number): { line: number; column: number } => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const walk = (node: YamlNode | null | undefined, path: string, keyOffset: number | null): void => {
    if (!node) return;
    const start = node.range?.[0];
    if (isScalar(node)) {
      if (start !== undefined) positions[path] = at(start);
      if (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE') quoteOffsets[path] = 1;
      return;
    }
    const here = keyOffset ?? start;
    if (here !== undefined) positions[path] = at(here);
    if (isMap(node)) {
      for (const pair of node.items) {
        const k = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const childPath = path ? `${path}.${k}` : k;
        const kOff = isScalar(pair.key) ? (pair.key.range?.[0] ?? null) : null;
        if (kOff !== null) {
          positions[childPath] = at(kOff);
          positions[`${childPath}@key`] = at(kOff);
        }
        walk(pair.value as YamlNode | null, childPath, kOff);
      }
    } else if (isSeq(node)) {
      for (const [i, item] of node.items.entries()) walk(item as YamlNode, `${path}[${i}]`, null);
    }
  };
  walk(doc.contents as YamlNode | null, '', null);
  if (doc.contents === null) {
    throw new PollyError('workflow_invalid', `${file}:1:1: the file is empty; a workflow needs at least name, states, initial, terminal, actions and transitions.`, {
      details: { file, line: 1, column: 1 },
    });
  }
  return validateWorkflow(doc.toJS(), { file, positions, quoteOffsets });
}

/**
 * Load a workflow from a directory holding `workflow.yaml`, or from the file itself.
 * @throws PollyError `bad_input` when nothing is at `path`; `workflow_invalid` as {@link parseWorkflow}.
 */
export function loadWorkflow(path: string): Workflow {
  let file = path;
  if (existsSync(path) && statSync(path).isDirectory()) file = join(path, WORKFLOW_FILE);
  if (!existsSync(file)) {
    throw new PollyError('bad_input', `no workflow at ${JSON.stringify(path)} (looked for ${file}). Pass a directory holding ${WORKFLOW_FILE} or the YAML file itself.`, {
      details: { path },
    });
  }
  return parseWorkflow(readFileSync(file, 'utf8'), file);
}
