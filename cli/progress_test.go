package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

func TestProgressBarsDrawTheEventStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tty  bool
		want string
	}{
		{"terminal: mpb bars", true, "total"},
		{"log: one line per phase", false, "download"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
			cfg := hubConfig(t, h)
			var buf bytes.Buffer
			ui := newProgressUI(&buf)
			ui.tty = tc.tty
			m, p, err := app.OpenPlan(t.Context(), cfg, downloader.Options{ChunkSize: 64 << 10, Progress: ui.event})
			require.NoError(t, err)
			defer m.Close()
			err = m.Fetch(t.Context(), p, p.Work(downloader.Full))
			ui.finish(err)
			require.NoError(t, err)
			require.Contains(t, buf.String(), tc.want)
			require.Contains(t, buf.String(), "5.9 MB")
		})
	}
}
