// Run by server/node_test.go: the official openai npm package against a
// running Deltafin server. Prints one JSON object with what the client saw.
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const messages = [{ role: 'user', content: 'Hello from node' }];
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
out.chat = {
  object: chat.object,
  content: chat.choices[0].message.content,
  reasoning: chat.choices[0].message.reasoning_content,
  finish: chat.choices[0].finish_reason,
  usage: chat.usage,
};

const stream = await client.chat.completions.create({
  model,
  messages,
  max_tokens: 8,
  temperature: 0,
  stream: true,
  stream_options: { include_usage: true },
});
const s = { chunks: 0, role: null, content: '', reasoning: '', finish: null, usage: null, order: '' };
for await (const chunk of stream) {
  s.chunks++;
  if (chunk.usage) s.usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) s.role = c.delta.role;
    if (c.delta.reasoning_content) { s.reasoning += c.delta.reasoning_content; s.order += 'r'; }
    if (c.delta.content) { s.content += c.delta.content; s.order += 'c'; }
    if (c.finish_reason) s.finish = c.finish_reason;
  }
}
out.stream = s;

try {
  await client.chat.completions.create({ model, messages, n: 2 });
  out.error = null;
} catch (e) {
  out.error = { status: e.status, param: e.param, code: e.code, type: e.type };
}

console.log(JSON.stringify(out));
