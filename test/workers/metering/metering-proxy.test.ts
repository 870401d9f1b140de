/**
 * The metering proxy on its own (workers/metering/): real HTTP on loopback both sides. Usage is read
 * from each API's own response shapes (Anthropic JSON and SSE with cumulative message_delta,
 * OpenAI Responses `response.completed`, Chat Completions' last chunk), an SSE stream is passed on
 * as it comes (the client has the first event before the upstream sends the last), and once the
 * budget is spent the next model request is refused in the vendor's error shape without reaching
 * the upstream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMeteringProxy } from '../../../workers/metering/metering-proxy.js';
import { usageReader } from '../../../workers/metering/api-usage.js';

let upstream: Server;
let base: string;
const hits: string[] = [];
let release: (() => void) | null = null;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      hits.push(req.url ?? '');
      const model = (JSON.parse(body || '{}') as { model?: string }).model;
      if (req.url === '/v1/messages' && body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { model, usage: { input_tokens: 100, cache_read_input_tokens: 20, cache_creation_input_tokens: 5, output_tokens: 1 } } })}\n\n`,
        );
        // The rest only when the test says so: the client must already have the first event.
        release = () => {
          res.write(`event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', usage: { output_tokens: 7 } })}\n\n`);
          res.write(`event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', usage: { output_tokens: 30 } })}\n\n`);
          res.end('event: message_stop\ndata: {"type":"message_stop"}\n\n');
        };
        return;
      }
      if (req.url === '/v1/messages') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'message', model, usage: { input_tokens: 10, output_tokens: 4 } }));
        return;
      }
      if (req.url === '/v1/responses') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { model } })}\n\n`);
        res.end(
          `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: { model, usage: { input_tokens: 50, input_tokens_details: { cached_tokens: 10 }, output_tokens: 5 } } })}\n\n`,
        );
        return;
      }
      if (req.url === '/v1/chat/completions') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ model, choices: [{ delta: { content: 'hi' } }] })}\n\n`);
        res.end(`data: ${JSON.stringify({ model, choices: [], usage: { prompt_tokens: 40, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`);
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(() => upstream?.close());

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('usage readers', () => {
  it('Anthropic SSE split anywhere: message_start input plus the last cumulative message_delta output', () => {
    const text = `event: message_start\r\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":3,"output_tokens":1}}}\r\n\r\nevent: message_delta\r\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\r\n\r\n`;
    for (let cut = 1; cut < text.length; cut += 7) {
      const r = usageReader('anthropic-messages', true, null);
      r.push(Buffer.from(text.slice(0, cut)));
      r.push(Buffer.from(text.slice(cut)));
      expect(r.end()).toMatchObject({ inputTokens: 3, outputTokens: 9, model: 'm', impossible: [] });
    }
  });

  it('names an impossible value and counts it as 0', () => {
    const r = usageReader('openai-chat', false, 'x');
    r.push(Buffer.from(JSON.stringify({ usage: { prompt_tokens: -5, completion_tokens: 2.5 } })));
    expect(r.end()).toMatchObject({ inputTokens: 0, outputTokens: 0, impossible: ['prompt_tokens=-5', 'completion_tokens=2.5'] });
  });
});

describe('the metering proxy', () => {
  it('counts each API from its own response, prices it, and passes SSE through as it comes', async () => {
    const seen: number[] = [];
    const proxy = await startMeteringProxy({
      upstreams: [base],
      prices: { 'claude-x': { input: 3, output: 15, cache_read: 0.3 } },
      onRequest: (r) => seen.push(r.inputTokens + r.outputTokens),
    });
    try {
      const u = proxy.urlFor(0);
      const res = await post(`${u}/v1/messages`, { model: 'claude-x', stream: true });
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('message_start');
      expect(release, 'the upstream has not sent the rest yet').not.toBeNull();
      release!();
      let rest = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        rest += new TextDecoder().decode(value);
      }
      expect(rest).toContain('message_stop');
      await post(`${u}/v1/responses`, { model: 'gpt-y', stream: true }).then((r) => r.text());
      await post(`${u}/v1/chat/completions`, { model: 'local', stream: true }).then((r) => r.text());
      await new Promise((r) => setTimeout(r, 50));
      const reqs = proxy.requests();
      expect(reqs.map((r) => [r.api, r.inputTokens, r.outputTokens, r.cacheReadTokens])).toEqual([
        ['anthropic-messages', 125, 30, 20],
        ['openai-responses', 50, 5, 10],
        ['openai-chat', 40, 2, null],
      ]);
      // (100 + 5) × $3 + 20 × $0.30 + 30 × $15, per million.
      expect(reqs[0]!.costUsd).toBeCloseTo((105 * 3 + 20 * 0.3 + 30 * 15) / 1e6, 12);
      expect(reqs[1]!.costUsd).toBeNull();
      expect(proxy.spent()).toMatchObject({ requests: 3, tokens: 252, unpricedRequests: 2 });
      expect(seen).toEqual([155, 55, 42]);
    } finally {
      await proxy.close();
    }
  });

  it('refuses the request after the one that spent the budget, in the vendor shape, without forwarding it', async () => {
    const refused: unknown[] = [];
    const proxy = await startMeteringProxy({ upstreams: [`${base}/v1`], budget: { tokens: 20 }, onRefused: (r) => refused.push(r) });
    try {
      const u = proxy.urlFor(0);
      expect(u).toMatch(/\/u0\/v1$/);
      const before = hits.length;
      const a = await post(`${u}/messages`, { model: 'm' });
      expect(a.status).toBe(200);
      expect(await a.json()).toMatchObject({ usage: { input_tokens: 10 } });
      expect(proxy.spent().tokens).toBe(14);
      // 14 < 20: this one goes through and crosses the limit (the one request past it).
      expect((await post(`${u}/messages`, { model: 'm' })).status).toBe(200);
      const c = await post(`${u}/messages`, { model: 'm' });
      expect(c.status).toBe(402);
      expect(await c.json()).toEqual({ type: 'error', error: { type: 'billing_error', message: expect.stringContaining('Polly budget reached') } });
      const d = await post(`${u}/chat/completions`, { model: 'm' });
      expect(d.status).toBe(429);
      expect(await d.json()).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
      expect(hits.length - before, 'the refused requests never reached the model').toBe(2);
      expect(refused).toEqual([expect.objectContaining({ kind: 'tokens', limit: 20, spent: 28 }), expect.objectContaining({ api: 'openai-chat' })]);
    } finally {
      await proxy.close();
    }
  });
});
