package web_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/server/servertest"
)

// TestJobsListSaysThinking: while a scripted K3 answer thinks, the page's
// list of answers says "thinking… N tokens" with the server's count, the
// one behind it "waiting, 1 ahead"; once K3 ends its thinking the list
// counts the answer's tokens.
func TestJobsListSaysThinking(t *testing.T) {
	t.Parallel()
	probe := serve(t, "") // the demo's tokenizer and model id
	tok := probe.model.Tokenizer
	out, thought, answerAt := servertest.K3Turn(tok, "Light scatters off the air.", "Rayleigh scattering.")
	m := servertest.NewPaced(probe.gate.Info(), out)
	s := serveModel(t, "", t.TempDir(), m)
	for _, input := range []string{"Why is the sky blue?", "And the sunset?"} {
		code, body := call(t, http.MethodPost, s.base+"/v1/responses", `{"model":"deltafin-demo","input":`+strconv.Quote(input)+`,"background":true}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusOK, code, body)
	}
	m.Advance(thought)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/"))
	first, second := `document.querySelectorAll("#jobs .job")[0]`, `document.querySelectorAll("#jobs .job")[1]`
	until(t, ctx, "both listed", `document.querySelectorAll("#jobs .job").length === 2`)
	until(t, ctx, "the first thinking", first+`.textContent.includes("Why is the sky blue?") && `+first+`.textContent.includes("thinking… `+strconv.Itoa(thought)+` tokens")`)
	until(t, ctx, "the second waiting", second+`.textContent.includes("And the sunset?") && `+second+`.textContent.includes("waiting, 1 ahead")`)
	shot(t, ctx, "jobs-thinking")
	m.Advance(answerAt + 2 - thought)
	until(t, ctx, "the first answering", first+`.textContent.includes("`+strconv.Itoa(answerAt+2)+` tokens") && !`+first+`.textContent.includes("thinking")`)
	go m.Run(t.Context()) // the rest of both answers
	until(t, ctx, "both done", `document.querySelectorAll("#jobs .job").length === 0`)
}
