// Run on its own by tests/test_node_package.py: with requireAllUsed, a test that loaded a step and never
// used it FAILS with the step named.
import OpenAI from "openai";
import { test } from "vitest";
import { useMockllm } from "mockllm/vitest";

const mock = useMockllm({ requireAllUsed: true });

test("loads two steps and uses one", async () => {
  await mock.load(`scenario "Two":
    step first:
        when:
            last user message contains "first"
        reply:
            text "1"
    step second:
        when:
            last user message contains "second"
        reply:
            text "2"
`);
  const client = new OpenAI({ baseURL: mock.openaiBaseUrl, apiKey: "test" });
  await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "first" }] });
});
