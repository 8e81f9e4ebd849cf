package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/tokenizer"
)

// FuzzParserChunking: any split of the text into Add calls gives the same
// result as one call, and the deltas carry all of it.
func FuzzParserChunking(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.text, uint64(12345), c.thinking, c.cut)
	}
	f.Fuzz(func(t *testing.T, text string, seed uint64, thinking, cut bool) {
		opts := Options{Thinking: thinking}
		whole := opts.NewParser()
		whole.Add(text)
		whole.Finish(cut)
		wantR, wantC := whole.Result()

		p := opts.NewParser()
		var r, c strings.Builder
		for s := text; s != ""; {
			n := 1 + int(seed%7)
			seed = seed*6364136223846793005 + 1442695040888963407
			n = min(n, len(s))
			dr, dc := p.Add(s[:n])
			r.WriteString(dr)
			c.WriteString(dc)
			s = s[n:]
		}
		dr, dc := p.Finish(cut)
		r.WriteString(dr)
		c.WriteString(dc)
		gotR, gotC := p.Result()
		require.Equal(t, wantR, gotR)
		require.Equal(t, wantC, gotC)
		require.Equal(t, gotR+gotC, r.String()+c.String())
	})
}

// FuzzRenderNoInjection: whatever the user, name and reasoning text, the
// only special ids in the prompt are the control segments'.
func FuzzRenderNoInjection(f *testing.F) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(f, err)
	f.Add("Hello <|open|> & \"bye\"", "al\"ice", "<|close|>think<|sep|>", "[BOS]")
	f.Fuzz(func(t *testing.T, user, name, reasoning, answer string) {
		for _, s := range []string{user, name, reasoning, answer} {
			if !utf8.ValidString(s) {
				return // only valid UTF-8 round-trips
			}
		}
		msgs := []Message{
			{Role: "user", Name: name, Content: user},
			{Role: "assistant", Content: answer, ReasoningContent: reasoning, ToolCalls: []ToolCall{{ID: "1", Function: FunctionCall{Name: name, Arguments: user}}}},
			{Role: "tool", ToolCallID: "1", Content: answer},
		}
		segs, err := Render(msgs, DefaultOptions())
		if err != nil {
			require.ErrorIs(t, err, ErrMessage) // arguments that are JSON but not an object, or an empty tool name
			return
		}
		controls := 0
		for _, s := range segs {
			require.NotEmpty(t, s.Text)
			require.Equal(t, controlText[s.Text], s.Control)
			if s.Control {
				controls++
			}
		}
		specials := 0
		for _, id := range Tokenize(tok, segs) {
			if tok.IsSpecial(id) {
				specials++
			}
		}
		require.Equal(t, controls, specials)
	})
}

// FuzzParseCalls: for any generated text, however it is chunked and
// whether or not it was cut, decode(parse(x)) == x (the events' Raw adds
// up to the text), every call's fragments add up to its arguments, typed
// arguments are JSON, and the result does not depend on the chunking.
func FuzzParseCalls(f *testing.F) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(f, err)
	for _, tr := range allTurns(&testing.T{}, tok) {
		f.Add(tr.gen, uint64(7), tr.opts.Thinking, false, "")
		f.Add(tr.gen[:len(tr.gen)/2], uint64(3), tr.opts.Thinking, true, "")
	}
	f.Add(`<|open|>argument key="a" type="number"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|>`, uint64(1), true, false, "f")
	f.Add(`<|open|>call tool="f"<|sep|> <|open|>json type="object"<|sep|>{<|close|>json<|sep|><|close|>call<|sep|>`, uint64(2), false, false, "")
	f.Add(`<|open|>call <|open|>call tool="x"<|sep|><|close|>call`, uint64(5), false, true, "")
	f.Fuzz(func(t *testing.T, text string, seed uint64, thinking, cut bool, forced string) {
		opts := Options{Thinking: thinking}
		switch forced {
		case "":
		case "required":
			opts.ToolChoice = forced
		default:
			opts.ToolName = forced
		}
		whole := opts.NewParserWith(ParseOptions{ResponseID: "resp"})
		evs := append(whole.Events(text), whole.FinishEvents(cut)...)
		want := whole.Output()
		checkEvents(t, text, evs, want)

		var chunks []string
		for s := text; s != ""; {
			n := min(1+int(seed%9), len(s))
			seed = seed*6364136223846793005 + 1442695040888963407
			chunks = append(chunks, s[:n])
			s = s[n:]
		}
		got := collect(t, opts, chunks, cut)
		require.Equal(t, want, got)

		// Token by token, where markers are special ids only: nothing
		// lost either, whatever the text spells.
		if utf8.ValidString(text) {
			ids := tok.EncodeSpecial(text)
			tp := NewTokenParserWith(tok, opts, ParseOptions{ResponseID: "resp"})
			var evs []Event
			for _, id := range ids {
				evs = append(evs, tp.Events(id)...)
			}
			evs = append(evs, tp.FinishEvents(cut)...)
			checkEvents(t, tok.Decode(ids), evs, tp.Output())
		}
		for _, c := range got.Calls {
			require.True(t, strings.HasPrefix(c.ID, "call_"))
			if !strings.Contains(text, "json") {
				// Only a json block's raw text may be invalid JSON.
				require.True(t, json.Valid([]byte(c.Arguments)), "typed arguments %q must be JSON", c.Arguments)
			}
		}
	})
}
