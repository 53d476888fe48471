/**
 * `useMockllm` for Jest (`const { useMockllm } = require("mockllm/jest")`): a mockllm server for the
 * test file, reset before each test, each test failing on requests no step matched. Uses the hooks Jest
 * puts in the test file's globals.
 */

import { install, type Hooks, type UseOptions } from "./hooks.js";
import { MockllmError, type Mockllm } from "./index.js";

export type { UseOptions } from "./hooks.js";
export * from "./index.js";

interface JestGlobals extends Omit<Hooks, "state"> {
  expect: { getState: ReturnType<Hooks["state"]> extends infer S ? () => S : never };
}

/** Call at the top of a test file (or a `describe`): the handle is live inside its tests. */
export function useMockllm(options: UseOptions = {}): Mockllm {
  const g = globalThis as unknown as Partial<JestGlobals>;
  if (!g.beforeAll || !g.afterAll || !g.beforeEach || !g.afterEach || !g.expect) {
    throw new MockllmError("mockllm/jest: useMockllm() is called in a Jest test file, where Jest's hooks are globals");
  }
  const expect = g.expect;
  return install(
    { beforeAll: g.beforeAll, afterAll: g.afterAll, beforeEach: g.beforeEach, afterEach: g.afterEach, state: () => expect.getState() },
    options,
  );
}
