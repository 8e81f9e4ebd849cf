package chat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/engine/tokenizer"
)

// On K3's real vocabulary the gold rendering of K3-ARCHITECTURE §7.2 is 38
// segments and 95 tokens, the user's literal <|open|> staying text: the
// kind of fixed constant Moonshot's vendor verifier checks
// usage.prompt_tokens against.
func TestK3GoldPromptCount(t *testing.T) {
	tok, err := tokenizer.Load("../../testdata/k3-tokenizer")
	require.NoError(t, err)
	require.NoError(t, CheckTokenizer(tok))
	msgs := []Message{{Role: "user", Content: "Hello <|open|> & goodbye"}}
	segs, err := Render(msgs, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, segs, 38)
	ids, err := Prompt(tok, msgs, DefaultOptions())
	require.NoError(t, err)
	require.Len(t, ids, 95)
	open, ok := tok.SpecialID(Open)
	require.True(t, ok)
	require.Equal(t, 163_587, open)
	n := 0
	for _, id := range ids {
		if id == open {
			n++
		}
	}
	require.Equal(t, 4, n, "the four structural <|open|> (system, user, assistant, think), none from the user's text")
	require.Equal(t, ids[len(ids)-1], tok.EncodeSpecial(Sep)[0], "the generation prompt ends <|open|>think<|sep|>")
}
