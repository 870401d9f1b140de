/**
 * `npm run bench -- mcp`: the MCP server over real stdio (SDK Client → `node dist/brain/cli.js mcp`)
 * with a large input. Prints, in one run: the median latency of small calls (workflow_start on a
 * fresh customer-brief day, then workflow_state) before the large input, the size of the reply to
 * a ~1 MB polly-task input (`task` is a 1 000 000-character id, valid for its pattern), the store's
 * size after it, and the same median latency after it (the baseline is the "before" figure).
 */
import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const CLI = fileURLToPath(new URL('../brain/cli.js', import.meta.url));
const ROUNDS = Number(process.argv[2] ?? 15);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Bytes of the registry files and the run store (`runs/`) in `dir`. */
function storeBytes(dir: string): number {
  const runs = join(dir, 'runs');
  const inRuns = existsSync(runs) ? readdirSync(runs).reduce((n, f) => n + statSync(join(runs, f)).size, 0) : 0;
  return (
    inRuns +
    readdirSync(dir)
      .filter((f) => f.endsWith('.json') || f.endsWith('.jsonl') || f.endsWith('.bak'))
      .reduce((n, f) => n + statSync(join(dir, f)).size, 0)
  );
}

const registry = mkdtempSync(join(tmpdir(), 'polly-bench-mcp-'));
const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--registry', registry], stderr: 'ignore' });
const client = new Client({ name: 'polly-bench', version: '1.0.0' });
await client.connect(transport);

let day = 0;
async function smallCalls(n: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    day += 1;
    const d = `2030-01-${String((day % 28) + 1).padStart(2, '0')}`;
    const t0 = performance.now();
    const s = (await client.callTool({ name: 'workflow_start', arguments: { workflow: 'customer-brief', input: { channel: `#b${day}`, day: d } } })) as {
      structuredContent?: { run?: { id: string } };
    };
    await client.callTool({ name: 'workflow_state', arguments: { run_id: s.structuredContent!.run!.id } });
    times.push(performance.now() - t0);
  }
  return median(times);
}

const before = await smallCalls(ROUNDS);
const storeBefore = storeBytes(registry);
const big = 'a'.repeat(1_000_000);
const t0 = performance.now();
let replyBytes = 0;
let outcome = '';
try {
  const r = await client.callTool({ name: 'workflow_start', arguments: { workflow: 'polly-task', input: { task: big } } });
  replyBytes = Buffer.byteLength(JSON.stringify(r));
  outcome = (r as { isError?: boolean; structuredContent?: { status?: string; code?: string } }).isError
    ? 'tool error'
    : `${(r as { structuredContent?: { status?: string } }).structuredContent?.status ?? '?'}${(r as { structuredContent?: { code?: string } }).structuredContent?.code ? ` (${(r as { structuredContent?: { code?: string } }).structuredContent?.code})` : ''}`;
} catch (error) {
  const e = error as { code?: number; message?: string };
  replyBytes = Buffer.byteLength(JSON.stringify({ code: e.code, message: e.message }));
  outcome = `JSON-RPC error ${e.code}`;
}
const bigMs = performance.now() - t0;
const storeAfter = storeBytes(registry);
const after = await smallCalls(ROUNDS);
await client.close();

process.stdout.write(
  [
    `small call (workflow_start + workflow_state), median of ${ROUNDS}: before ${before.toFixed(1)} ms`,
    `1 MB input (polly-task, task of 1 000 000 chars): ${outcome}, reply ${replyBytes} bytes, ${bigMs.toFixed(0)} ms`,
    `store: ${storeBefore} bytes before, ${storeAfter} bytes after (+${storeAfter - storeBefore})`,
    `small call after the 1 MB input, median of ${ROUNDS}: ${after.toFixed(1)} ms (${(after / before).toFixed(2)}× the baseline)`,
    '',
  ].join('\n'),
);
