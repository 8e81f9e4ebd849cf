// Run by server/node_frameworks_test.go: LangChain's ChatOpenAI.bindTools
// with tool_choice and the AI SDK's generateText / streamText with tools and
// toolChoice, against a running Deltafin server. Prints one JSON object.
//
// node frameworks.mjs BASE_URL MODEL USER_TEXT
import { ChatOpenAI } from '@langchain/openai';
import { tool as lcTool } from '@langchain/core/tools';
import { generateText, streamText, tool, jsonSchema } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const [baseURL, model, userText] = process.argv.slice(2);

const parameters = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
};

async function langchain(streaming) {
  const llm = new ChatOpenAI({ model, temperature: 0, apiKey: 'unused', maxTokens: 64, maxRetries: 0, configuration: { baseURL } });
  const weather = lcTool(async ({ city }) => `sunny in ${city}`, {
    name: 'get_weather',
    description: 'Weather for a city',
    schema: parameters,
  });
  const bound = llm.bindTools([weather], { tool_choice: 'get_weather' });
  let msg;
  if (streaming) {
    for await (const chunk of await bound.stream(userText)) {
      msg = msg ? msg.concat(chunk) : chunk;
    }
  } else {
    msg = await bound.invoke(userText);
  }
  return {
    tool_calls: (msg.tool_calls ?? []).map(({ name, args, id }) => ({ name, args, id })),
    invalid_tool_calls: (msg.invalid_tool_calls ?? []).length,
    content: typeof msg.content === 'string' ? msg.content : JSON.stringify(msg.content),
    finish: msg.response_metadata?.finish_reason ?? null,
  };
}

async function aisdk(streaming) {
  const provider = createOpenAICompatible({ name: 'deltafin', baseURL, apiKey: 'unused' });
  const executed = [];
  const opts = {
    model: provider.chatModel(model),
    prompt: userText,
    maxOutputTokens: 64,
    temperature: 0,
    maxRetries: 0,
    tools: {
      get_weather: tool({
        description: 'Weather for a city',
        inputSchema: jsonSchema(parameters),
        execute: async (input) => { executed.push(input); return `sunny in ${input.city}`; },
      }),
    },
    toolChoice: { type: 'tool', toolName: 'get_weather' },
  };
  let r;
  try {
    if (streaming) {
      let error = null;
      const s = streamText({ ...opts, onError: ({ error: e }) => { error = e; } });
      await s.consumeStream();
      if (error) throw error;
      r = { toolCalls: await s.toolCalls, toolResults: await s.toolResults, finishReason: await s.finishReason, text: await s.text };
    } else {
      r = await generateText(opts);
    }
  } catch (e) {
    // The AI SDK refuses an answer without the forced call.
    return {
      error: e.name,
      tool_calls: [],
      results: [],
      executed,
      finish: e.finishReason ?? null,
      content: (e.content ?? []).filter((p) => p.type === 'text').map((p) => p.text).join(''),
    };
  }
  return {
    tool_calls: r.toolCalls.map(({ toolName, input, toolCallId }) => ({ name: toolName, args: input, id: toolCallId })),
    results: r.toolResults.map((x) => x.output),
    executed,
    finish: r.finishReason,
    content: r.text,
  };
}

const out = {};
for (const streaming of [false, true]) {
  const key = streaming ? '_stream' : '';
  out['langchain' + key] = await langchain(streaming);
  out['aisdk' + key] = await aisdk(streaming);
}
console.log(JSON.stringify(out));
