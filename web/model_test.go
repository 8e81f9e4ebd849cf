package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The model page on the demo model, as the app serves it: the install
// state, the graph and the picture of the experts with one cell per
// expert.
func TestModelPage(t *testing.T) {
	t.Parallel()
	a, base, _ := startApp(t, t.TempDir())
	// One answer first: the expert cache, the heat and the recent answers
	// then have something to show. Greedy, so that it is the same 8 tokens
	// every run: a drawn seed could sample the end of the answer earlier.
	code, body := call(t, http.MethodPost, base+"/v1/responses", `{"model":"deltafin-demo","input":"Hello","max_output_tokens":8,"temperature":0}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusOK, code, body)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/model"))
	until(t, ctx, "the status line", `document.querySelector("#line").textContent.includes("demo model")`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#line").textContent`), a.State().ServerAddr)

	// k3-tiny: its own layers × experts, every one on disk.
	code, body = call(t, http.MethodGet, base+"/api/model", "")
	require.Equal(t, http.StatusOK, code, body)
	var view struct {
		Layers  []int
		Experts int
	}
	require.NoError(t, json.Unmarshal([]byte(body), &view))
	layers, experts := len(view.Layers), view.Experts
	require.Positive(t, layers)
	require.Positive(t, experts)
	cells := layers * experts
	until(t, ctx, "the picture", `document.querySelector("#cells").dataset.cells === "`+strconv.Itoa(cells)+`"`)
	// Every cell is painted: sample each one's centre.
	painted := eval[int](t, ctx, `(() => { const c = document.querySelector("#cells"), k = Number(c.dataset.scale), E = Number(c.dataset.experts), L = Number(c.dataset.layers);
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let n = 0;
		for (let y = 0; y < L; y++) for (let x = 0; x < E; x++) { const p = ((y * k + (k >> 1)) * c.width + x * k + (k >> 1)) * 4; if (d[p + 3] === 255) n++; }
		return n; })()`)
	require.Equal(t, cells, painted, "one painted cell per expert")
	scale := eval[int](t, ctx, `Number(document.querySelector("#cells").dataset.scale)`)
	require.Equal(t, experts*scale, eval[int](t, ctx, `document.querySelector("#cells").width`))
	require.Equal(t, layers*scale, eval[int](t, ctx, `document.querySelector("#cells").height`))
	require.Equal(t, "100% of "+strconv.Itoa(cells)+" · demo", eval[string](t, ctx, `document.querySelector("#disk-share-text").textContent`),
		"the demo is complete on disk")

	// The graph: a line per rate, with the samples taken so far.
	until(t, ctx, "two samples", `Number(document.querySelector("#graph").dataset.points) >= 2`)
	require.Equal(t, 3, eval[int](t, ctx, `document.querySelectorAll("#graph polyline").length`))
	require.True(t, eval[bool](t, ctx, `[...document.querySelectorAll("#graph polyline")].every(p => p.getAttribute("points").split(" ").length >= 2)`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#plan").textContent`), "Pinned layers")
	until(t, ctx, "the recent answer", `document.querySelectorAll("#recent tr td").length === 4 && document.querySelector("#recent tr td:nth-child(2)").textContent === "8"`)

	// Nothing to pause, resume, upgrade or warm on the demo: the buttons
	// are the menu's entries, disabled as they are.
	for _, id := range []string{"act-pause", "act-resume", "act-upgrade", "act-warm"} {
		require.True(t, eval[bool](t, ctx, `document.getElementById("`+id+`").disabled`), id)
	}
	shot(t, ctx, "model")
}
