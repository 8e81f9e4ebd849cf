package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine/chat"
	"github.com/deltafin/deltafin/engine/tokenizer"
)

func tinyTokenizer(t *testing.T) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load("../testdata/k3-tiny")
	require.NoError(t, err)
	return tok
}

func TestTextPrompt(t *testing.T) {
	tok := tinyTokenizer(t)
	ids, err := textPrompt(tok, "The capital of <|open|>", false, chat.DefaultOptions())
	require.NoError(t, err)
	require.Equal(t, tok.Encode("The capital of <|open|>"), ids)

	ids, err = textPrompt(tok, "Hi <|open|>", true, chat.DefaultOptions())
	require.NoError(t, err)
	text := tok.Decode(ids)
	require.True(t, strings.HasPrefix(text, `<|open|>message role="system" type="thinking-effort"<|sep|>`))
	require.True(t, strings.HasSuffix(text, `<|open|>message role="user"<|sep|>Hi <|open|><|close|>message<|sep|><|end_of_msg|><|open|>message role="assistant"<|sep|><|open|>think<|sep|>`))

	ids, err = textPrompt(tok, "Hi", true, chat.Options{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(tok.Decode(ids), `<|open|>response<|sep|>`))

	_, err = textPrompt(tok, "Hi", true, chat.Options{Thinking: true, Effort: "medium"})
	require.ErrorIs(t, err, chat.ErrEffort)
}

func TestTextPrinter(t *testing.T) {
	tok := tinyTokenizer(t)
	gen := tok.EncodeSpecial("Think 😀.<|close|>think<|sep|><|open|>response<|sep|>Paris.<|close|>response<|sep|><|close|>message<|sep|>")
	cases := []struct {
		name   string
		chat   bool
		color  bool
		ids    []int
		cut    bool
		want   string
		reason string
		answer string
	}{
		{"chat on a terminal", true, true, gen, false, ansiDim + "Think 😀." + ansiReset + "\n\nParis.", "Think 😀.", "Paris."},
		{"chat in a pipe", true, false, gen, false, "Think 😀.\n\nParis.", "Think 😀.", "Paris."},
		{"chat cut while thinking", true, true, gen[:4], true, ansiDim + tok.Decode(gen[:4]) + ansiReset, tok.Decode(gen[:4]), ""},
		{"raw", false, true, tok.Encode("a 😀 b"), true, "a 😀 b", "", ""},
		{"raw cut inside a character", false, false, tok.Encode("a 😀")[:3], true, "a \uFFFD", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			p := newTextPrinter(&out, c.color, tok, c.chat, chat.DefaultOptions())
			for _, id := range c.ids {
				require.NoError(t, p.add(id))
			}
			require.NoError(t, p.finish(c.cut))
			require.Equal(t, c.want, out.String())
			text, r, a := p.result()
			require.Equal(t, tok.Decode(c.ids), text)
			if !c.chat {
				require.Nil(t, r)
				require.Nil(t, a)
				return
			}
			require.Equal(t, c.reason, *r)
			require.Equal(t, c.answer, *a)
		})
	}
}

func TestTextPrinterWriteError(t *testing.T) {
	tok := tinyTokenizer(t)
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.False(t, isTerminal(f))
	require.NoError(t, f.Close()) // writes now fail
	p := newTextPrinter(f, false, tok, false, chat.DefaultOptions())
	require.ErrorContains(t, p.add(tok.Encode("a")[0]), "writing output")
	require.False(t, isTerminal(&bytes.Buffer{}))
}
