package servertest

import (
	"context"
	"net"
	"slices"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/server"
	"github.com/deltafin/deltafin/tokenizer"
)

// K3Turn is the tokens of one K3 answer that thinks reasoning, then says
// answer, and ends its message: out for NewPaced, thought the reasoning's
// length (its tokens come first) and answerAt where the answer's tokens
// start (after the markers closing the thinking).
func K3Turn(tok *tokenizer.Tokenizer, reasoning, answer string) (out []int, thought, answerAt int) {
	out = tok.Encode(reasoning)
	thought = len(out)
	out = append(slices.Clone(out), tok.EncodeSpecial(chat.Close+"think"+chat.Sep+chat.Open+"response"+chat.Sep)...)
	answerAt = len(out)
	out = append(out, tok.Encode(answer)...)
	out = append(out, tok.EncodeSpecial(chat.Close+"response"+chat.Sep+chat.Close+"message"+chat.Sep+chat.EndOfMsg)...)
	return out, thought, answerAt
}

// Serve serves m with tok on a loopback port (default options, no memo,
// so every request reaches m) until the test ends, and returns the server
// and its base URL.
func Serve(t testing.TB, m server.Model, tok *tokenizer.Tokenizer) (*server.Server, string) {
	t.Helper()
	opts := server.DefaultOptions()
	opts.MemoEntries = 0
	s, err := server.New(opts, m, tok)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, "http://" + ln.Addr().String()
}
