// The Node SDK's toolRunner with its default settings against mockllm: a two-tool loop to the end.
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';

const [baseURL, stream] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: 'test', maxRetries: 0 });
const city = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const getWeather = betaTool({ name: 'get_weather', description: 'The weather in a city.', inputSchema: city, run: ({ city }) => `sunny in ${city}` });
const getTime = betaTool({ name: 'get_time', description: 'The local time in a city.', inputSchema: city, run: ({ city }) => `noon in ${city}` });
const runner = client.beta.messages.toolRunner({
  model: 'claude-test',
  max_tokens: 200,
  tools: [getWeather, getTime],
  messages: [{ role: 'user', content: 'What is the weather in Rome, and the time?' }],
  stream: stream === 'stream',
});
const final = await runner.runUntilDone();
const text = final.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
console.log(JSON.stringify({ stop_reason: final.stop_reason, text }));
