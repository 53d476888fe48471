// The package's own Vitest tests (test/*.test.ts) import it by its published name, from the build in dist/.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const dist = (file) => fileURLToPath(new URL(`./dist/esm/${file}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^mockllm\/vitest$/, replacement: dist("vitest.js") },
      { find: /^mockllm$/, replacement: dist("index.js") },
    ],
  },
  test: {
    // test/fails/ holds files that must fail: tests/test_node_package.py runs them alone (MOCKLLM_FAILS=1)
    include: process.env.MOCKLLM_FAILS ? ["test/fails/*.test.ts"] : ["test/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
