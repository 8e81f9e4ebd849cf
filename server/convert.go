package server

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/deltafin/deltafin/engine/chat"
)

// Pure conversions between the OpenAI wire types and the engine's terms,
// with no HTTP in them (ollama's openai package is the model): requests to
// chat messages and render options, generated text to responses and
// chunks.

// chatMessages converts validated messages for the K3 renderer.
func chatMessages(msgs []message) []chat.Message {
	out := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		cm := chat.Message{Role: m.role, Name: m.name, Content: m.content, ReasoningContent: m.reasoning, ToolCallID: m.toolCallID}
		if m.parts != nil {
			cm.Parts = make([]chat.Part, len(m.parts))
			for j, p := range m.parts {
				cm.Parts[j] = chat.Part{Type: "text", Text: p}
			}
		}
		for _, tc := range m.toolCalls {
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.id, Type: "function",
				Function: chat.FunctionCall{Name: tc.name, Arguments: tc.arguments}})
		}
		out[i] = cm
	}
	return out
}

// chatOptions converts the request-level settings for the K3 renderer.
func chatOptions(g *genRequest) chat.Options {
	o := chat.DefaultOptions()
	o.Thinking = g.thinking
	if g.effort != "" {
		o.Effort = g.effort
	}
	o.ForgetReasoning = g.forget
	o.ToolChoice, o.ToolName, o.ResponseFormat = g.toolChoice, g.toolName, g.format
	for _, t := range g.tools {
		o.Tools = append(o.Tools, chat.Tool(t))
	}
	return o
}

// newID returns an OpenAI-style response id such as "chatcmpl-3f2a...".
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}

const systemFingerprint = "fp_deltafin"

// usage counts a generation.
func usage(prompt, completion int) Usage {
	return Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// chatCompletion is the non-streamed chat answer. Without thinking there
// is no reasoning_content field at all.
func chatCompletion(id string, created int64, model string, out chat.Output, thinking bool, finish string, oe *OutputError, u Usage) ChatCompletion {
	msg := ResponseMessage{Role: "assistant", Content: out.Content, ToolCalls: messageToolCalls(out.Calls)}
	if thinking {
		msg.ReasoningContent = &out.Reasoning
	}
	return ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: model,
		SystemFingerprint: systemFingerprint,
		Choices:           []ChatChoice{{Index: 0, Message: msg, FinishReason: finish, OutputError: oe}},
		Usage:             u}
}

// chatChunk is one streamed chat event with the given delta.
func chatChunk(id string, created int64, model string, delta ChatDelta, finish *string, withUsage bool) ChatChunk {
	return ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		SystemFingerprint: systemFingerprint,
		Choices:           []ChatChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
		withUsage:         withUsage}
}

// chatUsageChunk is the last event when stream_options.include_usage is
// set: no choices, only usage.
func chatUsageChunk(id string, created int64, model string, u Usage) ChatChunk {
	return ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		SystemFingerprint: systemFingerprint, Choices: []ChatChunkChoice{}, Usage: &u, withUsage: true}
}

// completion is a /v1/completions answer or stream event; finish is nil
// on the events before the last.
func completion(id string, created int64, model, text string, finish *string, u *Usage, withUsage bool) Completion {
	return Completion{ID: id, Object: "text_completion", Created: created, Model: model,
		SystemFingerprint: systemFingerprint,
		Choices:           []CompletionChoice{{Index: 0, Text: text, FinishReason: finish}},
		Usage:             u, withUsage: withUsage}
}

// completionUsageChunk is the last completion event when
// stream_options.include_usage is set.
func completionUsageChunk(id string, created int64, model string, u Usage) Completion {
	return Completion{ID: id, Object: "text_completion", Created: created, Model: model,
		SystemFingerprint: systemFingerprint, Choices: []CompletionChoice{}, Usage: &u, withUsage: true}
}
