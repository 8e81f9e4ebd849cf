package chat

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/tokenizer"
)

const canonical = "Let me think. a<b.<|close|>think<|sep|><|open|>response<|sep|>The answer is 4 <|open|x.<|close|>response<|sep|><|close|>message<|sep|>"

type parseCase struct {
	name          string
	thinking      bool
	text          string
	cut           bool
	wantReasoning string
	wantContent   string
}

var parseCases = []parseCase{
	{"canonical", true, canonical, false, "Let me think. a<b.", "The answer is 4 <|open|x."},
	{"stop right after the answer", true, "r<|close|>think<|sep|><|open|>response<|sep|>c", false, "r", "c"},
	{"cut before the marker is reasoning", true, "still thinking <|close|>thi", true, "still thinking <|close|>thi", ""},
	{"cut after the think close", true, "done<|close|>think<|sep|>", true, "done", ""},
	{"no markers at all is content", true, "Just an answer.", false, "", "Just an answer."},
	{"empty", true, "", false, "", ""},
	{"thinking off", false, "Hi there.<|close|>response<|sep|><|close|>message<|sep|>", false, "", "Hi there."},
	{"thinking off, end of message", false, "Hi<|end_of_msg|>", false, "", "Hi"},
	{"text after the end of the message is kept", false, "Hi<|close|>message<|sep|> more", false, "", "Hi more"},
	{"a malformed tool block is content", true, "r<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|open|>tools<|sep|>x", false, "r", "okx"},
}

// feed runs text through a parser in the given chunks and checks that the
// streamed deltas add up to the result.
func feed(t *testing.T, c parseCase, chunks []string) {
	opts := Options{Thinking: c.thinking}
	p := opts.NewParser()
	var r, co strings.Builder
	for _, ch := range chunks {
		dr, dc := p.Add(ch)
		r.WriteString(dr)
		co.WriteString(dc)
	}
	dr, dc := p.Finish(c.cut)
	r.WriteString(dr)
	co.WriteString(dc)
	gotR, gotC := p.Result()
	require.Equal(t, c.wantReasoning, gotR, "reasoning")
	require.Equal(t, c.wantContent, gotC, "content")
	if c.thinking && c.wantReasoning == "" && c.wantContent != "" && !strings.Contains(c.text, "<|") {
		// Streamed as reasoning, reclassified at the end.
		require.Equal(t, c.wantContent, r.String())
		return
	}
	require.Equal(t, gotR, r.String())
	require.Equal(t, gotC, co.String())
}

func TestParserWhole(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) { feed(t, c, []string{c.text}) })
	}
}

func TestParserStreamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			// One byte at a time, then random chunkings.
			feed(t, c, strings.Split(c.text, ""))
			for range 50 {
				var chunks []string
				s := c.text
				for s != "" {
					n := 1 + rng.IntN(min(len(s), 12))
					chunks = append(chunks, s[:n])
					s = s[n:]
				}
				feed(t, c, chunks)
			}
		})
	}
}

// From token ids: markers arrive as special tokens with the tag word as an
// ordinary token between them.
func TestTokenParser(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			ids := tok.EncodeSpecial(c.text)
			tp := NewTokenParser(tok, Options{Thinking: c.thinking})
			var r, co strings.Builder
			for _, id := range ids {
				dr, dc := tp.Add(id)
				r.WriteString(dr)
				co.WriteString(dc)
			}
			dr, dc := tp.Finish(c.cut)
			r.WriteString(dr)
			co.WriteString(dc)
			gotR, gotC := tp.Result()
			require.Equal(t, c.wantReasoning, gotR)
			require.Equal(t, c.wantContent, gotC)
			require.Equal(t, gotR+gotC, r.String()+co.String(), "the streamed deltas hold the same text")
		})
	}
	// The control token only comes from the special id: "<|open|>" as
	// plain tokens inside the answer is ordinary text to the model, but
	// decodes to the same text, so the text-level split treats it alike.
	open, _ := tok.SpecialID(Open)
	require.NotContains(t, tok.Encode("<|open|>"), open)
}

func TestParserAfterFinish(t *testing.T) {
	p := NewParser()
	p.Add("abc")
	p.Finish(true)
	r, c := p.Add("more")
	require.Empty(t, r+c)
	r, c = p.Finish(true)
	require.Empty(t, r+c)
	gotR, _ := p.Result()
	require.Equal(t, "abc", gotR)
}

// Thinking holds while the tokens are in the think channel: through every
// reasoning token, ending with K3's end-of-thinking marker (the parser
// reads a marker once its last token is in), before the answer's first
// token; never for a prompt rendered with thinking off.
func TestTokenParserThinking(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	tp := NewTokenParser(tok, Options{Thinking: true})
	require.True(t, tp.Thinking(), "a thinking prompt ends in the think channel")
	reasoning := tok.Encode("Let me think it over.")
	head := tok.EncodeSpecial("Let me think it over." + Close + "think" + Sep + Open + "response" + Sep)
	ids := append(head, tok.Encode("Yes.")...)
	var states []bool
	for _, id := range ids {
		tp.Add(id)
		states = append(states, tp.Thinking())
	}
	for i := range reasoning {
		require.True(t, states[i], "reasoning token %d", i)
	}
	require.False(t, states[len(head)-1], "the answer's channel is open")
	require.False(t, NewTokenParser(tok, Options{}).Thinking(), "thinking off")
}
