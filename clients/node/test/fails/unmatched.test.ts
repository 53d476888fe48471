// Run on its own by tests/test_node_package.py: this file must FAIL (a request no step matched), with
// the no-match report in the output; its second test opts out and passes.
import OpenAI from "openai";
import { expect, test } from "vitest";
import { useMockllm } from "mockllm/vitest";

const mock = useMockllm({ scenarios: "test/fixtures/weather.mockllm" });

async function ask(content: string): Promise<unknown> {
  const client = new OpenAI({ baseURL: mock.openaiBaseUrl, apiKey: "test", maxRetries: 0 });
  return client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content }] }).catch((e: unknown) => e);
}

test("sends an unscripted question", async () => {
  expect(await ask("an unscripted question")).toBeInstanceOf(OpenAI.NotFoundError);
});

test("opts out of strict", async () => {
  mock.strict = false;
  expect(await ask("another unscripted question")).toBeInstanceOf(OpenAI.NotFoundError);
});
