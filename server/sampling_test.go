package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

// TestSamplingFieldsRefused: a sampling field out of range, or a seed that
// is not an integer, is a 400 naming the field, on every endpoint.
func TestSamplingFieldsRefused(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	endpoints := map[string]string{
		"/v1/chat/completions": `"messages":[{"role":"user","content":"Hi"}]`,
		"/v1/completions":      `"prompt":"Hi"`,
		"/v1/responses":        `"input":"Hi"`,
	}
	for _, tc := range []struct{ field, value string }{
		{"temperature", "-0.5"}, {"temperature", "2.5"},
		{"top_p", "0"}, {"top_p", "1.5"}, {"top_p", "-1"},
		{"top_k", "-1"}, {"top_k", "2.5"},
		{"min_p", "-0.1"}, {"min_p", "1.5"},
		{"seed", "1.5"}, {"seed", `"7"`}, {"seed", "1e30"},
	} {
		for path, rest := range endpoints {
			body := fmt.Sprintf(`{"model":%q,%s,%q:%s}`, tinyID, rest, tc.field, tc.value)
			code, _, b := post(t, base+path, body)
			require.Equal(t, http.StatusBadRequest, code, "%s %s=%s: %s", path, tc.field, tc.value, b)
			e := decodeError(t, b)
			require.NotNil(t, e.Param, string(b))
			require.Equal(t, tc.field, *e.Param, "%s %s=%s: %s", path, tc.field, tc.value, e.Message)
		}
	}
}

// completeSampled posts a completion of prompt ids with the sampling
// fields in extra and returns its text, the seed in its body and header.
func completeSampled(t *testing.T, base string, prompt []int, maxNew int, extra string) (string, int64) {
	t.Helper()
	ids, _ := json.Marshal(prompt)
	code, h, b := post(t, base+"/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":%d%s}`, tinyID, ids, maxNew, extra))
	require.Equal(t, http.StatusOK, code, string(b))
	var c Completion
	require.NoError(t, json.Unmarshal(b, &c))
	require.NotNil(t, c.Seed, "the body reports the seed")
	require.Equal(t, strconv.FormatInt(*c.Seed, 10), h.Get(seedHeader), "the header reports the same seed")
	return c.Choices[0].Text, *c.Seed
}

// TestSampledCompletions: a request that names no sampling is sampled as
// the model card says with a seed the server draws and reports; sending
// that seed back gives the same answer, the engine's for that seed; the
// memo keeps a seeded answer but not one whose seed was drawn; and with
// speculation on or off a seed gives the same tokens.
func TestSampledCompletions(t *testing.T) {
	t.Parallel()
	m, tok := tiny(t)
	s, base := startServer(t, nil)
	prompt := tok.Encode("Once upon a time")
	card := m.Info().Sampling
	require.Equal(t, engine.Sampling{Temperature: 1, TopP: 0.95}, card, "k3-tiny's defaults are K3's model card")

	text, seed := completeSampled(t, base, prompt, 12, "")
	_, seed2 := completeSampled(t, base, prompt, 12, "")
	require.NotEqual(t, seed, seed2, "each request without a seed gets its own")
	require.LessOrEqual(t, seed, int64(1<<53-1), "a drawn seed survives a JavaScript number")
	entries, _ := s.memo.len()
	require.Zero(t, entries, "answers with drawn seeds are not memoised")

	want := card
	want.Seed = uint64(seed)
	toks, _ := directSampled(t, prompt, 12, nil, want)
	require.Equal(t, tok.Decode(toks), text, "the engine's answer for the reported seed")
	again, got := completeSampled(t, base, prompt, 12, fmt.Sprintf(`,"seed":%d`, seed))
	require.Equal(t, seed, got)
	require.Equal(t, text, again, "the reported seed sent back repeats the answer")
	entries, _ = s.memo.len()
	require.Equal(t, 1, entries, "a seeded answer is memoised")
	gens := s.generations.Load()
	again, _ = completeSampled(t, base, prompt, 12, fmt.Sprintf(`,"seed":%d`, seed))
	require.Equal(t, text, again)
	require.Equal(t, gens, s.generations.Load(), "the repeat came from the memo")
	// Another seed or other settings are other entries, not the memo's answer.
	_, _ = completeSampled(t, base, prompt, 12, fmt.Sprintf(`,"seed":%d,"top_k":5`, seed))
	require.Equal(t, gens+1, s.generations.Load())

	// Speculation off: the same tokens for every seed and setting.
	plain, err := engine.Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), engine.Options{NoSpec: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	_, noSpec := startServerWith(t, FromEngine(plain), func(o *Options) { o.MemoEntries = 0 })
	for seed := range 8 {
		for _, extra := range []string{"", `,"temperature":0.4`, `,"temperature":1.3,"top_k":40,"min_p":0.02,"top_p":0.9`} {
			extra += fmt.Sprintf(`,"seed":%d`, seed)
			a, _ := completeSampled(t, base, prompt, 16, extra)
			b, _ := completeSampled(t, noSpec, prompt, 16, extra)
			require.Equal(t, a, b, "speculation changed %s", extra)
		}
	}

	// Temperature 0 is greedy, whatever the seed and top_p say.
	greedy, _ := direct(t, prompt, 12, nil)
	text, _ = completeSampled(t, base, prompt, 12, `,"temperature":0,"top_p":0.5,"seed":3`)
	require.Equal(t, tok.Decode(greedy), text)
}

// TestSampledChatAndResponses: chat (streamed) and Responses report the
// seed they sampled with and answer as the engine does for it; a
// response echoes the model card's temperature and top_p.
func TestSampledChatAndResponses(t *testing.T) {
	t.Parallel()
	m, _ := tiny(t)
	_, withSt := withStore(t)
	_, base := startServer(t, func(o *Options) { withSt(o); o.MemoEntries = 0 })
	msgs := []chat.Message{{Role: "user", Content: "Hello there"}}
	samp := m.Info().Sampling
	samp.TopK, samp.Seed = 50, 77
	want := expectChatSampled(t, msgs, chat.DefaultOptions(), 24, samp)

	resp, next := stream(t, t.Context(), base+"/v1/chat/completions",
		fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hello there"}],"max_tokens":24,"stream":true,"seed":77,"top_k":50}`, tinyID))
	require.Equal(t, "77", resp.Header.Get(seedHeader))
	data, _ := readAll(t, next)
	var deltas []string
	var last ChatChunk
	for _, d := range data[:len(data)-1] { // [DONE] last
		var ch ChatChunk
		require.NoError(t, json.Unmarshal([]byte(d), &ch))
		if len(ch.Choices) == 0 {
			continue
		}
		if r := ch.Choices[0].Delta.ReasoningContent; r != nil && *r != "" {
			deltas = append(deltas, "r:"+*r)
		}
		if c := ch.Choices[0].Delta.Content; c != nil && *c != "" {
			deltas = append(deltas, "c:"+*c)
		}
		last = ch
	}
	require.Equal(t, want.deltas, deltas)
	require.NotNil(t, last.Seed, "the finishing chunk reports the seed")
	require.Equal(t, int64(77), *last.Seed)

	code, h, b := post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"input":"Hello there","max_output_tokens":24,"seed":77,"top_k":50}`, tinyID))
	require.Equal(t, http.StatusOK, code, string(b))
	require.Equal(t, "77", h.Get(seedHeader))
	r := decodeResponse(t, b)
	require.Equal(t, 1.0, r.Temperature)
	require.Equal(t, 0.95, r.TopP)
	require.NotNil(t, r.Seed)
	require.Equal(t, int64(77), *r.Seed)
	reasoning, content := outputText(r)
	require.Equal(t, want.reasoning+want.content, reasoning+content)
	require.Equal(t, len(want.tokens), r.Usage.OutputTokens)

	// Without a seed the response reports the one drawn, and keeps it.
	code, _, b = post(t, base+"/v1/responses", fmt.Sprintf(`{"model":%q,"input":"Hello there","max_output_tokens":4}`, tinyID))
	require.Equal(t, http.StatusOK, code, string(b))
	r = decodeResponse(t, b)
	require.NotNil(t, r.Seed)
	code, got := get(t, base+"/v1/responses/"+r.ID)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, *r.Seed, *decodeResponse(t, got).Seed)
}

// TestHealthCountsDrafting: /health totals the generations' decode
// passes: every token after a completion's first comes from a target pass
// or an accepted draft, and n-gram guesses are drafted and verified (the
// prompt 7,0, 7,1, …, 7,1023, 7 holds every pair after 7, so the first
// answer token's guess is there at once).
func TestHealthCountsDrafting(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	var prompt []int
	for v := range 1024 {
		prompt = append(prompt, 7, v)
	}
	prompt = append(prompt, 7)
	for seed := range 3 {
		completeSampled(t, base, prompt, 16, fmt.Sprintf(`,"seed":%d`, seed))
	}
	code, body := get(t, base+"/health")
	require.Equal(t, http.StatusOK, code)
	var h Health
	require.NoError(t, json.Unmarshal(body, &h))
	d := h.Drafting
	require.Equal(t, int64(3), s.generations.Load())
	require.Equal(t, 3*15, d.TargetPasses+d.Accepted, "%+v: 15 tokens of each answer from decode passes", d)
	require.Positive(t, d.VerifyPasses, "%+v", d)
	require.LessOrEqual(t, d.Accepted, d.Drafted)
	require.Zero(t, d.BytesPerToken, "k3-tiny in RAM reads nothing per token")
}
