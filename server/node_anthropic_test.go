package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/stretchr/testify/require"
)

type nodeBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Signature *string         `json:"signature"`
	Name      *string         `json:"name"`
	Input     json.RawMessage `json:"input"`
	ID        *string         `json:"id"`
}

type nodeMessage struct {
	ID, Type, Role, Model string
	Events                []string     `json:"events"`
	Content               []nodeBlock  `json:"content"`
	StopReason            string       `json:"stop_reason"`
	Usage                 MessageUsage `json:"usage"`
	Next                  *nodeMessage `json:"next"`
	Failed                string       `json:"failed"`
}

type nodeAnthropic struct {
	Create, Stream, Tool nodeMessage
	ToolStream           nodeMessage `json:"tool_stream"`
	Errors               map[string]struct {
		Status  int    `json:"status"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
	Count       json.RawMessage `json:"count"`
	AISDK       nodeAISDK       `json:"aisdk"`
	AISDKStream nodeAISDK       `json:"aisdk_stream"`
	AISDKTool   struct {
		Executed []map[string]any `json:"executed"`
		Finish   string           `json:"finish"`
		Failed   string           `json:"failed"`
	} `json:"aisdk_tool"`
	LangChain       nodeLangChain   `json:"langchain"`
	LangChainStream nodeLangChain   `json:"langchain_stream"`
	LangChainTool   json.RawMessage `json:"langchain_tool"`
}

type nodeLangChain struct {
	Text, Thinking string
	Usage          *struct{ Input, Output int }
	Failed         string
}

type nodeAISDK struct {
	Text, Reasoning, Finish string
	Usage                   struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
	}
	Failed string
}

// TestNodeAnthropic runs Anthropic's SDK, the AI SDK's Anthropic provider
// and LangChain's ChatAnthropic against the Messages API on k3-tiny, with
// an API key sent as x-api-key: each gets exactly what a direct engine run
// on the same K3 prompt gives (K3's reasoning as a signed thinking block,
// its answer as text, the usage), streamed and not; count_tokens counts
// that prompt; a forced tool on a primed answer comes back as a tool_use
// whose result the next turn renders as the chat path does; errors come
// in Anthropic's shape.
func TestNodeAnthropic(t *testing.T) {
	const key = "anthropic-test-key"
	s, base := startServer(t, func(o *Options) { o.APIKey = key })
	_, tok := tiny(t)
	const user, toolUser = "What is the capital of France?", "Weather in Paris?"

	want := expectChat(t, []chat.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: user}}, chat.DefaultOptions(), 8)
	opts := weatherOptions()
	opts.ToolName = "get_weather"
	prompt, err := chat.Prompt(tok, []chat.Message{{Role: "user", Content: toolUser}}, opts)
	require.NoError(t, err)
	answer := tok.EncodeSpecial(xtmlArg("city", "Paris") + chat.Close + "call" + chat.Sep + chat.Close + "tools" + chat.Sep + chat.Close + "message" + chat.Sep)
	s.memo.put(keyOf(prompt, 64, s.chatStop), memoValue{tokens: answer, finish: "stop"})

	var got nodeAnthropic
	runNode(t, &got, "anthropic.mjs", base, tinyID, key, user, toolUser)

	stop := map[string]string{"stop": "end_turn", "length": "max_tokens"}[want.finish]
	u := MessageUsage{InputTokens: len(want.prompt), OutputTokens: len(want.tokens)}
	check := func(t *testing.T, m nodeMessage) {
		t.Helper()
		require.Empty(t, m.Failed)
		require.Equal(t, stop, m.StopReason)
		require.Equal(t, u, m.Usage)
		var thinking, text string
		for _, b := range m.Content {
			switch b.Type {
			case "thinking":
				require.NotNil(t, b.Signature, "a thinking block carries a signature")
				require.NotEmpty(t, *b.Signature)
				thinking += *b.Text
			case "text":
				text += *b.Text
			default:
				t.Fatalf("unexpected block %q", b.Type)
			}
		}
		require.Equal(t, want.reasoning, thinking)
		require.Equal(t, want.content, text)
	}
	t.Run("sdk", func(t *testing.T) {
		m := got.Create
		require.Regexp(t, `^msg_[0-9a-f]{24}$`, m.ID)
		require.Equal(t, []string{"message", "assistant", tinyID}, []string{m.Type, m.Role, m.Model})
		check(t, m)
	})
	t.Run("sdk_stream", func(t *testing.T) {
		check(t, got.Stream)
		ev := got.Stream.Events
		require.NotEmpty(t, ev)
		require.Equal(t, "message_start", ev[0])
		require.Equal(t, []string{"message_delta", "message_stop"}, ev[len(ev)-2:])
		if want.reasoning != "" {
			require.Contains(t, ev, "content_block_delta:thinking_delta")
			require.Contains(t, ev, "content_block_delta:signature_delta")
		}
	})
	t.Run("count_tokens", func(t *testing.T) {
		require.Equal(t, compact(t, len(want.prompt)), string(got.Count))
	})
	for name, m := range map[string]nodeMessage{"tool": got.Tool, "tool_stream": got.ToolStream} {
		t.Run(name, func(t *testing.T) {
			require.Empty(t, m.Failed)
			require.Equal(t, "tool_use", m.StopReason)
			require.Len(t, m.Content, 1)
			b := m.Content[0]
			require.Equal(t, "tool_use", b.Type)
			require.Equal(t, "get_weather", *b.Name)
			require.JSONEq(t, `{"city":"Paris"}`, string(b.Input))
			if name == "tool_stream" {
				require.Contains(t, m.Events, "content_block_delta:input_json_delta")
			}
			// The next turn renders as chat's with the same call and result.
			o := weatherOptions()
			o.Thinking = false
			next := expectChat(t, []chat.Message{{Role: "user", Content: toolUser},
				{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: *b.ID, Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
				{Role: "tool", ToolCallID: *b.ID, Content: "sunny, 21C"}}, o, 8)
			require.NotNil(t, m.Next)
			require.Equal(t, MessageUsage{InputTokens: len(next.prompt), OutputTokens: len(next.tokens)}, m.Next.Usage)
			var text string
			for _, nb := range m.Next.Content {
				require.Equal(t, "text", nb.Type, "thinking is off")
				text += *nb.Text
			}
			require.Equal(t, next.content, text)
		})
	}
	t.Run("errors", func(t *testing.T) {
		e := got.Errors
		require.Equal(t, http.StatusBadRequest, e["top_k"].Status)
		require.Equal(t, "invalid_request_error", e["top_k"].Type)
		require.Contains(t, e["top_k"].Message, "top_k")
		require.Equal(t, http.StatusUnauthorized, e["auth"].Status)
		require.Equal(t, "authentication_error", e["auth"].Type)
		require.Equal(t, http.StatusBadRequest, e["image"].Status)
		require.Equal(t, "invalid_request_error", e["image"].Type)
		require.Contains(t, e["image"].Message, "messages[0].content[0]")
	})
	aiFinish := map[string]string{"stop": "stop", "length": "length"}[want.finish]
	for name, r := range map[string]nodeAISDK{"aisdk": got.AISDK, "aisdk_stream": got.AISDKStream} {
		t.Run(name, func(t *testing.T) {
			require.Empty(t, r.Failed)
			require.Equal(t, want.content, r.Text)
			require.Equal(t, want.reasoning, r.Reasoning)
			require.Equal(t, aiFinish, r.Finish)
			require.Equal(t, len(want.prompt), r.Usage.InputTokens)
			require.Equal(t, len(want.tokens), r.Usage.OutputTokens)
		})
	}
	t.Run("aisdk_tool", func(t *testing.T) {
		require.Empty(t, got.AISDKTool.Failed)
		require.Equal(t, []map[string]any{{"city": "Paris"}}, got.AISDKTool.Executed, "the tool ran once with the parsed input")
		require.Equal(t, "tool-calls", got.AISDKTool.Finish)
	})
	t.Run("langchain", func(t *testing.T) {
		for _, r := range []nodeLangChain{got.LangChain, got.LangChainStream} {
			require.Empty(t, r.Failed)
			require.Equal(t, want.content, r.Text)
			require.Equal(t, want.reasoning, r.Thinking)
			require.NotNil(t, r.Usage)
			require.Equal(t, len(want.prompt), r.Usage.Input)
		}
		require.True(t, strings.Contains(string(got.LangChainTool), `"args":{"city":"Paris"}`), string(got.LangChainTool))
	})
}
