/**
 * What a Brain process loads at start (issue 33 item 6): `polly brain` starts once per `polly run`,
 * `polly goal` and resume, and its module graph was ~490 compiled files, the worker runner's (gate
 * server, agent adapters, sandbox) and the MCP server's (the SDK, ajv) among them, for a few helpers.
 * The static import closure of the compiled `brain` command (dist/, where TypeScript has dropped
 * type-only imports) must not reach the worker runner, the MCP server or the gate's decider: the
 * runner is its own process, the MCP server is `polly mcp`'s, and the gate decides in the runner;
 * nor load the Postgres client (`pg`) for the default LMDB run store.
 * The same scan run on the runner must reach the gate (so it cannot pass by scanning nothing).
 * Needs the build (the test setup builds a stale dist/).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { distPath } from '../../brain/core/install-paths.js';

const DIST = distPath();

/**
 * The compiled files `entry` loads through static imports (dist-relative paths), and the packages
 * they import statically (`pg`, `@modelcontextprotocol/sdk/server/mcp.js`, …).
 */
function staticClosure(entry: string): Set<string> & { packages: Set<string> } {
  const re = /^\s*(?:import|export)\s[^;]*?\sfrom\s*(['"])([^'"]+)\1|^\s*import\s*(['"])([^'"]+)\3/gm;
  const seen = Object.assign(new Set<string>(), { packages: new Set<string>() });
  const queue = [resolve(entry)];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    const rel = relative(DIST, file);
    if (seen.has(rel) || !existsSync(file)) continue;
    seen.add(rel);
    for (const m of readFileSync(file, 'utf8').matchAll(re)) {
      const spec = (m[2] ?? m[4]) as string;
      if (spec.startsWith('.')) queue.push(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) seen.packages.add(spec);
    }
  }
  return seen;
}

const NOT_IN_THE_BRAIN = ['workers/supervisor/worker-runner.js', 'brain/mcp/mcp-server.js', 'gate/decide.js'];

describe('the house: what the Brain process loads', () => {
  it('the brain command reaches neither the worker runner, the MCP server nor the gate by static imports', () => {
    const closure = staticClosure(distPath('brain', 'commands', 'brain.js'));
    expect(closure.has('brain/process/brain-process.js')).toBe(true);
    expect(closure.has('workers/supervisor/worker-supervisor.js')).toBe(true);
    expect(NOT_IN_THE_BRAIN.filter((f) => closure.has(f))).toEqual([]);
    // The Postgres client loads only for a Postgres run store (workflows/run/postgres-run-store.ts).
    expect(closure.has('workflows/run/postgres-run-store.js')).toBe(true);
    expect(closure.packages.has('yaml')).toBe(true);
    expect(closure.packages.has('pg')).toBe(false);
  });

  it('the scan bites: from the worker runner it reaches the gate', () => {
    expect(staticClosure(distPath('workers', 'supervisor', 'worker-runner.js')).has('gate/decide.js')).toBe(true);
  });
});
