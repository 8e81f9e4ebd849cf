package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Until the downloader (issue 7) and the server (issue 8) land, the App is
// driven by these small real implementations: a downloader that copies the
// k3-tiny fixture into the data directory in throttled chunks (resuming
// what is there), a warmer that counts experts, and an HTTP server on
// loopback.

// copyDownloader installs src into dst. Stream mode copies the metadata
// (everything but the shards), full mode everything; the mode reached is
// recorded in dst/.install.
type copyDownloader struct {
	src, dst string
	chunk    int64
	delay    time.Duration // per chunk, so progress is visible
	fail     error         // returned instead of downloading, when set
}

func (d *copyDownloader) files(mode DownloadMode) ([]string, int64, error) {
	entries, err := os.ReadDir(d.src)
	if err != nil {
		return nil, 0, err
	}
	var names []string
	var total int64
	for _, e := range entries {
		if mode == ModeStream && strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, 0, err
		}
		names = append(names, e.Name())
		total += info.Size()
	}
	sort.Strings(names)
	return names, total, nil
}

func (d *copyDownloader) Installed(context.Context) (InstallState, error) {
	b, err := os.ReadFile(filepath.Join(d.dst, ".install"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return InstallState{}, nil
	case err != nil:
		return InstallState{}, err
	case string(b) == "full":
		return InstallState{Mode: InstallFull, ExpertsCached: 320, ExpertsTotal: 320}, nil
	}
	return InstallState{Mode: InstallStream, ExpertsCached: 32, ExpertsTotal: 320}, nil
}

func (d *copyDownloader) Download(ctx context.Context, mode DownloadMode, progress func(Progress)) error {
	if d.fail != nil {
		return d.fail
	}
	names, total, err := d.files(mode)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.dst, 0o755); err != nil {
		return err
	}
	var done int64
	start := time.Now()
	for _, name := range names {
		in, err := os.Open(filepath.Join(d.src, name))
		if err != nil {
			return err
		}
		out, err := os.OpenFile(filepath.Join(d.dst, name), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			in.Close()
			return err
		}
		err = d.copyFile(ctx, in, out, &done, total, start, progress)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return writeFileAtomic(filepath.Join(d.dst, ".install"), []byte(mode.String()), 0o644)
}

func (d *copyDownloader) copyFile(ctx context.Context, in *os.File, out *os.File, done *int64, total int64, start time.Time, progress func(Progress)) error {
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	*done += have
	if _, err := in.Seek(have, io.SeekStart); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.CopyN(out, in, d.chunk)
		*done += n
		rate := float64(*done) / max(time.Since(start).Seconds(), 1e-3)
		progress(Progress{Done: *done, Total: total, Rate: rate, ETA: time.Duration(float64(total-*done) / rate * float64(time.Second))})
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		time.Sleep(d.delay)
	}
}

// countingWarmer "fetches" experts one step at a time; interrupted runs
// resume where they stopped.
type countingWarmer struct {
	mu      sync.Mutex
	done    int
	total   int
	step    time.Duration
	started chan struct{} // receives when a run starts, if not nil
}

const expertBytes = 17_547_264

func (w *countingWarmer) Warm(ctx context.Context, progress func(Progress)) (WarmResult, error) {
	if w.started != nil {
		select {
		case w.started <- struct{}{}:
		default:
		}
	}
	var r WarmResult
	for {
		w.mu.Lock()
		left := w.done < w.total
		if left {
			w.done++
			r.Experts++
			r.Bytes += expertBytes
		}
		p := Progress{Done: int64(w.done) * expertBytes, Total: int64(w.total) * expertBytes}
		w.mu.Unlock()
		if !left {
			return r, nil
		}
		progress(p)
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(w.step):
		}
	}
}

// httpServer serves /health on a loopback port; demo shows in the body.
type httpServer struct {
	mu  sync.Mutex
	srv *http.Server
}

func (s *httpServer) Start(ctx context.Context, demo bool) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ok demo=%v\n", demo)
	})}
	go srv.Serve(ln)
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	return "http://" + ln.Addr().String(), nil
}

func (s *httpServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}
