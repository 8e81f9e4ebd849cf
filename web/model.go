package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/server"
)

// sample is one reading of /model's history: the download and warming
// rates, and the engine's disk counters with the tokens generated, from
// which the page draws rates over time and bytes per token.
type sample struct {
	T            float64 `json:"t"` // Unix seconds
	DownloadRate float64 `json:"download_rate"`
	WarmRate     float64 `json:"warm_rate"`
	DiskBytes    int64   `json:"disk_bytes"`
	DiskIdle     float64 `json:"disk_idle"` // seconds without a read in flight, since open
	Tokens       int64   `json:"tokens"`
}

// samplesKept bounds the history: at the page's poll of 2 s, 20 minutes.
const samplesKept = 600

// modelView is /api/model's answer.
type modelView struct {
	ID      string              `json:"id"`
	Demo    bool                `json:"demo"`
	Info    *engine.Info        `json:"info,omitempty"`
	Plan    *experts.BudgetPlan `json:"plan,omitempty"`
	Stats   *engine.Stats       `json:"stats,omitempty"`
	App     *AppStatus          `json:"app,omitempty"`
	Layers  []int               `json:"layers"`
	Experts int                 `json:"experts"`
	// Cells is one character per expert, layer by layer: '0' missing,
	// '1' on disk, '2' in the RAM cache; Heat one digit 0-9 per expert,
	// relative to the hottest.
	Cells   string              `json:"cells"`
	Heat    string              `json:"heat"`
	History []sample            `json:"history"`
	Recent  []server.Generation `json:"recent"`
	Decode  float64             `json:"decode_tokens_per_second"`
}

// firstSample is the history's start, taken when the page is made: the
// first answers then show in the graph and the bytes per token even
// before a page was open.
func (w *Web) firstSample() {
	s := sample{T: float64(time.Now().UnixMilli()) / 1e3, Tokens: w.opts.Server.Queue().Generated}
	if m := w.opts.Engine; m != nil {
		st := m.Stats()
		s.DiskBytes, s.DiskIdle = st.DiskBytes(), st.DiskIdle.Seconds()
	}
	w.samples = append(w.samples, s)
}

func (w *Web) model(c echo.Context) error {
	v := modelView{ID: w.opts.Server.ModelID(), Demo: w.opts.Demo, Layers: []int{}}
	s := sample{T: float64(time.Now().UnixMilli()) / 1e3}
	if ctl := w.opts.Control; ctl != nil {
		st := ctl.Status()
		v.App = &st
		s.DownloadRate, s.WarmRate = st.Download.Rate, st.Warm.Rate
	}
	qs := w.opts.Server.Queue()
	v.Recent, v.Decode, s.Tokens = qs.Recent, qs.DecodeRate, qs.Generated
	if m := w.opts.Engine; m != nil {
		info, plan, stats := m.Info(), m.Plan(), m.Stats()
		v.Info, v.Plan, v.Stats = &info, &plan, &stats
		s.DiskBytes, s.DiskIdle = stats.DiskBytes(), stats.DiskIdle.Seconds()
		v.Layers, v.Experts, v.Cells, v.Heat = w.expertCells(m)
	}
	w.mu.Lock()
	if n := len(w.samples); n == 0 || s.T-w.samples[n-1].T >= 1 {
		if n == samplesKept {
			w.samples = w.samples[1:]
		}
		w.samples = append(w.samples, s)
	}
	v.History = append([]sample(nil), w.samples...)
	w.mu.Unlock()
	return c.JSON(http.StatusOK, v)
}

// cellsEvery bounds how often the picture is read again: K3's 82,432
// experts each ask the mirror whether they are on disk.
const cellsEvery = 5 * time.Second

// expertCells is the picture, read at most every cellsEvery.
func (w *Web) expertCells(m *engine.Model) (layers []int, experts int, place, heat string) {
	w.cellsMu.Lock()
	defer w.cellsMu.Unlock()
	if w.cells.at.IsZero() || time.Since(w.cells.at) >= cellsEvery {
		em := m.ExpertMap()
		w.cells.layers, w.cells.experts = em.Layers, em.Experts
		w.cells.place, w.cells.heat = cells(em)
		w.cells.at = time.Now()
	}
	c := w.cells
	return c.layers, c.experts, c.place, c.heat
}

// cells encodes the expert map compactly: K3 has 92 × 896 experts.
func cells(em engine.ExpertMap) (place, heat string) {
	var p, h strings.Builder
	p.Grow(len(em.OnDisk))
	h.Grow(len(em.OnDisk))
	var top float32
	for _, x := range em.Heat {
		top = max(top, x)
	}
	for i := range em.OnDisk {
		switch {
		case em.Cached[i]:
			p.WriteByte('2')
		case em.OnDisk[i]:
			p.WriteByte('1')
		default:
			p.WriteByte('0')
		}
		d := 0
		if top > 0 && em.Heat[i] > 0 {
			d = 1 + int(em.Heat[i]/top*8.999)
		}
		h.WriteByte(byte('0' + min(d, 9)))
	}
	return p.String(), h.String()
}

// NoApp is what /model says where no app runs (deltafin serve): this
// process neither downloads nor warms, and what to run instead.
const NoApp = "deltafin serve does not download or warm the model: stop it and run deltafin setup --stream (or --full) in a terminal, " +
	"or start the menu-bar app (deltafin), whose menu and /model page download, pause and warm"

// act is a /model button: the menu's action, through the app.
func (w *Web) act(c echo.Context) error {
	if w.opts.Control == nil {
		return problem(c, http.StatusNotImplemented, "no_app", "%s", NoApp)
	}
	switch a := c.Param("action"); a {
	case ActDownloadStream, ActDownloadFull, ActPause, ActResume, ActUpgrade, ActWarmOn, ActWarmOff:
		if err := w.opts.Control.Act(a); err != nil {
			return problem(c, http.StatusConflict, "action", "%s", userText(err))
		}
		return c.JSON(http.StatusOK, w.opts.Control.Status())
	default:
		return problem(c, http.StatusNotFound, "action", "no action %q (download-stream, download-full, pause, resume, upgrade, warm-on, warm-off)", a)
	}
}

// checkDownload is the disk check before a download, for the page's
// confirmation: the menu's question, with its figures.
func (w *Web) checkDownload(c echo.Context) error {
	if w.opts.Control == nil {
		return problem(c, http.StatusNotImplemented, "no_app", "%s", NoApp)
	}
	text, err := w.opts.Control.CheckDownload(c.Request().Context(), c.Param("mode"))
	if err != nil {
		return problem(c, http.StatusConflict, "check", "%s", userText(err))
	}
	return c.JSON(http.StatusOK, map[string]string{"text": text})
}
