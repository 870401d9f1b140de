/**
 * Where this installation of Polly keeps its files: the package root and every path inside it that
 * Polly runs or reads (the built CLI, the worker runner, the gate's hook entry points, the built-in
 * workflows, the Brain's skills). One place, so the sources (run by vitest) and the build (`dist/`)
 * find the same files.
 *
 * The package root is the nearest directory above this module whose `package.json` is named
 * `polly`; `dist/` sits inside it, so a module in `dist/brain/core/` and one in `brain/core/` find
 * the same root.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PollyError } from './errors.js';

let root: string | undefined;

/**
 * The Polly package root (holds `package.json`, `dist/`, `workflows/`), found once and cached.
 * @throws PollyError `internal` when no `package.json` named polly is above this module.
 */
export function packageRoot(): string {
  if (root !== undefined) return root;
  const here = fileURLToPath(import.meta.url);
  let dir = dirname(here);
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'polly') return (root = dir);
      } catch {
        // an unreadable package.json is not ours: keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new PollyError('internal', `cannot find the polly package root above ${here}: reinstall Polly.`);
    dir = up;
  }
}

/** An absolute path inside the build, e.g. `distPath('brain', 'cli.js')` → `<root>/dist/brain/cli.js`. */
export function distPath(...parts: string[]): string {
  return join(packageRoot(), 'dist', ...parts);
}

/** The built CLI entry (`dist/brain/cli.js`): what the Brain daemon, the MCP host entries and the demo run. */
export function cliPath(): string {
  return distPath('brain', 'cli.js');
}

/** The built worker runner (`dist/workers/supervisor/worker-runner.js`). */
export function workerRunnerPath(): string {
  return distPath('workers', 'supervisor', 'worker-runner.js');
}

/** The directory of the built gate hook entry points (`dist/gate/hooks/`), with `bundle/` inside. */
export function gateHooksDistDir(): string {
  return distPath('gate', 'hooks');
}

/** The directory of every built-in workflow (`<root>/workflows/`), one sub-directory each. */
export function builtinWorkflowsDir(): string {
  return join(packageRoot(), 'workflows');
}

/** The Brain's shipped skills (`<root>/brain/llm/skills/`), one `<name>/SKILL.md` each. */
export function brainSkillsDir(): string {
  return join(packageRoot(), 'brain', 'llm', 'skills');
}

/** A shipped JSON Schema (`<root>/schemas/<file>`, e.g. `config.schema.json`; written by `npm run schemas`). */
export function schemaPath(file: string): string {
  return join(packageRoot(), 'schemas', file);
}
