package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/server"
)

// answerText is a finished response's answer, as the API returns it.
func answerText(t *testing.T, base, id string) (status, reasoning, answer string) {
	t.Helper()
	code, body := call(t, http.MethodGet, base+"/v1/responses/"+id, "")
	require.Equal(t, http.StatusOK, code, body)
	var r server.Response
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	reasoning, answer = r.Texts()
	return r.Status, reasoning, answer
}

// thinking sets the prompt box's Thinking switch.
func thinking(t *testing.T, ctx context.Context, on bool) {
	t.Helper()
	require.True(t, eval[bool](t, ctx, `(() => { const c = document.querySelector("#thinking"); if (c.checked !== `+strconv.FormatBool(on)+`) c.click(); return c.checked === `+strconv.FormatBool(on)+`; })()`))
}

const lastAnswer = `document.querySelector(".turn:last-child .answer")`

// openAsk opens the ask page and asks prompt with thinking off (every
// token is then answer text), letting n tokens through the gate, and
// waits until they show.
func openAsk(t *testing.T, s *served, prompt string, n int) context.Context {
	t.Helper()
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/"))
	until(t, ctx, "the page's script", `document.querySelector("#jobs li") !== null`)
	thinking(t, ctx, false)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#prompt-text"), prompt), chromedp.Click(chromedp.CSS("#send")))
	s.gate.allow(n)
	until(t, ctx, "the first tokens", lastAnswer+` && `+lastAnswer+`.dataset.status === "in_progress" && JSON.parse(localStorage.getItem("deltafin:" + `+lastAnswer+`.dataset.response) || "{}").seq > 0 && document.querySelector(".turn:last-child .md").textContent.length > 0`)
	until(t, ctx, "the answer in the list of answers in progress", `[...document.querySelectorAll("#jobs .job")].some(li => li.textContent.includes(`+strconv.Quote(prompt)+`) && li.textContent.includes("`+strconv.Itoa(n)+` tokens"))`)
	return ctx
}

// Ask, read the answer as it streams, reload in the middle and read on,
// then Stop another one.
func TestAskStreamReloadStop(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	ctx := openAsk(t, s, "Why is the sky blue?", 6)
	require.True(t, eval[bool](t, ctx, `!document.querySelector("#stop").hidden`), "Stop shows while an answer runs")
	rid := eval[string](t, ctx, lastAnswer+`.dataset.response`)
	before := eval[string](t, ctx, `JSON.parse(localStorage.getItem("deltafin:`+rid+`")).answer`)
	seq := eval[int](t, ctx, `JSON.parse(localStorage.getItem("deltafin:`+rid+`")).seq`)
	require.NotEmpty(t, before)
	shot(t, ctx, "ask-streaming")

	// Reload mid-answer: what had arrived shows at once, and the page asks
	// the server only for the events after it.
	do(t, ctx, chromedp.Reload())
	until(t, ctx, "the answer after the reload", lastAnswer+` && `+lastAnswer+`.dataset.response === "`+rid+`"`)
	s.gate.allow(10)
	until(t, ctx, "more tokens after the reload", `JSON.parse(localStorage.getItem("deltafin:`+rid+`") || '{"seq":0}').seq > `+strconv.Itoa(seq))
	s.gate.open()
	until(t, ctx, "the answer's end", lastAnswer+`.dataset.status === "completed"`)
	require.Eventually(t, func() bool {
		return slices.Contains(s.requests(), "GET /api/responses/"+rid+"/stream?starting_after="+strconv.Itoa(seq)+" 200")
	}, 30*time.Second, 10*time.Millisecond, "the page resumed after event %d: %v", seq, s.requests())

	// The page kept exactly the server's answer: nothing lost or doubled
	// across the reload.
	status, _, answer := answerText(t, s.base, rid)
	require.Equal(t, "completed", status)
	require.True(t, strings.HasPrefix(answer, before), "the answer starts with what was read before the reload")
	convs, err := s.store.Conversations()
	require.NoError(t, err)
	require.Len(t, convs, 1)
	require.Eventually(t, func() bool {
		c, err := s.store.Conversation(convs[0].ID)
		return err == nil && c.Turns[0].Status == "completed"
	}, 30*time.Second, 10*time.Millisecond)
	c, err := s.store.Conversation(convs[0].ID)
	require.NoError(t, err)
	require.Equal(t, answer, c.Turns[0].Answer)
	require.Equal(t, "Why is the sky blue?", c.Title)

	// Thinking on: the reasoning shows collapsed and dimmed.
	thinking(t, ctx, true)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "And at sunset?"),
		chromedp.Click(chromedp.CSS("#send")))
	until(t, ctx, "the second answer", `document.querySelectorAll(".turn").length === 2 && `+lastAnswer+`.dataset.status === "completed"`)
	require.True(t, eval[bool](t, ctx, `(() => { const d = document.querySelector(".turn:last-child details.reasoning"); return !d.hidden && !d.open && d.querySelector(".text").textContent.length > 0; })()`),
		"the reasoning is there, collapsed")
	_, reasoning, _ := answerText(t, s.base, eval[string](t, ctx, lastAnswer+`.dataset.response`))
	require.Equal(t, reasoning, eval[string](t, ctx, `document.querySelector(".turn:last-child details.reasoning .text").textContent`))
	shot(t, ctx, "ask")
}

// Stop cancels an answer in the middle; the page says so and keeps what
// was written.
func TestStop(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	ctx := openAsk(t, s, "Count to a million", 3)
	rid := eval[string](t, ctx, lastAnswer+`.dataset.response`)
	do(t, ctx, chromedp.Click(chromedp.CSS("#stop")))
	until(t, ctx, "the answer cancelled", lastAnswer+`.dataset.status === "cancelled"`)
	until(t, ctx, "Stop hidden", `document.querySelector("#stop").hidden`)
	status, _, _ := answerText(t, s.base, rid)
	require.Equal(t, "cancelled", status)
}

// TestJobsListNamesAndPlacesAPIJobs: answers started over the API are
// listed by their first words, not their resp_… ids; one waiting behind
// another says "waiting, 1 ahead"; and no ETA shows before a rate has been
// measured.
func TestJobsListNamesAndPlacesAPIJobs(t *testing.T) {
	t.Parallel()
	s := serve(t, "")
	for _, input := range []string{"Count the stars over the harbour tonight please", "Name three rivers"} {
		code, body := call(t, http.MethodPost, s.base+"/v1/responses", `{"model":"deltafin-demo","input":`+strconv.Quote(input)+`,"background":true,"max_output_tokens":8}`, "Content-Type", "application/json")
		require.Equal(t, http.StatusOK, code, body)
	}
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(s.base+"/"))
	until(t, ctx, "both jobs listed", `document.querySelectorAll("#jobs .job").length === 2`)
	until(t, ctx, "the first by its words", `document.querySelector("#jobs .job").textContent.includes("Count the stars over the harbour tonight please")`)
	until(t, ctx, "the second waiting behind it", `document.querySelectorAll("#jobs .job")[1].textContent.includes("Name three rivers") && document.querySelectorAll("#jobs .job")[1].textContent.includes("waiting, 1 ahead")`)
	text := eval[string](t, ctx, `document.querySelector("#jobs").textContent`)
	require.NotContains(t, text, "resp_")
	require.NotContains(t, text, "left", "no ETA before a rate is measured")
	shot(t, ctx, "jobs-waiting")
	s.gate.open()
}
