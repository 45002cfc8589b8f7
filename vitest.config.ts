import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Vitest's default on a 2-core machine is one worker (cores − 1), so every file ran alone. The integration and
    // e2e files mostly wait on PostgreSQL, Redis and the processes they start: two at a time keep both cores busy.
    // (Three loaded this machine enough to slow a browser test past its waits.) The distributed project keeps one
    // file at a time (fileParallelism: false below). AGENTLOOM_TEST_WORKERS overrides the count.
    maxWorkers: Number(process.env.AGENTLOOM_TEST_WORKERS ?? 2),
    projects: [
      {
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], environment: 'node' },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/services/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/e2e/distributed/**'],
          globalSetup: ['test/support/services/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // Real worker processes killed, stopped and cut off from their services: each file loads the machine
          // on its own, so files run one at a time.
          name: 'distributed',
          include: ['test/e2e/distributed/**/*.test.ts'],
          globalSetup: ['test/support/services/global-setup.ts'],
          fileParallelism: false,
          // After the other projects, not beside them: their timing claims need the machine to themselves.
          sequence: { groupOrder: 1 },
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
