// Run by server/node_responses_tools_test.go: the official openai npm
// package with function tools on /v1/responses. Prints one JSON object.
//
// node responses_tools.mjs PRIMED_BASE_URL TINY_BASE_URL MODEL
//   primed: a server whose model writes two get_weather calls: created,
//           streamed, then the results sent back by previous_response_id
//           and as the whole conversation (the output items fed back).
//   tiny:   a forced get_weather on what k3-tiny writes itself.
import OpenAI from 'openai';

const [primedURL, tinyURL, model] = process.argv.slice(2);
const opts = { apiKey: 'unused', maxRetries: 0, timeout: 120_000 };
const client = new OpenAI({ baseURL: primedURL, ...opts });
const tools = [{
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
}];
const calls = (r) => r.output.filter((it) => it.type === 'function_call');
const out = {};

const input = [{ role: 'user', content: 'Weather in Paris?' }];
const r = await client.responses.create({ model, temperature: 0, input, tools, max_output_tokens: 256 });
out.create = { status: r.status, types: r.output.map((it) => it.type), calls: calls(r) };

const stream = await client.responses.create({ model, temperature: 0, input, tools, max_output_tokens: 256, stream: true });
const s = { deltas: {}, done: [], added: [], last: null };
for await (const ev of stream) {
  if (ev.type === 'response.output_item.added' && ev.item.type === 'function_call') s.added.push(ev.item);
  if (ev.type === 'response.function_call_arguments.delta') s.deltas[ev.item_id] = (s.deltas[ev.item_id] ?? '') + ev.delta;
  if (ev.type === 'response.function_call_arguments.done') s.done.push({ item_id: ev.item_id, name: ev.name, arguments: ev.arguments });
  if (ev.type === 'response.completed') s.last = calls(ev.response);
}
out.stream = s;

const results = calls(r).map((c, i) => ({ type: 'function_call_output', call_id: c.call_id, output: ['sunny', 'rain'][i] }));
const next = await client.responses.create({ model, temperature: 0, input: results, tools, max_output_tokens: 256, previous_response_id: r.id });
out.next = { status: next.status, input_tokens: next.usage.input_tokens };

// The manual loop of OpenAI's guide: the output items go back as input,
// then the results.
const loop = await client.responses.create({ model, temperature: 0, input: [...input, ...r.output, ...results], tools, max_output_tokens: 256 });
out.loop = { status: loop.status, input_tokens: loop.usage.input_tokens };

const tiny = new OpenAI({ baseURL: tinyURL, ...opts });
const f = await tiny.responses.create({
  model, temperature: 0, input: 'Weather in Lyon?', tools, max_output_tokens: 24,
  tool_choice: { type: 'function', name: 'get_weather' },
});
out.tiny = {
  status: f.status,
  incomplete: f.incomplete_details?.reason ?? null,
  output_error: f.output_error ?? null,
  calls: calls(f).map((c) => ({ status: c.status, name: c.name, arguments: c.arguments })),
  text: f.output_text,
  input_tokens: f.usage.input_tokens,
};

console.log(JSON.stringify(out));
