/**
 * The host side of a confined process's network: unix-socket listeners that Polly opens OUTSIDE
 * the sandbox, in a directory bound into it, one per allowed endpoint.
 *
 * A sandbox has its own network namespace with only loopback, so a model server on the host's
 * `127.0.0.1:PORT` is unreachable from inside. A filesystem unix socket is not scoped to a network
 * namespace: the sandbox's init ({@link import('./sandbox-init.js')}) listens on the same
 * `127.0.0.1:PORT` inside and pipes every connection to `<dir>/ep-<port>.sock`, and this module pipes
 * that to the real `host:port`. Nothing else is reachable.
 *
 * Endpoints that are not on loopback (a hosted model API) go through one HTTP proxy on
 * `<dir>/proxy.sock` that accepts only `CONNECT host:port` (and plain-HTTP requests) to the
 * allowlisted endpoints and answers 403 to anything else; inside, it is `http://127.0.0.1:<port>`
 * in `HTTPS_PROXY`/`HTTP_PROXY`, with `NO_PROXY` naming loopback so the bridged loopback endpoints
 * stay direct. CONNECT semantics: RFC 9110 §9.3.6.
 *
 * The listeners bind synchronously (Node binds a unix-socket server within `listen()`), so a
 * caller may spawn the sandbox right after {@link openNetBridge} returns.
 */
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { isLoopbackHost, type SandboxEndpoint } from './sandbox-spec.js';

/** One listener the sandbox's init opens inside: `host:port` → the unix socket `socket`. */
export interface InsideListener {
  host: string;
  port: number;
  socket: string;
}

export interface NetBridge {
  /** What the init inside must listen on. */
  inside: InsideListener[];
  /** Proxy variables for the confined process (empty when every endpoint is on loopback). */
  env: Record<string, string>;
  /** Stop every listener and drop open connections (idempotent). */
  close(): void;
}

function pipeBoth(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = (): void => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end);
  b.on('error', end);
  a.on('close', end);
  b.on('close', end);
}

/** The first port ≥ 3128 that no loopback endpoint uses (where the proxy listens inside). */
function proxyPort(taken: Set<number>): number {
  let p = 3128;
  while (taken.has(p)) p++;
  return p;
}

/**
 * Open the host side for `endpoints` in directory `dir` (which the caller binds into the sandbox).
 * Never throws for an unreachable endpoint: a failed upstream connection closes the client's.
 */
export function openNetBridge(endpoints: readonly SandboxEndpoint[], dir: string): NetBridge {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const inside: InsideListener[] = [];
  const loopback = endpoints.filter((e) => isLoopbackHost(e.host));
  const remote = endpoints.filter((e) => !isLoopbackHost(e.host));
  const seen = new Set<number>();
  for (const e of loopback) {
    if (seen.has(e.port)) continue;
    seen.add(e.port);
    const socket = join(dir, `ep-${e.port}.sock`);
    const target = e.host === 'localhost' ? '127.0.0.1' : e.host;
    const server = createServer((client) => {
      track(client);
      const upstream = connect({ host: target, port: e.port });
      track(upstream);
      pipeBoth(client, upstream);
    });
    server.listen(socket);
    servers.push(server);
    inside.push({ host: '127.0.0.1', port: e.port, socket });
    inside.push({ host: '::1', port: e.port, socket });
  }
  const env: Record<string, string> = {};
  if (remote.length > 0) {
    const allowed = new Set(remote.map((e) => `${e.host.toLowerCase()}:${e.port}`));
    const socket = join(dir, 'proxy.sock');
    const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        res.writeHead(400).end('polly sandbox proxy: absolute http:// URL expected\n');
        return;
      }
      const port = url.port ? Number(url.port) : 80;
      if (url.protocol !== 'http:' || !allowed.has(`${url.hostname.toLowerCase()}:${port}`)) {
        res.writeHead(403).end(`polly sandbox proxy: ${url.host} is not a model endpoint allowed by .polly/config.yaml\n`);
        return;
      }
      const upstream = httpRequest({ host: url.hostname, port, method: req.method, path: `${url.pathname}${url.search}`, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      track(client);
      const [host = '', portText = ''] = (req.url ?? '').split(/:(?=\d+$)/);
      const port = Number(portText);
      if (!allowed.has(`${host.replace(/^\[|\]$/g, '').toLowerCase()}:${port}`)) {
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\npolly sandbox proxy: ${req.url} is not a model endpoint allowed by .polly/config.yaml\n`);
        return;
      }
      const upstream = connect({ host: host.replace(/^\[|\]$/g, ''), port }, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        pipeBoth(client, upstream);
      });
      track(upstream);
      upstream.on('error', () => client.destroy());
    });
    server.listen(socket);
    servers.push(server);
    const port = proxyPort(seen);
    inside.push({ host: '127.0.0.1', port, socket });
    const proxy = `http://127.0.0.1:${port}`;
    Object.assign(env, { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, NO_PROXY: 'localhost,127.0.0.1,::1', no_proxy: 'localhost,127.0.0.1,::1' });
  }
  let closed = false;
  return {
    inside,
    env,
    close() {
      if (closed) return;
      closed = true;
      for (const s of servers) s.close();
      for (const s of sockets) s.destroy();
    },
  };
}
