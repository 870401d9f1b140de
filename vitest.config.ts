import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real processes and real git: keep parallelism to the machine's two cores.
    maxWorkers: 2,
  },
});
