// Run by server/node_structured_test.go: structured output and K3's
// reasoning over /v1/responses with the AI SDK's default OpenAI provider
// (generateObject, generateText's reasoningText, streamText's reasoning
// parts) and LangChain's withStructuredOutput on the Responses API. The
// server's model is scripted to write one reasoning and a JSON answer.
//
// node structured.mjs BASE_URL MODEL
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, streamText } from 'ai';
import { z } from 'zod';

const [baseURL, model] = process.argv.slice(2);
const schema = z.object({ city: z.string(), temp: z.number() });
const provider = createOpenAI({ baseURL, apiKey: 'unused' });
const out = {};

const obj = await generateObject({ model: provider.responses(model), schema, prompt: 'Weather in Paris?', maxRetries: 0 });
out.aiObject = { object: obj.object, reasoning: obj.reasoning ?? '', finish: obj.finishReason };

const gen = await generateText({ model: provider.responses(model), prompt: 'Weather in Paris?', maxRetries: 0 });
out.aiText = { text: gen.text, reasoning: gen.reasoningText ?? '' };

const st = streamText({ model: provider.responses(model), prompt: 'Weather in Paris?', maxRetries: 0, onError: ({ error }) => { throw error; } });
let reasoning = '';
let text = '';
for await (const part of st.fullStream) {
  if (part.type === 'reasoning-delta') reasoning += part.text;
  if (part.type === 'text-delta') text += part.text;
  if (part.type === 'error') throw part.error;
}
out.aiStream = { text, reasoning };

const llm = new ChatOpenAI({ model, apiKey: 'unused', maxRetries: 0, useResponsesApi: true, configuration: { baseURL } });
out.langchain = await llm.withStructuredOutput(schema, { name: 'weather' }).invoke('Weather in Paris?');

console.log(JSON.stringify(out));
