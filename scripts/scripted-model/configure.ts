/**
 * Point a repository's Polly at the scripted model server: edits `.polly/config.yaml` in place
 * (comments kept) and returns the environment the Brain and its workers need. Used by
 * `npm run demo` and by the end-to-end tests; with real models you configure the same keys by hand.
 *
 * - claude-code (and the LLM brain): `ANTHROPIC_BASE_URL=<url>` plus a placeholder key;
 * - codex: a custom provider `scripted` with `base_url=<url>/v1`, `wire_api="responses"`, key
 *   variable `POLLY_SCRIPTED_KEY`;
 * - pi: `base_url=<url>/v1` (OpenAI chat completions), key variable `POLLY_SCRIPTED_KEY`.
 * As root, `allow_root_sandbox: true` is set (the demo runs in a throwaway sandbox directory).
 * `prices` gets a price of 0 for the model ids the workers ask the scripted server for (it runs
 * here and bills no one; Polly's metering proxy prices requests from `prices`, docs/metering.md),
 * so a usd budget passes the plan gate.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';

/** The placeholder key the scripted server accepts (it checks no key). Not a secret. */
export const SCRIPTED_KEY = 'scripted-model-no-key-needed';

/**
 * Edit the config of the repository at `repoRoot` to use the scripted server at `url`.
 * @returns env vars to add for `polly goal` / `polly brain` (model endpoints and placeholder keys).
 */
export function useScriptedModels(repoRoot: string, url: string, options: { allowRootSandbox?: boolean; extra?: Array<[string[], unknown]> } = {}): Record<string, string> {
  const file = join(repoRoot, '.polly', 'config.yaml');
  const doc = parseDocument(readFileSync(file, 'utf8'));
  const set = (path: string[], value: unknown) => doc.setIn(path, value);
  set(['workers', 'claude-code', 'allow_root_sandbox'], options.allowRootSandbox ?? process.getuid?.() === 0);
  set(['workers', 'codex', 'model'], 'gpt-5.5');
  set(['workers', 'codex', 'provider'], doc.createNode({ id: 'scripted', base_url: `${url}/v1`, env_key: 'POLLY_SCRIPTED_KEY' }));
  set(['workers', 'pi', 'base_url'], `${url}/v1`);
  set(['workers', 'pi', 'model'], 'scripted');
  set(['workers', 'pi', 'api_key_env'], 'POLLY_SCRIPTED_KEY');
  const claudeModel = doc.getIn(['workers', 'claude-code', 'model']);
  const free = { input: 0, output: 0 };
  for (const model of [typeof claudeModel === 'string' ? claudeModel : 'claude-sonnet-4-5', 'gpt-5.5', 'scripted']) set(['prices', model], doc.createNode(free));
  for (const [path, value] of options.extra ?? []) set(path, value);
  writeFileSync(file, doc.toString());
  return { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: SCRIPTED_KEY, POLLY_SCRIPTED_KEY: SCRIPTED_KEY, OPENAI_API_KEY: SCRIPTED_KEY };
}
