package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// completeIDs posts a raw completion of prompt ids and returns its text and
// how long the request took.
func completeIDs(t testing.TB, base string, prompt []int, maxNew int) (Completion, time.Duration) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": tinyID, "prompt": prompt, "max_tokens": maxNew, "temperature": 0})
	require.NoError(t, err)
	start := time.Now()
	code, _, body := post(t, base+"/v1/completions", string(b))
	el := time.Since(start)
	require.Equal(t, http.StatusOK, code, string(body))
	var c Completion
	require.NoError(t, json.Unmarshal(body, &c))
	return c, el
}

func cat(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestConversationReuse: a request whose ids extend the last generation's
// (its prompt and output) continues that session, and gives the tokens a
// cold run gives; anything else starts fresh.
func TestConversationReuse(t *testing.T) {
	s, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	_, tok := tiny(t)
	p1 := tok.Encode("The capital of France is")
	g1, _ := direct(t, p1, 6, nil)
	p2 := cat(p1, g1, tok.Encode(" and the capital of Italy is"))
	g2, _ := direct(t, p2, 6, nil)
	p3 := cat(p2, g2, tok.Encode(" Thanks."))
	g3, _ := direct(t, p3, 5, nil)
	other := tok.Encode("Once upon a time")
	gOther, _ := direct(t, other, 4, nil)

	for _, step := range []struct {
		name   string
		prompt []int
		maxNew int
		want   []int
		reuses int64
	}{
		{"first turn starts fresh", p1, 6, g1, 0},
		{"second turn continues the first", p2, 6, g2, 1},
		{"third turn continues the second", p3, 5, g3, 2},
		{"another conversation starts fresh", other, 4, gOther, 2},
		{"the kept ids themselves do not strictly extend them", cat(other, gOther), 3, nil, 2},
		{"an older conversation starts fresh", p2, 6, g2, 2},
		{"and is kept in turn", p3, 5, g3, 3},
	} {
		t.Run(step.name, func(t *testing.T) {
			want := step.want
			if want == nil {
				want, _ = direct(t, step.prompt, step.maxNew, nil)
			}
			c, el := completeIDs(t, base, step.prompt, step.maxNew)
			require.Equal(t, tok.Decode(want), c.Choices[0].Text, "the tokens of a cold run")
			require.Equal(t, len(step.prompt), c.Usage.PromptTokens)
			require.Equal(t, step.reuses, s.reuses.Load())
			t.Logf("%d prompt tokens in %v", len(step.prompt), el)
		})
	}
}

// BenchmarkConversationReuse times the second turn of a conversation with a
// long first turn: continued from the kept session (reused) against the
// same request after an unrelated one (cold), in the same run.
func BenchmarkConversationReuse(b *testing.B) {
	_, base := startServer(b, func(o *Options) { o.MemoEntries = 0 })
	_, tok := tiny(b)
	var p1 []int
	for len(p1) < 400 {
		p1 = append(p1, tok.Encode("The quick brown fox jumps over the lazy dog. ")...)
	}
	g1, _ := direct(b, p1, 4, nil)
	p2 := cat(p1, g1, tok.Encode(" Again?"))
	for _, reuse := range []bool{false, true} {
		name := "cold"
		if reuse {
			name = "reused"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if reuse {
					completeIDs(b, base, p1, 4) // the first turn, kept
				} else {
					completeIDs(b, base, tok.Encode("Unrelated."), 1)
				}
				b.StartTimer()
				completeIDs(b, base, p2, 1)
			}
		})
	}
}
