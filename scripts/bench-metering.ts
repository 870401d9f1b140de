/**
 * `npm run bench -- metering [requests]`: the latency the metering proxy (workers/metering/) adds
 * to one model request, against a direct request to the same endpoint measured in the same run.
 *
 * The endpoint is the scripted model server (scripts/scripted-model/) in this process, answering an
 * Anthropic Messages request (`[polly task=b1 role=implement]`) with a one-line text, as JSON and as
 * an SSE stream. Each of N requests (default 200) goes once directly and once through a proxy
 * started here (which reads the usage and prices it), interleaved so that load and JIT warm-up fall
 * on both alike. Printed: median and p90 milliseconds per request for each, and the ratio of the
 * medians proxy / direct, for JSON and for SSE. A fresh HTTP connection per request (no keep-alive),
 * as the agent CLIs' first request of a turn does.
 */
import { request } from 'node:http';
import { parseModelScript } from './scripted-model/script.js';
import { startScriptedModelServer } from './scripted-model/server.js';
import { startMeteringProxy } from '../workers/metering/metering-proxy.js';
import { openGoalLedger } from '../workers/metering/goal-ledger.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Math.max(10, Number(process.argv[2] ?? 200) || 200);
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] as number;

/** POST `body` to `url` (a new connection), read the whole answer; milliseconds. */
function time(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-api-key': 'bench' } },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`HTTP ${res.statusCode} from ${url}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const server = await startScriptedModelServer({
  script: parseModelScript(
    'sessions:\n  - name: b1\n    match: {task: b1, role: implement}\n    turns:\n      - steps:\n          - finish: "A short answer for the benchmark."\n',
  ),
});
const proxy = await startMeteringProxy({ upstreams: [server.url], prices: { 'claude-sonnet-4-5': { input: 3, output: 15 } } });
// The same proxy charging a goal's shared ledger (workers/metering/goal-ledger.ts): one read of what
// the other proxies appended before forwarding, one append when the response ends.
const ledger = openGoalLedger(join(mkdtempSync(join(tmpdir(), 'polly-bench-ledger-')), 'goal-b.jsonl'));
const goalProxy = await startMeteringProxy({
  upstreams: [server.url],
  prices: { 'claude-sonnet-4-5': { input: 3, output: 15 } },
  goal: { ledger, limit: { tokens: 1e12 }, goalId: 'gb', by: 'bench', task: null },
});
try {
  const direct = `${server.url}/v1/messages`;
  const metered = `${proxy.urlFor(0)}/v1/messages`;
  const goalMetered = `${goalProxy.urlFor(0)}/v1/messages`;
  const results: string[] = [];
  for (const stream of [false, true]) {
    const body = JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      stream,
      messages: [{ role: 'user', content: '[polly task=b1 role=implement] Say something short.' }],
    });
    for (let i = 0; i < 10; i++) {
      await time(direct, body);
      await time(metered, body);
    }
    const a: number[] = [];
    const b: number[] = [];
    const g: number[] = [];
    for (let i = 0; i < runs; i++) {
      a.push(await time(direct, body));
      b.push(await time(metered, body));
      g.push(await time(goalMetered, body));
    }
    const ratio = pct(b, 0.5) / pct(a, 0.5);
    results.push(
      `${stream ? 'SSE ' : 'JSON'}  direct: median ${pct(a, 0.5).toFixed(3)} ms, p90 ${pct(a, 0.9).toFixed(3)} ms · through the proxy: median ${pct(b, 0.5).toFixed(3)} ms, p90 ${pct(b, 0.9).toFixed(3)} ms · added ${(pct(b, 0.5) - pct(a, 0.5)).toFixed(3)} ms · ratio ${ratio.toFixed(2)}×`,
      `${stream ? 'SSE ' : 'JSON'}  with a goal ledger: median ${pct(g, 0.5).toFixed(3)} ms, p90 ${pct(g, 0.9).toFixed(3)} ms · added ${(pct(g, 0.5) - pct(a, 0.5)).toFixed(3)} ms · ratio ${(pct(g, 0.5) / pct(a, 0.5)).toFixed(2)}×`,
    );
  }
  const counted = proxy.spent();
  process.stdout.write(`metering proxy, ${runs} requests each (Anthropic Messages against the scripted model server, one connection per request)\n`);
  for (const line of results) process.stdout.write(`${line}\n`);
  process.stdout.write(`the proxy counted ${counted.requests} requests, ${counted.tokens} tokens, $${counted.usd.toFixed(6)}\n`);
} finally {
  await proxy.close();
  await goalProxy.close();
  ledger.close();
  await server.close();
}
