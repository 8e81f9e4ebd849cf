package downloader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/stretchr/testify/require"
)

// once returns a fault that applies f to the first request matching match.
func once(match func(f *fakeFile, start, end int64) bool, f hubtest.Fault) hubtest.Fault {
	var mu sync.Mutex
	done := false
	return func(w http.ResponseWriter, r *http.Request, ff *fakeFile, start, end int64) bool {
		mu.Lock()
		hit := !done && match(ff, start, end)
		if hit {
			done = true
		}
		mu.Unlock()
		return hit && f(w, r, ff, start, end)
	}
}

func corrupt(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
	b := append([]byte(nil), f.Data[start:end]...)
	b[len(b)/2] ^= 0x40
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(b)
	return true
}

func anyShard(f *fakeFile, start, end int64) bool { return isShard(f.Path) && end-start > 1000 }

func TestFaultsEndIdentical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault hubtest.Fault
		opts  func(o *Options)
		hub   func(h *hubtest.Hub)
	}{
		{"connection dropped mid-range", once(anyShard, func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
			w.Header().Set("Content-Length", fmt.Sprint(end-start))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(f.Data[start : start+(end-start)/2])
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}), nil, nil},
		{"500 then success", once(anyShard, func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return true
		}), nil, nil},
		{"503 several times", func() hubtest.Fault {
			var mu sync.Mutex
			n := 0
			return func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
				mu.Lock()
				defer mu.Unlock()
				if n < 3 {
					n++
					http.Error(w, "slow down", http.StatusServiceUnavailable)
					return true
				}
				return false
			}
		}(), nil, nil},
		{"slow server stalls one request", once(anyShard, func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(f.Data[start : start+10])
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
			return true
		}), func(o *Options) { o.StallTimeout = 200 * time.Millisecond }, nil},
		{"trickle slower than the stall timeout per range, faster per byte", once(func(f *fakeFile, start, end int64) bool {
			return end-start == 64<<10
		}, func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
			w.WriteHeader(http.StatusPartialContent)
			for p := start; p < end; p += 2048 {
				w.Write(f.Data[p:min(p+2048, end)])
				http.NewResponseController(w).Flush()
				time.Sleep(50 * time.Millisecond)
			}
			return true
			// 32 writes 50 ms apart: the range takes 1.6 s, longer than the
			// stall timeout, while no gap comes near it even on a loaded
			// 2-core machine (a 5 ms / 100 ms version failed there).
		}), func(o *Options) { o.StallTimeout = time.Second; o.Attempts = 1 }, nil},
		{"CDN URLs expire after 3 uses", nil, nil, func(h *hubtest.Hub) { h.SignedUses = 3 }},
		{"hub ignores Range for small files", nil, nil, func(h *hubtest.Hub) { h.WholeSmallFiles = true }},
		{"slow but steady server", func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			time.Sleep(2 * time.Millisecond)
			return false
		}, nil, nil},
		{"corrupted byte in one data chunk", once(func(f *fakeFile, start, end int64) bool {
			return f.Path == "model-00002-of-000004.safetensors" && start >= 256<<10
		}, corrupt), nil, nil},
		{"corrupted byte in a shard header", once(func(f *fakeFile, start, end int64) bool {
			return f.Path == "model-00002-of-000004.safetensors" && start == 8
		}, corrupt), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newFakeHub(t)
			h.SetFault(tc.fault)
			if tc.hub != nil {
				tc.hub(h)
			}
			dir := t.TempDir()
			opts := options(h, dir)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			setup(t, t.Context(), opts, Full)
			h.RequireIdentical(t, dir)
		})
	}
}

func TestCorruptionEveryTimeIsRefused(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		if f.Path != "model-00003-of-000004.safetensors" || end < int64(len(f.Data)) {
			return false
		}
		b := append([]byte(nil), f.Data[start:end]...)
		b[len(b)-1] ^= 1
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(b)
		return true
	})
	m, err := Open(options(h, t.TempDir()))
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	err = m.Fetch(t.Context(), p, p.Work(Full))
	require.ErrorIs(t, err, ErrChecksum)
	require.Contains(t, err.Error(), "model-00003-of-000004.safetensors")
	n, err := m.Present("model-00003-of-000004.safetensors", 0, int64(len(h.Files["model-00003-of-000004.safetensors"].Data)))
	require.NoError(t, err)
	require.Zero(t, n, "a file that failed its checksum is not kept as present")
}

func TestPersistentServerErrorGivesUp(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		http.Error(w, "down", http.StatusBadGateway)
		return true
	})
	m, err := Open(options(h, t.TempDir()))
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Plan(t.Context())
	require.ErrorContains(t, err, "giving up after 6 attempts")
	require.ErrorContains(t, err, "502")
}

// TestCancelAtRandomPointsResumes cancels transfers at random moments and
// checks that the next run finishes identical without fetching a chunk
// that was complete before.
func TestCancelAtRandomPointsResumes(t *testing.T) {
	// Not parallel: it counts the bytes the hub serves, which the late
	// handlers of cancelled requests skew on a loaded machine.
	h := newFakeHub(t)
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		time.Sleep(time.Millisecond)
		return false
	})
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 6 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(20+rng.IntN(150))*time.Millisecond)
		m, err := Open(options(h, dir))
		require.NoError(t, err)
		p, err := m.Plan(ctx)
		if err == nil {
			mode := Stream
			if i%2 == 1 {
				mode = Full
			}
			err = m.Fetch(ctx, p, p.Work(mode))
		}
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
		m.Close()
	}
	m, err := Open(options(h, dir))
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	before, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	h.WaitIdle() // the earlier runs' last answers are counted before the baseline
	served := h.Served.Load()
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	h.WaitIdle() // the last answer is counted once its handler returns
	require.Equal(t, before.Missing(), h.Served.Load()-served, "exactly the missing bytes are fetched")
	h.RequireIdentical(t, dir)
}

// TestKill9Resumes runs a full transfer in a child process (this test
// binary, re-executed), kills it with SIGKILL at a random point of the
// transfer, twice, and resumes in this process.
func TestKill9Resumes(t *testing.T) {
	// Not parallel: it counts the bytes the hub serves, which the late
	// handlers of cancelled requests skew on a loaded machine.
	h := newFakeHub(t)
	var total int64
	for _, f := range h.Files {
		total += int64(len(f.Data))
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(9, 1)) // fixed: a failure reproduces
	for range 2 {
		// Kill once the hub has sent a random 10-60% of what is left: the
		// first request to start past that point says so, and waits for the
		// kill.
		left := total - h.Served.Load()
		at := h.Served.Load() + left/10 + rng.Int64N(left/2)
		reached := make(chan struct{})
		var once sync.Once
		h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
			if h.Served.Load() >= at {
				once.Do(func() { close(reached) })
				<-r.Context().Done() // the child dies holding this request
				return true
			}
			return false
		})
		cmd := exec.Command(exe, "-test.run=^TestKill9Child$")
		cmd.Env = append(os.Environ(), "DELTAFIN_TEST_CHILD_HUB="+h.URL(), "DELTAFIN_TEST_CHILD_DIR="+dir)
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("the child ended before the kill point: %v", err)
		case <-reached:
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		}
		require.Error(t, <-exited)
	}
	h.SetFault(nil)
	m, err := Open(options(h, dir))
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	before, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	require.Positive(t, before.Present, "the killed runs left completed chunks")
	h.WaitIdle() // the earlier runs' last answers are counted before the baseline
	served := h.Served.Load()
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	h.WaitIdle() // the last answer is counted once its handler returns
	require.Equal(t, before.Missing(), h.Served.Load()-served, "no completed chunk is fetched again")
	h.RequireIdentical(t, dir)
	t.Logf("kill -9 twice at random points: %d of %d bytes kept, %d served in all (%d fetched twice)",
		before.Present, before.Total, h.Served.Load(), h.Served.Load()-before.Total)
}

// TestKill9Child is the child of TestKill9Resumes; run alone it checks
// nothing but still fails when its environment is half set.
func TestKill9Child(t *testing.T) {
	t.Parallel()
	hubURL, dir := os.Getenv("DELTAFIN_TEST_CHILD_HUB"), os.Getenv("DELTAFIN_TEST_CHILD_DIR")
	require.Equal(t, hubURL == "", dir == "", "both or neither of the child variables")
	if hubURL == "" {
		return
	}
	opts := testOptions(hubURL, "", dir)
	opts.Jobs = 2
	if os.Getenv("DELTAFIN_TEST_CHILD_ONE_STREAM") != "" {
		// TestKillEveryMiBKeepsProgress: one stream, chunks larger than any
		// file, durable every 32 KiB.
		opts.Jobs, opts.ChunkSize, opts.CommitEvery = 1, 4<<20, 32<<10
	}
	if os.Getenv("DELTAFIN_TEST_CHILD_SLOW") != "" {
		// TestKillOnASlowLinkLosesSeconds: one stream, the default units
		// of durable progress.
		opts.Jobs, opts.ChunkSize, opts.CommitEvery, opts.CommitInterval = 1, 4<<20, 0, 0
	}
	m, err := Open(opts)
	require.NoError(t, err)
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
}

// TestPauseAndResume pauses a transfer while requests are in flight: they
// are cancelled, every worker then waits at the gate with no request
// outstanding, and Resume completes the transfer identical. Events order it
// (the hub's handler and the gate's count of waiting workers), not sleeps.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	var mu sync.Mutex
	var phases []Phase
	opts := options(h, dir)
	opts.Progress = func(ev Event) {
		mu.Lock()
		phases = append(phases, ev.Phase)
		mu.Unlock()
	}
	m, err := Open(opts)
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)

	// From here every range request waits in the hub until the test lets
	// requests through or the downloader cancels it.
	var hmu sync.Mutex
	handlers := 0 // requests in the hub's handler now
	ended := sync.NewCond(&hmu)
	arrived := make(chan struct{}, 1)
	through := make(chan struct{})
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		hmu.Lock()
		handlers++
		hmu.Unlock()
		defer func() {
			hmu.Lock()
			handlers--
			ended.Broadcast()
			hmu.Unlock()
		}()
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-through:
			return false // served as usual
		case <-r.Context().Done():
			return true // cancelled by the client
		}
	})
	done := make(chan error, 1)
	go func() { done <- m.Fetch(t.Context(), p, p.Work(Full)) }()
	<-arrived
	m.Pause()
	require.True(t, m.Paused())
	// Every worker comes back to the gate and waits there: none has a
	// request outstanding (its request was cancelled, or it never started).
	waitForWaiting(t, &m.gate, opts.Jobs)
	hmu.Lock()
	for handlers > 0 { // the cancelled requests' handlers end
		ended.Wait()
	}
	hmu.Unlock()
	select {
	case err := <-done:
		t.Fatalf("Fetch returned while paused: %v", err)
	default:
	}
	close(through)
	m.Resume()
	require.NoError(t, <-done)
	h.RequireIdentical(t, dir)
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, phases, PhasePaused)
	require.Equal(t, PhaseDone, phases[len(phases)-1])
}

// waitForWaiting returns once n workers wait at g. The timeout only turns a
// gate that never holds its workers into a failure instead of a hang.
func waitForWaiting(t *testing.T, g *gate, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		g.mu.Lock()
		waiting := g.waiting
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		changed := g.changed
		g.mu.Unlock()
		if waiting >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%d of %d workers wait at the gate after 30 s", waiting, n)
		}
	}
}
