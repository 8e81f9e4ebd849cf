package app

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
)

func TestInstallPauseResume(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *hubtest.File, start, end int64) bool {
		time.Sleep(2 * time.Millisecond)
		return false
	})
	cfg := hubConfig(t, h)
	var mu sync.Mutex
	var last downloader.Event
	in, err := StartInstall(t.Context(), cfg, InstallOptions{
		Mode:      downloader.Auto,
		Headroom:  1,
		ChunkSize: 128 << 10,
		Progress: func(ev downloader.Event) {
			mu.Lock()
			last = ev
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	require.Equal(t, downloader.Full, in.Mode)
	time.Sleep(30 * time.Millisecond)
	in.Pause()
	require.True(t, in.Paused())
	select {
	case <-in.Done():
		t.Fatal("the install ended while paused")
	case <-time.After(100 * time.Millisecond):
	}
	in.Resume()
	require.NoError(t, in.Wait())
	h.RequireIdentical(t, cfg.ModelDir())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, downloader.PhaseDone, last.Phase)
	require.Equal(t, last.Total, last.Done)
	for _, f := range last.Files {
		require.Equal(t, downloader.FileVerified, f.State, f.Name)
	}
}

func TestInstallRefusesWithTheShortfall(t *testing.T) {
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	_, err := StartInstall(t.Context(), cfg, InstallOptions{Mode: downloader.Full, Headroom: 1 << 60})
	require.ErrorIs(t, err, downloader.ErrNoSpace)
	require.Contains(t, err.Error(), "more for full mode")
	// The mirror was closed: a second attempt can open it.
	_, err = StartInstall(t.Context(), cfg, InstallOptions{Mode: downloader.Full, Headroom: 1 << 60})
	require.ErrorIs(t, err, downloader.ErrNoSpace)
}
