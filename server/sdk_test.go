package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"
)

// The official Go SDK against the real server on loopback running k3-tiny.

func sdkClient(base string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base + "/v1/"),
		option.WithAPIKey("unused"),
		option.WithMaxRetries(0), // a 429 must reach the test, not be retried
	}, opts...)...)
}

// extra reads a non-OpenAI field such as reasoning_content.
func extra(t *testing.T, raw string) string {
	t.Helper()
	if raw == "" || raw == "null" {
		return ""
	}
	var s string
	require.NoError(t, json.Unmarshal([]byte(raw), &s))
	return s
}

func TestSDKModels(t *testing.T) {
	_, base := startServer(t, nil)
	client := sdkClient(base)
	page, err := client.Models.List(t.Context())
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, tinyID, page.Data[0].ID)
	m, err := client.Models.Get(t.Context(), tinyID)
	require.NoError(t, err)
	require.Equal(t, tinyID, m.ID)
}

func TestSDKChat(t *testing.T) {
	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	client := sdkClient(base)
	tests := []struct {
		name   string
		effort shared.ReasoningEffort
		opts   chat.Options
	}{
		{"default", "", chat.DefaultOptions()},
		{"high", shared.ReasoningEffortHigh, chat.Options{Thinking: true, Effort: "high"}},
		{"none", shared.ReasoningEffortNone, chat.Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := expectChat(t, []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello!"}}, tc.opts, 8)
			resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
				Model:           tinyID,
				Messages:        []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello!")},
				MaxTokens:       openai.Int(8),
				Temperature:     openai.Float(0),
				ReasoningEffort: tc.effort,
			})
			require.NoError(t, err)
			require.Equal(t, tinyID, resp.Model)
			require.Len(t, resp.Choices, 1)
			require.Equal(t, want.content, resp.Choices[0].Message.Content)
			require.Equal(t, want.reasoning, extra(t, resp.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()))
			require.Equal(t, want.finish, resp.Choices[0].FinishReason)
			require.Equal(t, int64(len(want.prompt)), resp.Usage.PromptTokens)
			require.Equal(t, int64(len(want.tokens)), resp.Usage.CompletionTokens)
			require.Equal(t, int64(len(want.prompt)+len(want.tokens)), resp.Usage.TotalTokens)
		})
	}
}

func TestSDKChatStream(t *testing.T) {
	_, base := startServer(t, nil)
	client := sdkClient(base)
	want := expectChat(t, []chat.Message{{Role: "user", Content: "Stream, please."}}, chat.DefaultOptions(), 10)
	s := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:         tinyID,
		Temperature:   openai.Float(0),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream, please.")},
		MaxTokens:     openai.Int(10),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	var reasoning string
	chunks := 0
	for s.Next() {
		c := s.Current()
		chunks++
		require.True(t, acc.AddChunk(c))
		if len(c.Choices) > 0 {
			reasoning += extra(t, c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"].Raw())
		}
	}
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	require.Greater(t, chunks, 2)
	var streamedReasoning, streamedContent string
	for _, d := range want.deltas {
		if d[0] == 'r' {
			streamedReasoning += d[2:]
		} else {
			streamedContent += d[2:]
		}
	}
	require.Equal(t, streamedReasoning, reasoning)
	require.Len(t, acc.Choices, 1)
	require.Equal(t, streamedContent, acc.Choices[0].Message.Content)
	require.Equal(t, want.finish, acc.Choices[0].FinishReason)
	require.Equal(t, int64(len(want.prompt)), acc.Usage.PromptTokens)
	require.Equal(t, int64(len(want.tokens)), acc.Usage.CompletionTokens)
}

func TestSDKCompletions(t *testing.T) {
	_, base := startServer(t, nil)
	client := sdkClient(base)
	_, tok := tiny(t)
	ids := tok.Encode("Once upon a time")
	// No temperature: the model card's sampling, here with a seed; the
	// answer is the engine's for that seed and reports it.
	m, _ := tiny(t)
	card := m.Info().Sampling
	require.Equal(t, engine.Sampling{Temperature: 1, TopP: 0.95}, card)
	card.Seed = 2026
	sampled, _ := directSampled(t, ids, 6, nil, card)
	var hdr *http.Response
	resp, err := client.Completions.New(t.Context(), openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel(tinyID),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(6),
		Seed:      openai.Int(2026),
	}, option.WithResponseInto(&hdr))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	require.Equal(t, tok.Decode(sampled), resp.Choices[0].Text)
	require.Equal(t, "2026", resp.JSON.ExtraFields["seed"].Raw())
	require.Equal(t, "2026", hdr.Header.Get(seedHeader))
	require.Equal(t, openai.CompletionChoiceFinishReasonLength, resp.Choices[0].FinishReason)

	// Temperature 0: greedy, as the engine decodes without sampling.
	want, _ := direct(t, ids, 6, nil)
	resp, err = client.Completions.New(t.Context(), openai.CompletionNewParams{
		Model:       openai.CompletionNewParamsModel(tinyID),
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens:   openai.Int(6),
		Temperature: openai.Float(0),
	})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	require.Equal(t, tok.Decode(want), resp.Choices[0].Text)
	require.Equal(t, openai.CompletionChoiceFinishReasonLength, resp.Choices[0].FinishReason)
	require.Equal(t, int64(len(ids)), resp.Usage.PromptTokens)
	require.Equal(t, int64(6), resp.Usage.CompletionTokens)

	ids64 := make([]int64, len(ids))
	for i, id := range ids {
		ids64[i] = int64(id)
	}
	s := client.Completions.NewStreaming(t.Context(), openai.CompletionNewParams{
		Model:       openai.CompletionNewParamsModel(tinyID),
		Prompt:      openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: ids64},
		MaxTokens:   openai.Int(6),
		Temperature: openai.Float(0),
	})
	var text string
	for s.Next() {
		for _, c := range s.Current().Choices {
			text += c.Text
		}
	}
	require.NoError(t, s.Err())
	require.Equal(t, tok.Decode(want), text)
}

func TestSDKErrors(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.APIKey, o.Queue = "right", 0 })
	client := sdkClient(base, option.WithAPIKey("right"))
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	tests := []struct {
		name   string
		client openai.Client
		params openai.ChatCompletionNewParams
		status int
		param  string
		code   string
	}{
		{"n", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, N: openai.Int(2)}, 400, "n", codeUnsupported},
		{"logprobs", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, Logprobs: openai.Bool(true)}, 400, "logprobs", codeUnsupported},
		{"stop", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user,
			Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"a", "b", "c", "d", "e"}}}, 400, "stop", codeInvalidValue},
		{"penalty", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, PresencePenalty: openai.Float(1)}, 400, "presence_penalty", codeUnsupported},
		{"temperature range", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, Temperature: openai.Float(3)}, 400, "temperature", codeInvalidValue},
		{"effort unknown", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, ReasoningEffort: shared.ReasoningEffort("huge")}, 400, "reasoning_effort", codeInvalidValue},
		{"image", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("what is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png"}),
			})}}, 400, "messages[0].content[1]", codeUnsupported},
		{"json schema name", client, openai.ChatCompletionNewParams{Model: tinyID, Messages: user, ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "not a name"}}}}, 400, "response_format.json_schema.name", codeInvalidValue},
		{"no model", client, openai.ChatCompletionNewParams{Model: "", Messages: user}, 400, "model", codeMissing},
		{"api key", sdkClient(base, option.WithAPIKey("wrong")), openai.ChatCompletionNewParams{Model: tinyID, Messages: user}, 401, "", "invalid_api_key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.Chat.Completions.New(t.Context(), tc.params)
			var apiErr *openai.Error
			require.True(t, errors.As(err, &apiErr), "%v", err)
			require.Equal(t, tc.status, apiErr.StatusCode)
			require.Equal(t, tc.param, apiErr.Param)
			require.Equal(t, tc.code, apiErr.Code)
			require.NotEmpty(t, apiErr.Message)
		})
	}
	require.Zero(t, s.generations.Load(), "no refused request reached the engine")

	t.Run("busy", func(t *testing.T) {
		cancel, _ := startLong(t, s, base, "Authorization", "Bearer right")
		defer cancel()
		_, err := client.Completions.New(t.Context(), openai.CompletionNewParams{
			Model:  openai.CompletionNewParamsModel(tinyID),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		require.Equal(t, "engine_busy", apiErr.Code)
	})
}
