// startMockllm on its own: every provider's base URL, the SDK environment, load errors, and the messages
// for a missing Python or mockllm and for a server that dies.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Mockllm, MockllmError, PROVIDER_PATHS, startMockllm } from "mockllm";

const GREETING = `scenario "Greeting":
    step hello:
        always
        reply:
            text "Hello from mockllm."
`;

describe("a started server", () => {
  let mock: Mockllm;
  beforeAll(async () => {
    mock = await startMockllm({ scenarios: GREETING });
  });
  afterAll(async () => {
    await mock.stop();
    expect(mock.alive).toBe(false);
  });

  test("gives every provider's base URL and the SDK environment, and answers the Anthropic SDK", async () => {
    {
      expect(mock.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const handles = {
        openai: mock.openaiBaseUrl,
        anthropic: mock.anthropicBaseUrl,
        gemini: mock.geminiBaseUrl,
        ollama: mock.ollamaHost,
        cohere: mock.cohereBaseUrl,
        mistral: mock.mistralBaseUrl,
        azure: mock.azureEndpoint,
        vertex: mock.vertexBaseUrl,
        bedrock: mock.bedrockEndpointUrl,
      };
      for (const [provider, url] of Object.entries(handles)) {
        expect(url).toBe(mock.url + PROVIDER_PATHS[provider as keyof typeof PROVIDER_PATHS]);
        expect(mock.baseUrl(provider as keyof typeof PROVIDER_PATHS)).toBe(url);
      }
      expect(mock.openaiBaseUrl).toBe(mock.url + "/v1");
      expect(mock.sdkEnv()["OPENAI_BASE_URL"]).toBe(mock.url + "/v1");
      const client = new Anthropic({ baseURL: mock.anthropicBaseUrl, apiKey: "test" });
      const stream = client.messages.stream({
        model: "claude-x",
        max_tokens: 50,
        messages: [{ role: "user", content: "hi" }],
      });
      const message = await stream.finalMessage();
      expect(message.content[0]).toMatchObject({ type: "text", text: "Hello from mockllm." });
      const [entry] = await mock.requests();
      expect(entry).toMatchObject({ provider: "anthropic", stream: true, matched: { scenario: "Greeting" } });
      expect((await mock.verify()).ok).toBe(true);
      expect(await mock.conversations()).toHaveLength(1);
      await mock.reset();
      expect(await mock.requests()).toEqual([]);
    }
  });

  test("a script with errors is reported with its file, line and column", async () => {
    {
      const error = await mock.load("test/fixtures/broken.mockllm").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MockllmError);
      const text = (error as Error).message;
      expect(text).toContain("test/fixtures/broken.mockllm has errors");
      expect(text).toContain("--> test/fixtures/broken.mockllm:5:13");
      expect(text).toContain("^^^");
    }
  });

  test("restore() drops what was loaded since the start", async () => {
    await mock.load('scenario "Extra":\n    step extra:\n        always\n        reply:\n            text "extra"\n');
    expect((await mock.health())["scenarios"]).toBe(2);
    await mock.restore();
    expect((await mock.health())["scenarios"]).toBe(1);
  });
});

describe("what goes wrong", () => {
  test("no mockllm and no Python on PATH is one message saying what to install", async () => {
    const path = process.env["PATH"];
    const bin = process.env["MOCKLLM_BIN"];
    process.env["PATH"] = "/nonexistent";
    delete process.env["MOCKLLM_BIN"];
    try {
      await expect(startMockllm()).rejects.toThrow(
        "mockllm: cannot start the mock server: neither the `mockllm` command nor Python is on PATH; install it with `pip install mockllm`",
      );
    } finally {
      process.env["PATH"] = path;
      if (bin !== undefined) process.env["MOCKLLM_BIN"] = bin;
    }
  });

  test("a command that is not there", async () => {
    await expect(startMockllm({ bin: "/nonexistent/mockllm" })).rejects.toThrow(
      "mockllm: cannot start the mock server: `/nonexistent/mockllm` was not found; install it with `pip install mockllm`",
    );
  });

  test("a Python without the mockllm package", async () => {
    // -S: without site-packages, so the package is not importable
    await expect(startMockllm({ bin: ["python3", "-S", "-m", "mockllm"] })).rejects.toThrow(
      "has no mockllm package; install it with `pip install mockllm`",
    );
  });

  test("a server that exits before listening is reported with its output", async () => {
    await expect(startMockllm({ args: ["--no-such-option"] })).rejects.toThrow(
      /exited with code 2 before it was listening; its output:\n[^]*unrecognized arguments: --no-such-option/,
    );
  });

  test("a server that dies during the tests is reported with its output", async () => {
    const mock = await startMockllm();
    const pid = (await mock.health())["pid"] as number;
    process.kill(pid, "SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 200));
    await expect(mock.reset()).rejects.toThrow(/^mockllm: the mock server was killed \(SIGKILL\); its output:\n/);
    await mock.stop();
  });
});
