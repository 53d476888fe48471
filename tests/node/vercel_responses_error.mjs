// The Vercel AI SDK on the OpenAI Responses API: a scripted mid-stream error arrives as an error.
import { streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const [baseURL] = process.argv.slice(2);
const openai = createOpenAI({ baseURL, apiKey: 'test' });
const errors = [];
let text = '';
const result = streamText({ model: openai.responses('gpt-4.1'), prompt: 'break it', maxRetries: 0, onError: ({ error }) => errors.push(error) });
try {
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') text += part.text ?? part.delta ?? '';
    if (part.type === 'error') errors.push(part.error);
  }
} catch (error) {
  errors.push(error);
}
const messages = errors.map((e) => String(e?.message ?? JSON.stringify(e)));
console.log(JSON.stringify({ text, errors: messages }));
