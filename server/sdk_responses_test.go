package server

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/deltafin/deltafin/chat"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
)

// The official Go SDK on the Responses API, against k3-tiny on loopback.

func sdkInput(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

// sdkText splits an SDK response's output into reasoning and answer.
func sdkText(r *responses.Response) (reasoning, content string) {
	for _, it := range r.Output {
		for _, c := range it.Content {
			if it.Type == "reasoning" {
				reasoning += c.Text
			} else {
				content += c.Text
			}
		}
	}
	return
}

func TestSDKResponses(t *testing.T) {
	t.Parallel()
	_, withSt := withStore(t)
	s, base := startServer(t, func(o *Options) { withSt(o); o.MemoEntries = 0 })
	client := sdkClient(base)
	user := []chat.Message{{Role: "user", Content: "Hello there"}}
	want := expectResponse(t, user, 10)

	first, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("Hello there"), MaxOutputTokens: openai.Int(10)})
	require.NoError(t, err)
	reasoning, content := sdkText(first)
	require.Equal(t, want.reasoning+want.content, reasoning+content)
	require.Equal(t, int64(len(want.tokens)), first.Usage.OutputTokens)
	require.Equal(t, int64(len(want.prompt)), first.Usage.InputTokens)

	t.Run("stream", func(t *testing.T) {
		st := client.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
			Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("Hello there"), MaxOutputTokens: openai.Int(10)})
		var deltas string
		var types []string
		var last responses.ResponseStreamEventUnion
		for st.Next() {
			ev := st.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" || ev.Type == "response.reasoning_text.delta" {
				deltas += ev.Delta
			}
			last = ev
		}
		require.NoError(t, st.Err())
		// A reasoning item opens with its summary part, then its content.
		require.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.reasoning_summary_part.added", "response.content_part.added"}, types[:5])
		require.Equal(t, want.reasoning+want.content, deltas)
		require.Contains(t, []string{"response.completed", "response.incomplete"}, last.Type)
		r, c := sdkText(&last.Response)
		require.Equal(t, deltas, r+c)
	})

	t.Run("retrieve, input items, previous_response_id, delete", func(t *testing.T) {
		got, err := client.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		require.Equal(t, first.ID, got.ID)
		require.Equal(t, first.Output, got.Output)

		next, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("And then?"), MaxOutputTokens: openai.Int(6),
			PreviousResponseID: openai.String(first.ID)})
		require.NoError(t, err)
		require.Equal(t, first.ID, next.PreviousResponseID)
		conv := append(user, chat.Message{Role: "assistant", ReasoningContent: want.reasoning, Content: want.content},
			chat.Message{Role: "user", Content: "And then?"})
		wantNext := expectResponse(t, conv, 6)
		r, c := sdkText(next)
		require.Equal(t, wantNext.reasoning+wantNext.content, r+c)
		require.Equal(t, int64(len(wantNext.prompt)), next.Usage.InputTokens, "the stored conversation was continued")

		items, err := client.Responses.InputItems.List(t.Context(), next.ID, responses.InputItemListParams{})
		require.NoError(t, err)
		require.Len(t, items.Data, 1)
		require.Equal(t, "user", string(items.Data[0].Role))
		require.Equal(t, "And then?", items.Data[0].Content.OfInputItemContentList[0].Text)

		require.NoError(t, client.Responses.Delete(t.Context(), first.ID))
		_, err = client.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	})

	t.Run("background and poll", func(t *testing.T) {
		r, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("Hello there"), MaxOutputTokens: openai.Int(10), Background: openai.Bool(true)})
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusQueued, r.Status)
		require.True(t, r.Background)
		for r.Status == responses.ResponseStatusQueued || r.Status == responses.ResponseStatusInProgress {
			r, err = client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
		}
		rs, c := sdkText(r)
		require.Equal(t, want.reasoning+want.content, rs+c)
	})

	t.Run("background cancel", func(t *testing.T) {
		r, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: tinyID, Temperature: openai.Float(0), Input: sdkInput("Tell me everything"), MaxOutputTokens: openai.Int(1_000_000), Background: openai.Bool(true)})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			q := s.Queue()
			return q.Running != nil && q.Running.ID == r.ID && q.Running.Tokens > 2
		}, waitLong, pollEvery, "the background job decodes")
		start := time.Now()
		c, err := client.Responses.Cancel(t.Context(), r.ID)
		require.NoError(t, err)
		t.Logf("cancel answered in %v", time.Since(start))
		require.Equal(t, responses.ResponseStatusCancelled, c.Status)
		got, err := client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCancelled, got.Status)
		busy, _ := s.queue.counts()
		require.False(t, busy, "the engine is free")
	})
}
