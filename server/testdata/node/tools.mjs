// Run by server/node_tools_test.go: the official openai npm package's
// runTools against a running Deltafin server. Prints one JSON object.
//
// node tools.mjs BASE_URL MODEL
//   primed:  runTools with tool_choice forcing get_weather (non-streamed and
//            streamed), on a conversation whose answer the test primed;
//            then the conversation with the tool's result sent back.
//   tiny:    the same forced runTools on what k3-tiny writes itself.
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });

const parameters = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
};

async function forced(content, stream) {
  const calls = [];
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters,
      parse: JSON.parse,
      function: (args) => { calls.push(args); return 'sunny, 21C'; },
    },
  }];
  const runner = client.chat.completions.runTools({
    model,
    temperature: 0,
    max_tokens: 64,
    stream,
    messages: [{ role: 'user', content }],
    tools,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const completions = [];
  runner.on('chatCompletion', (c) => completions.push({
    finish: c.choices[0].finish_reason,
    tool_calls: c.choices[0].message.tool_calls ?? [],
    content: c.choices[0].message.content,
  }));
  await runner.done();
  return { calls, completions, messages: runner.messages };
}

const out = {};
for (const stream of [false, true]) {
  const r = await forced('Weather in Paris?', stream);
  // The tool's result goes back with the call: the next turn.
  // As the runner itself sends messages (its assistant messages carry
  // parsed and parsed_arguments, which are not part of a request).
  const history = r.messages.map((m) => m.role !== 'assistant' ? m : {
    role: m.role,
    content: m.content,
    tool_calls: m.tool_calls.map(({ id, type, function: f }) => ({ id, type, function: { name: f.name, arguments: f.arguments } })),
  });
  const next = await client.chat.completions.create({
    model,
    temperature: 0,
    max_tokens: 8,
    messages: history,
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters } }],
  });
  r.next = {
    content: next.choices[0].message.content,
    reasoning: next.choices[0].message.reasoning_content,
    finish: next.choices[0].finish_reason,
    usage: next.usage,
  };
  out[stream ? 'primed_stream' : 'primed'] = r;
}

// What the random weights write inside the forced call, through the raw
// response (the runner keeps no finish_reason extras).
// The runner throws on finish_reason "length" (it cannot parse a cut
// answer); that is recorded too.
let tiny;
try {
  tiny = await forced('Weather in Lyon?', false);
} catch (e) {
  tiny = { error: e.constructor.name, calls: [], completions: [] };
}
const raw = await client.chat.completions.create({
  model,
  temperature: 0,
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Weather in Lyon?' }],
  tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters } }],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
});
tiny.output_error = raw.choices[0].output_error ?? null;
out.tiny = tiny;

console.log(JSON.stringify(out));
