// Run by server/node_anthropic_test.go: Anthropic's official SDK
// (@anthropic-ai/sdk), the AI SDK's Anthropic provider (@ai-sdk/anthropic)
// and LangChain's ChatAnthropic (@langchain/anthropic) against a running
// Deltafin server's Messages API. Prints one JSON object.
//
// node anthropic.mjs BASE_URL MODEL API_KEY USER_TEXT TOOL_TEXT
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatAnthropic } from '@langchain/anthropic';
import { tool as lcTool } from '@langchain/core/tools';
import { generateText, streamText, tool, jsonSchema } from 'ai';

const [baseURL, model, apiKey, userText, toolText] = process.argv.slice(2);
const system = 'You are terse.';

const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city'],
  },
};

const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });

function blocks(content) {
  return content.map((b) => ({ type: b.type, text: b.text ?? b.thinking ?? null, signature: b.signature ?? null, name: b.name ?? null, input: b.input ?? null, id: b.id ?? null }));
}

async function sdkCreate() {
  const m = await client.messages.create({ model, max_tokens: 8, temperature: 0, system, messages: [{ role: 'user', content: userText }] });
  return { id: m.id, type: m.type, role: m.role, model: m.model, content: blocks(m.content), stop_reason: m.stop_reason, usage: m.usage };
}

async function sdkStream() {
  const events = [];
  const s = client.messages.stream({ model, max_tokens: 8, temperature: 0, system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: userText }] });
  s.on('streamEvent', (e) => events.push(e.type + (e.delta?.type ? ':' + e.delta.type : '')));
  const m = await s.finalMessage();
  return { events, content: blocks(m.content), stop_reason: m.stop_reason, usage: m.usage };
}

async function sdkTool(stream) {
  const req = { model, max_tokens: 64, temperature: 0, tools: [weather], tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: toolText }] };
  const events = [];
  let m;
  if (stream) {
    const s = client.messages.stream(req);
    s.on('streamEvent', (e) => events.push(e.type + (e.delta?.type ? ':' + e.delta.type : '')));
    m = await s.finalMessage();
  } else {
    m = await client.messages.create(req);
  }
  // The next turn: the call and its result sent back, thinking off.
  const use = m.content.find((b) => b.type === 'tool_use');
  const next = await client.messages.create({
    model, max_tokens: 8, temperature: 0, tools: [weather], thinking: { type: 'disabled' },
    messages: [
      { role: 'user', content: toolText },
      { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21C' }] },
    ],
  });
  return { events, content: blocks(m.content), stop_reason: m.stop_reason, next: { content: blocks(next.content), stop_reason: next.stop_reason, usage: next.usage } };
}

async function sdkErrors() {
  const out = {};
  for (const [name, c, req] of [
    ['top_k', client, { model, max_tokens: 8, top_k: -1, messages: [{ role: 'user', content: 'hi' }] }],
    ['auth', new Anthropic({ baseURL, apiKey: 'wrong', maxRetries: 0 }), { model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }],
    ['image', client, { model, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }],
  ]) {
    try {
      await c.messages.create(req);
      out[name] = { status: 200 };
    } catch (e) {
      out[name] = { status: e.status, type: e.error?.error?.type ?? null, message: e.error?.error?.message ?? String(e) };
    }
  }
  return out;
}

async function countTokens() {
  const r = await client.messages.countTokens({ model, system, messages: [{ role: 'user', content: userText }] });
  return r.input_tokens;
}

async function aisdk(stream) {
  const provider = createAnthropic({ baseURL: baseURL + '/v1', apiKey });
  const opts = { model: provider(model), system, prompt: userText, maxOutputTokens: 8, temperature: 0, maxRetries: 0 };
  if (stream) {
    const r = streamText(opts);
    let text = '';
    for await (const part of r.textStream) text += part;
    return { text, reasoning: (await r.reasoningText) ?? '', finish: await r.finishReason, usage: await r.usage };
  }
  const r = await generateText(opts);
  return { text: r.text, reasoning: r.reasoningText ?? '', finish: r.finishReason, usage: r.usage };
}

async function aisdkTool() {
  const provider = createAnthropic({ baseURL: baseURL + '/v1', apiKey });
  const executed = [];
  const r = await generateText({
    model: provider(model), prompt: toolText, maxOutputTokens: 64, temperature: 0, maxRetries: 0,
    tools: { get_weather: tool({ description: weather.description, inputSchema: jsonSchema(weather.input_schema), execute: async (input) => { executed.push(input); return 'sunny, 21C'; } }) },
    toolChoice: { type: 'tool', toolName: 'get_weather' },
  });
  return { executed, finish: r.steps[0]?.finishReason ?? null };
}

async function langchain(stream) {
  const llm = new ChatAnthropic({ model, apiKey, anthropicApiUrl: baseURL, maxTokens: 8, temperature: 0, maxRetries: 0 });
  let msg;
  if (stream) {
    for await (const chunk of await llm.stream([['system', system], ['human', userText]])) msg = msg ? msg.concat(chunk) : chunk;
  } else {
    msg = await llm.invoke([['system', system], ['human', userText]]);
  }
  const parts = typeof msg.content === 'string' ? [{ type: 'text', text: msg.content }] : msg.content;
  return {
    text: parts.filter((p) => p.type === 'text' || p.type === 'text_delta').map((p) => p.text).join(''),
    thinking: parts.filter((p) => p.type === 'thinking').map((p) => p.thinking).join(''),
    usage: msg.usage_metadata ? { input: msg.usage_metadata.input_tokens, output: msg.usage_metadata.output_tokens } : null,
  };
}

async function langchainTool() {
  const llm = new ChatAnthropic({ model, apiKey, anthropicApiUrl: baseURL, maxTokens: 64, temperature: 0, maxRetries: 0 });
  const t = lcTool(async ({ city }) => `sunny in ${city}`, { name: weather.name, description: weather.description, schema: weather.input_schema });
  const msg = await llm.bindTools([t], { tool_choice: 'get_weather' }).invoke(toolText);
  return (msg.tool_calls ?? []).map(({ name, args, id }) => ({ name, args, id }));
}

const out = {};
for (const [name, f] of Object.entries({
  create: sdkCreate, stream: sdkStream, tool: () => sdkTool(false), tool_stream: () => sdkTool(true),
  errors: sdkErrors, count: countTokens, aisdk: () => aisdk(false), aisdk_stream: () => aisdk(true),
  aisdk_tool: aisdkTool, langchain: () => langchain(false), langchain_stream: () => langchain(true),
  langchain_tool: langchainTool,
})) {
  try {
    out[name] = await f();
  } catch (e) {
    out[name] = { failed: String(e?.stack ?? e) };
  }
}
console.log(JSON.stringify(out));
