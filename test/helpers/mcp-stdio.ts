/**
 * Spawn `node dist/brain/cli.js mcp …` as a real stdio MCP server and connect the SDK's Client to
 * it (StdioClientTransport). Collects the server's stderr; `kill()` sends a signal to the process.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const CLI = join(process.cwd(), 'dist/brain/cli.js');

export interface McpProcess {
  client: Client;
  transport: StdioClientTransport;
  /** stderr so far. */
  stderr(): string;
  /** Call a tool; returns its structuredContent (throws on a protocol error). */
  call(name: string, args?: Record<string, unknown>): Promise<{ structured: Record<string, any>; isError: boolean; text: string }>;
  close(): Promise<void>;
}

/** Start `polly mcp` with `args`, connected (initialize done). `env` is added to a copy of process.env. */
export async function startMcp(args: string[], env: Record<string, string> = {}, cwd = process.cwd()): Promise<McpProcess> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -p . && node scripts/post-build.mjs)`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    cwd,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const client = new Client({ name: 'polly-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => err,
    async call(name, a = {}) {
      const r = (await client.callTool({ name, arguments: a })) as {
        structuredContent?: Record<string, unknown>;
        isError?: boolean;
        content: Array<{ type: string; text?: string }>;
      };
      return { structured: (r.structuredContent ?? {}) as Record<string, any>, isError: r.isError === true, text: r.content.map((c) => c.text ?? '').join('\n') };
    },
    close: () => client.close(),
  };
}
