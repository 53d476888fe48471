// useMockllm from mockllm/vitest: the SDK environment set for the file, per-test conversation keys, and
// each test starting from the file's scenarios with nothing remembered.
import OpenAI from "openai";
import { expect, test } from "vitest";
import { useMockllm } from "mockllm/vitest";

const mock = useMockllm({ scenarios: ["test/fixtures/weather.mockllm"], setEnv: true });

test("the SDKs find the server through the environment", async () => {
  expect(process.env["OPENAI_BASE_URL"]).toBe(mock.openaiBaseUrl);
  const client = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
  const reply = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "the weather in Bern" }],
  });
  expect(reply.choices[0]?.message.content).toBe("Sunny.");
});

test("a fresh journal, own keys", async () => {
  expect(await mock.requests()).toEqual([]);
  const header = mock.conversationHeader("second chat");
  expect(header).toEqual({ "x-mockllm-conversation": "a fresh journal, own keys::second chat" });
  const client = new OpenAI({ baseURL: mock.openaiBaseUrl, apiKey: "test", defaultHeaders: header });
  await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "weather in Bern?" }] });
  const [entry] = await mock.requests();
  expect(entry?.conversation).toBe(header["x-mockllm-conversation"]);
});
