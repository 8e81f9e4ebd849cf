package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// oracleRun is one decode of a drafting test: the tokens, every logits
// row, the session's counters and its conversation.
type oracleRun struct {
	toks  []int
	rows  [][]float32
	stats SpecStats
	conv  []int
}

// decodeWith decodes prompt for n tokens with sampling o in a fresh
// session of m drafting with d (the zero Draft: none), depth fixed when
// > 0. stopAt > 0 ends the turn by emit's ErrStopped at that token (a stop
// sequence), after which a second turn decodes n more tokens.
func decodeWith(t *testing.T, m *Model, d Draft, fixed int, prompt []int, o Sampling, n, stopAt int) oracleRun {
	t.Helper()
	s := m.NewSession()
	require.NoError(t, s.SetDraft(d))
	s.price.fixed = fixed
	var r oracleRun
	opts := GenerateOptions{MaxNew: n, Sampling: o, StopTokens: []int{m.Info().EOS},
		Logits: func(row []float32) error { r.rows = append(r.rows, append([]float32(nil), row...)); return nil }}
	emit := func(tok int) error {
		r.toks = append(r.toks, tok)
		if len(r.toks) == stopAt {
			return ErrStopped
		}
		return nil
	}
	_, err := s.Generate(t.Context(), prompt, opts, emit)
	require.NoError(t, err)
	if stopAt > 0 {
		_, err = s.Generate(t.Context(), nil, opts, emit)
		require.NoError(t, err)
	}
	r.stats, r.conv = s.SpecStats(), s.Tokens()
	return r
}

// TestOracleDraftKeepsTheTokens: the oracle drafter proposes the target's
// own continuation, each token wrong with probability 1 − R. At every R,
// greedy and seeded sampling, on every CPU backend, in RAM (one draft per
// pass) and streamed with nothing in RAM (priced depth, and a fixed depth
// of 5), the tokens and every logits row are those of the target alone,
// bit for bit, and with R > 0 the target runs fewer passes than tokens.
// A stop sequence inside the kept drafts leaves the same conversation as
// one token per pass, and the next turn continues it the same.
func TestOracleDraftKeepsTheTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	prompt := []int{3, 14, 15, 92, 65, 35, 89, 79}
	const n = 32
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		for _, place := range []struct {
			name   string
			stream *StreamOptions
			fixed  int
		}{
			{"ram", nil, 0},
			{"streamed", &StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 0, CacheExperts: 0}}, 0},
			{"streamed depth 5", &StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 0, CacheExperts: 0}}, 5},
		} {
			t.Run(place.name, func(t *testing.T) {
				m, err := Open(t.Context(), dir, Options{Backend: be, NoSpec: true, Stream: place.stream})
				require.NoError(t, err)
				defer m.Close()
				for _, o := range []Sampling{{}, {Temperature: 0.9, TopP: 0.95, Seed: 7}} {
					for _, stopAt := range []int{0, 11} {
						if stopAt > 0 && o.Greedy() {
							continue // one stop sequence case per place: sampled
						}
						want := decodeWith(t, m, Draft{}, 0, prompt, o, n, stopAt)
						require.Equal(t, want.stats.Steps, want.stats.Tokens(), "no drafts without a drafter")
						for _, R := range []float64{0, 0.3, 0.6, 0.9, 1} {
							d, err := Draft{Kind: "oracle", Rate: R}.WithAnswer(want.conv, 1)
							require.NoError(t, err)
							got := decodeWith(t, m, d, place.fixed, prompt, o, n, stopAt)
							tag := []any{"R=%g sampling %+v stop at %d", R, o, stopAt}
							require.Equal(t, want.toks, got.toks, tag...)
							require.Equal(t, want.conv, got.conv, tag...)
							require.Equal(t, want.rows, got.rows, tag...)
							st := got.stats
							if R > 0 && (place.stream == nil || place.fixed > 0 || R >= 0.6) {
								require.Less(t, st.TargetPasses(), st.Tokens(), tag...)
							}
							if R == 0 {
								require.Zero(t, st.Accepted, tag...)
							}
							if R == 1 && st.Passes > 0 {
								require.Equal(t, st.Drafted, st.Accepted, tag...)
							}
							if place.stream != nil {
								require.Positive(t, st.Bytes, tag...)
								require.Less(t, st.BytesPerToken()*float64(st.Tokens()), float64(st.Bytes)+1, tag...)
							}
							t.Logf("R=%g %+v stop %d: %d passes (%d verify), %d drafted, %d accepted, %.0f B/token",
								R, o, stopAt, st.TargetPasses(), st.Passes, st.Drafted, st.Accepted, st.BytesPerToken())
						}
					}
				}
			})
		}
	})
}

// openStreamedTiny opens k3-tiny with nothing in RAM and no n-gram
// speculation (drafts come from the session's Draft alone), closed at the
// test's end.
func openStreamedTiny(t *testing.T) *Model {
	t.Helper()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{NoSpec: true,
		Stream: &StreamOptions{Plan: &experts.BudgetPlan{PinnedLayers: 0, CacheExperts: 0}}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// TestDraftResumeReplays: a session that replays a conversation one
// position at a time (the server's resume) and drafts on from there
// decodes what the uninterrupted run decoded.
func TestDraftResumeReplays(t *testing.T) {
	t.Parallel()
	m := openStreamedTiny(t)
	prompt := []int{3, 14, 15, 92, 65, 35}
	o := Sampling{Temperature: 1, TopP: 0.95, Seed: 3}
	want := decodeWith(t, m, Draft{}, 0, prompt, o, 30, 0)
	d, err := Draft{Kind: "oracle", Rate: 0.8}.WithAnswer(want.conv, 2)
	require.NoError(t, err)
	cut := len(prompt) + 12
	s := replayed(t, m, d, want.conv[:cut-1], len(prompt))
	var rest []int
	_, err = s.Generate(t.Context(), want.conv[cut-1:cut], GenerateOptions{MaxNew: 30 - 12, Sampling: o}, collect(&rest))
	require.NoError(t, err)
	require.Equal(t, want.toks[12:], rest)
	require.Positive(t, s.SpecStats().Accepted)
}

func TestSetDraftAfterTheFirstToken(t *testing.T) {
	t.Parallel()
	m := openK3Tiny(t)
	s := m.NewSession()
	_, err := s.Forward(t.Context(), []int{1, 2}, false)
	require.NoError(t, err)
	require.ErrorIs(t, s.SetDraft(Draft{}), ErrDraft)
	_, err = Draft{Kind: "oracle", Rate: 1.5}.WithAnswer(nil, 0)
	require.ErrorIs(t, err, ErrDraft)
	_, err = Draft{Kind: "ngram"}.WithAnswer(nil, 0)
	require.ErrorIs(t, err, ErrDraft, "only the oracle takes an answer")
}

func TestParseDraft(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Draft{"": {Kind: "ngram"}, "ngram": {Kind: "ngram"}, "off": {Kind: "off"},
		"oracle:0.6": {Kind: "oracle", Rate: 0.6}, "oracle:1": {Kind: "oracle", Rate: 1}} {
		got, err := ParseDraft(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"oracle:", "oracle:1.1", "oracle:-0.1", "oracle:x", "eagle"} {
		_, err := ParseDraft(bad)
		require.ErrorIs(t, err, ErrDraft, bad)
		require.True(t, strings.HasPrefix(err.Error(), "--draft"), err.Error())
	}
}

// TestDraftCancelled: a turn cancelled while it drafts returns ctx's
// error, and the conversation replayed into a fresh session continues
// with the target's own tokens.
func TestDraftCancelled(t *testing.T) {
	t.Parallel()
	m := openStreamedTiny(t)
	prompt := []int{3, 14, 15, 92, 65, 35}
	o := Sampling{Temperature: 1, TopP: 0.95, Seed: 9}
	want := decodeWith(t, m, Draft{}, 0, prompt, o, 24, 0)
	d, err := Draft{Kind: "oracle", Rate: 0.9}.WithAnswer(want.conv, 4)
	require.NoError(t, err)
	s := m.NewSession()
	require.NoError(t, s.SetDraft(d))
	s.price.fixed = 4
	ctx, cancel := context.WithCancel(t.Context())
	var got []int
	_, err = s.Generate(ctx, prompt, GenerateOptions{MaxNew: 24, Sampling: o}, func(tok int) error {
		got = append(got, tok)
		if len(got) == 7 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, want.toks[:len(got)], got, "the tokens before the cut are the target's")
	// Resume: the prompt and every token emitted, replayed, then decode on.
	conv := append(append([]int(nil), prompt...), got...)
	r := replayed(t, m, d, conv[:len(conv)-1], len(prompt))
	var rest []int
	_, err = r.Generate(t.Context(), conv[len(conv)-1:], GenerateOptions{MaxNew: 24 - len(got), Sampling: o}, collect(&rest))
	require.NoError(t, err)
	require.Equal(t, want.toks[len(got):], rest)
}

// replayed is a fresh session drafting with d (depth 4) into which conv
// was fed as the server resumes a job: its first n tokens (the prompt) in
// one pass, then each token in its own.
func replayed(t *testing.T, m *Model, d Draft, conv []int, n int) *Session {
	t.Helper()
	s := m.NewSession()
	require.NoError(t, s.SetDraft(d))
	s.price.fixed = 4
	_, err := s.Forward(t.Context(), conv[:n], false)
	require.NoError(t, err)
	for _, tok := range conv[n:] {
		_, err = s.Forward(t.Context(), []int{tok}, false)
		require.NoError(t, err)
	}
	return s
}

// fixedDrafter proposes the same tokens after any prefix, counting calls.
type fixedDrafter struct {
	toks  []int
	calls *int
}

func (fixedDrafter) taps() []int              { return nil }
func (fixedDrafter) observe(int, [][]float32) {}
func (fixedDrafter) reset()                   {}
func (d fixedDrafter) propose(_ context.Context, _ []int, k int) ([]int, error) {
	*d.calls++
	return d.toks[:min(k, len(d.toks))], nil
}

// TestNgramAndDrafterCombine: with n-gram speculation on and a drafter, a
// pass drafts the n-gram's guesses where the history has them (they read
// on through themselves to the depth the pricing sets) and asks the drafter
// where it has none; both are cut at the depth and before a stop token.
func TestNgramAndDrafterCombine(t *testing.T) {
	t.Parallel()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	require.NoError(t, err)
	defer m.Close()
	s := m.NewSession()
	calls := 0
	s.dr = fixedDrafter{[]int{500, 501, 502, 503, 504, 505}, &calls}
	s.price.fixed = 4
	// A history whose last bigram (7, 9) was seen before: the n-gram
	// guesses what followed it, read on, and the drafter is not asked.
	s.hist, s.pending = []int{3, 7, 9, 11, 12, 5, 7, 9}, []int{9}
	d, err := s.drafts(t.Context(), nil, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []int{11, 12, 5, 7}, d)
	require.Zero(t, calls)
	// No repeated bigram: the drafter's guesses.
	s.hist, s.pending = []int{3, 7, 9, 11, 12, 5, 8, 10}, []int{10}
	d, err = s.drafts(t.Context(), nil, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []int{500, 501, 502, 503}, d)
	require.Equal(t, 1, calls)
	// A stop token cuts either.
	d, err = s.drafts(t.Context(), map[int]bool{502: true}, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []int{500, 501}, d)
	s.hist, s.pending = []int{3, 7, 9, 11, 12, 5, 7, 9}, []int{9}
	d, err = s.drafts(t.Context(), map[int]bool{5: true}, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []int{11, 12}, d)
}
