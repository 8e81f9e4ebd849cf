// Run by server/node_test.go: the official openai npm package and the AI
// SDK's default OpenAI provider (which speaks /v1/responses) against a
// running Deltafin server. Prints one JSON object with what they saw.
import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const text = (r) => r.output.flatMap((it) => (it.content ?? []).map((c) => c.text)).join('');
const out = {};

const first = await client.responses.create({ model, temperature: 0, input: 'Hello there', max_output_tokens: 10 });
out.create = { id: first.id, status: first.status, text: text(first), output_text: first.output_text, types: first.output.map((it) => it.type), usage: first.usage };

const stream = await client.responses.create({ model, temperature: 0, input: 'Hello there', max_output_tokens: 10, stream: true });
const s = { types: [], deltas: '', last: null };
for await (const ev of stream) {
  s.types.push(ev.type);
  if (ev.type === 'response.output_text.delta' || ev.type === 'response.reasoning_text.delta') s.deltas += ev.delta;
  if (ev.response) s.last = ev.response.status;
}
out.stream = s;

const got = await client.responses.retrieve(first.id);
out.retrieve = { id: got.id, text: text(got) };

const next = await client.responses.create({ model, temperature: 0, input: [{ role: 'user', content: [{ type: 'input_text', text: 'And then?' }] }], max_output_tokens: 6, previous_response_id: first.id });
out.next = { text: text(next), previous: next.previous_response_id, input_tokens: next.usage.input_tokens };
const items = await client.responses.inputItems.list(next.id);
out.items = items.data.map((it) => ({ role: it.role, text: it.content[0].text }));

let bg = await client.responses.create({ model, temperature: 0, input: 'Hello there', max_output_tokens: 10, background: true });
out.background = { first: bg.status };
while (bg.status === 'queued' || bg.status === 'in_progress') bg = await client.responses.retrieve(bg.id);
out.background.status = bg.status;
out.background.text = text(bg);

const long = await client.responses.create({ model, temperature: 0, input: 'Tell me everything', max_output_tokens: 1000000, background: true });
const cancelled = await client.responses.cancel(long.id);
out.cancel = cancelled.status;

await client.responses.delete(first.id);
try {
  await client.responses.retrieve(first.id);
  out.deleted = null;
} catch (e) {
  out.deleted = e.status;
}

const provider = createOpenAI({ baseURL, apiKey: 'unused' });
const gen = await generateText({ model: provider(model), prompt: 'Hello there', maxOutputTokens: 10, temperature: 0, maxRetries: 0 });
out.aiGenerate = { text: gen.text, reasoning: gen.reasoningText ?? '', finish: gen.finishReason, input: gen.usage.inputTokens, output: gen.usage.outputTokens };
const st = streamText({ model: provider(model), prompt: 'Hello there', maxOutputTokens: 10, temperature: 0, maxRetries: 0, onError: ({ error }) => { throw error; } });
let streamed = '';
for await (const part of st.fullStream) {
  if (part.type === 'text-delta') streamed += part.text;
  if (part.type === 'error') throw part.error;
}
out.aiStream = { text: streamed, finish: await st.finishReason };

console.log(JSON.stringify(out));
