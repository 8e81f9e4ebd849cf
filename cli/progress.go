package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
)

// progressUI draws the downloader's event stream: progress bars (mpb) on a
// terminal, a line every few seconds otherwise (logs, tests).
type progressUI struct {
	out io.Writer
	tty bool

	mu     sync.Mutex
	p      *mpb.Progress
	total  *mpb.Bar
	files  map[string]*mpb.Bar
	last   atomic.Pointer[downloader.Event] // read by mpb's render goroutine
	lastAt time.Time
	phase  downloader.Phase
}

func newProgressUI(out io.Writer) *progressUI {
	ui := &progressUI{out: out, files: map[string]*mpb.Bar{}}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			ui.tty = true
		}
	}
	return ui
}

// event receives one progress event (called by the downloader, serially).
func (ui *progressUI) event(ev downloader.Event) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.last.Store(&ev)
	if ev.Phase == downloader.PhasePaused && ev.Err != nil {
		fmt.Fprintf(ui.out, "paused: %s\n", app.UserText(ev.Err))
	}
	if !ui.tty {
		if ev.Phase != ui.phase || time.Since(ui.lastAt) > 5*time.Second {
			ui.phase, ui.lastAt = ev.Phase, time.Now()
			fmt.Fprintf(ui.out, "%s\n", describe(ev))
		}
		return
	}
	if ev.Phase == downloader.PhasePlan || ev.Total == 0 {
		return
	}
	if ui.p == nil {
		ui.p = mpb.New(mpb.WithOutput(ui.out), mpb.WithWidth(48), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
		ui.total = ui.p.AddBar(ev.Total, mpb.BarPriority(-1),
			mpb.PrependDecorators(decor.Name("total ", decor.WCSyncSpaceR), decor.CountersKiloByte("% .1f / % .1f", decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return ui.rateETA() })))
	}
	ui.total.SetTotal(ev.Total, false)
	ui.total.SetCurrent(ev.Done)
	for _, f := range ev.Files {
		b, ok := ui.files[f.Name]
		if !ok && (f.State == downloader.FileFetching || f.State == downloader.FileVerifying) {
			{
				b = ui.p.AddBar(f.Total, mpb.BarRemoveOnComplete(),
					mpb.PrependDecorators(decor.Name(f.Name+" ", decor.WCSyncSpaceR), decor.CountersKiloByte("% .1f / % .1f", decor.WCSyncSpace)),
					mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return string(ui.fileState(f.Name)) })))
				ui.files[f.Name] = b
			}
		}
		if b == nil {
			continue
		}
		b.SetCurrent(f.Done)
		if f.State == downloader.FileVerified || f.State == downloader.FilePartial {
			b.SetTotal(-1, true)
		}
	}
}

func (ui *progressUI) rateETA() string {
	ev := ui.last.Load()
	if ev == nil {
		return ""
	}
	if ev.Rate <= 0 {
		return string(ev.Phase)
	}
	return fmt.Sprintf("%s/s  ETA %s  %s", downloader.FormatBytes(int64(ev.Rate)), ev.ETA.Round(time.Second), ev.Phase)
}

func (ui *progressUI) fileState(name string) downloader.FileState {
	ev := ui.last.Load()
	if ev == nil {
		return ""
	}
	for _, f := range ev.Files {
		if f.Name == name {
			return f.State
		}
	}
	return ""
}

func describe(ev downloader.Event) string {
	s := string(ev.Phase)
	if ev.Message != "" {
		s += ": " + ev.Message
	}
	if ev.Total > 0 {
		s += fmt.Sprintf(" %s of %s", downloader.FormatBytes(ev.Done), downloader.FormatBytes(ev.Total))
		if ev.Rate > 0 {
			s += fmt.Sprintf(", %s/s, ETA %s", downloader.FormatBytes(int64(ev.Rate)), ev.ETA.Round(time.Second))
		}
	}
	return s
}

// finish completes or aborts the bars and waits for the last frame.
func (ui *progressUI) finish(err error) {
	ui.mu.Lock()
	p := ui.p
	bars := append([]*mpb.Bar{ui.total}, mapValues(ui.files)...)
	ui.mu.Unlock()
	if p == nil {
		return
	}
	for _, b := range bars {
		if err != nil {
			b.Abort(false)
		} else {
			b.SetTotal(-1, true)
		}
	}
	p.Wait()
}

func mapValues(m map[string]*mpb.Bar) []*mpb.Bar {
	out := make([]*mpb.Bar, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	return out
}
