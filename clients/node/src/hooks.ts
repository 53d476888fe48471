/**
 * What `useMockllm` does in any test runner with Jest-style hooks (Vitest, Jest): one server per test
 * file, started before its tests and stopped after them; before each test, back to the file's scenarios
 * with every conversation and the journal forgotten; after each, the test fails on a request no step
 * matched (unless `strict: false`).
 */

import { Mockllm, MockllmError, type StartOptions } from "./index.js";

export interface UseOptions extends StartOptions {
  /** Fail a test that sent a request no step matched (default true; `mock.strict = false` in one test). */
  strict?: boolean;
  /** Fail a test that loaded a step it never used (default false). */
  requireAllUsed?: boolean;
  /** Set the SDKs' environment variables (`OPENAI_BASE_URL` …, see `sdkEnv()`) for the file's tests. */
  setEnv?: boolean;
  /** How long starting the server may take, for the runner's hook timeout (default 60 s). */
  hookTimeoutMs?: number;
}

type Hook = (fn: () => Promise<void>, timeout?: number) => void;

export interface Hooks {
  beforeAll: Hook;
  afterAll: Hook;
  beforeEach: Hook;
  afterEach: Hook;
  /** The current test's name and file (`expect.getState()`). */
  state: () => { currentTestName?: string | undefined; testPath?: string | undefined };
}

export function install(hooks: Hooks, options: UseOptions): Mockllm {
  const mock = new Mockllm(options);
  const timeout = options.hookTimeoutMs ?? 60_000;
  const saved = new Map<string, string | undefined>();
  mock.testName = () => hooks.state().currentTestName ?? "";
  mock.testPath = () => hooks.state().testPath;
  hooks.beforeAll(async () => {
    await mock.start();
    if (options.setEnv) {
      const env = mock.sdkEnv();
      for (const [name, value] of Object.entries(env)) {
        saved.set(name, process.env[name]);
        const isUrl = value.startsWith("http");
        if (isUrl || !process.env[name]) process.env[name] = value;
      }
    }
  }, timeout);
  hooks.afterAll(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await mock.stop();
  }, timeout);
  hooks.beforeEach(async () => {
    mock.strict = options.strict ?? true;
    mock.requireAllUsed = options.requireAllUsed ?? false;
    await mock.restore();
  }, timeout);
  hooks.afterEach(async () => {
    let problems: string;
    try {
      problems = await mock.problems();
    } catch (error) {
      problems = `mockllm: could not verify the requests of this test: ${(error as Error).message}`;
    }
    if (problems) throw new MockllmError(problems);
  }, timeout);
  return mock;
}
