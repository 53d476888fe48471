/**
 * `useMockllm` for Vitest (`import { useMockllm } from "mockllm/vitest"`): a mockllm server for the test
 * file, reset before each test, each test failing on requests no step matched.
 */

import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";

import { install, type UseOptions } from "./hooks.js";
import type { Mockllm } from "./index.js";

export type { UseOptions } from "./hooks.js";
export * from "./index.js";

/** Call at the top of a test file (or a `describe`): the handle is live inside its tests. */
export function useMockllm(options: UseOptions = {}): Mockllm {
  return install({ beforeAll, afterAll, beforeEach, afterEach, state: () => expect.getState() }, options);
}
