/**
 * One free TCP port per worker (case 9 in test/workers/git/orchestration-git.test.ts: two worktrees starting the same dev server
 * must not collide). A port is handed out only after binding it succeeded on 0.0.0.0 and, where the
 * machine has IPv6, on `::` — then released at once for the worker's server to take. Ports handed
 * out by this allocator are remembered until released, so two workers of one Brain never share one
 * even before either server is listening.
 */
import { createServer } from 'node:net';
import { PollyError } from '../brain/core/errors.js';

export interface PortAllocator {
  /**
   * A free port for `key` (a task id). The search starts at a point derived from `key` so a task
   * tends to get the same port again, and probes upwards (wrapping) through the range.
   * @throws PollyError `conflict` when no port in the range is free.
   */
  allocate(key: string): Promise<number>;
  /** Forget a port handed out earlier (the worker is gone). Unknown ports are ignored. */
  release(port: number): void;
  /** Mark a port as taken (e.g. a worker that survived a Brain restart). */
  reserve(port: number): void;
  /** Ports currently handed out. */
  reserved(): number[];
}

export interface PortAllocatorOptions {
  /** Lowest port (inclusive). Default 4100. */
  min?: number;
  /** Highest port (inclusive). Default 4999. */
  max?: number;
  /** The free check; default {@link isPortFree}. */
  isFree?: (port: number) => Promise<boolean>;
}

/** True when `port` can be bound right now on `host`. EADDRNOTAVAIL/EAFNOSUPPORT (no such family) count as free. */
function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code === 'EADDRNOTAVAIL' || error.code === 'EAFNOSUPPORT');
    });
    server.listen({ port, host, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** True when nothing listens on `port` (checked by binding 0.0.0.0 and `::`). */
export async function isPortFree(port: number): Promise<boolean> {
  return (await canBind(port, '0.0.0.0')) && (await canBind(port, '::'));
}

/** Create an allocator over [min, max]. */
export function createPortAllocator(options: PortAllocatorOptions = {}): PortAllocator {
  const min = options.min ?? 4100;
  const max = options.max ?? 4999;
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max > 65535 || min > max) {
    throw new PollyError('bad_input', `port range ${min}-${max} is not valid; use integers with 1 ≤ min ≤ max ≤ 65535`);
  }
  const isFree = options.isFree ?? isPortFree;
  const taken = new Set<number>();
  const size = max - min + 1;

  return {
    async allocate(key) {
      const start = hash(key) % size;
      for (let i = 0; i < size; i++) {
        const port = min + ((start + i) % size);
        if (taken.has(port)) continue;
        taken.add(port); // claim before the async check so concurrent allocations skip it
        if (await isFree(port)) return port;
        taken.delete(port);
      }
      throw new PollyError('conflict', `no free TCP port in ${min}-${max} for ${key}; stop some dev servers or widen the range`);
    },
    release: (port) => void taken.delete(port),
    reserve: (port) => void taken.add(port),
    reserved: () => [...taken].sort((a, b) => a - b),
  };
}

/** FNV-1a, 32 bit. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
