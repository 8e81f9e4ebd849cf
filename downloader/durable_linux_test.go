package downloader

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pacedFault serves every CDN range itself in 16 KiB flushed pieces and
// counts what it sent. Once armed, the first piece at or past the kill
// point closes reached and the request then waits for the client to die;
// held says which bytes it sent of that request.
type pacedFault struct {
	// rate, when set, paces the pieces to this many bytes per second (a
	// slow link).
	rate    int64
	sent    atomic.Int64
	mu      sync.Mutex
	killAt  int64 // 0: disarmed
	reached chan struct{}
	held    struct {
		file string
		data []byte
		off  int64
	}
}

func (p *pacedFault) arm(after int64) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killAt = p.sent.Load() + after
	p.reached = make(chan struct{})
	return p.reached
}

func (p *pacedFault) disarm() {
	p.mu.Lock()
	p.killAt = 0
	p.mu.Unlock()
}

func (p *pacedFault) serve(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(f.Data)))
	w.Header().Set("Content-Length", fmt.Sprint(end-start))
	w.WriteHeader(http.StatusPartialContent)
	for pos := start; pos < end; {
		p.mu.Lock()
		kill := p.killAt > 0 && p.sent.Load() >= p.killAt
		if kill {
			p.held.file, p.held.data, p.held.off = f.Path, f.Data[start:pos], start
			close(p.reached)
			p.killAt = 0
		}
		p.mu.Unlock()
		if kill {
			<-r.Context().Done() // the child dies holding this request
			return true
		}
		e := min(pos+16<<10, end)
		n, err := w.Write(f.Data[pos:e])
		p.sent.Add(int64(n))
		if err != nil {
			return true
		}
		http.NewResponseController(w).Flush()
		pos = e
		if p.rate > 0 {
			time.Sleep(time.Duration(int64(n) * int64(time.Second) / p.rate)) // the link's speed, not an ordering
		}
	}
	return true
}

// TestKillEveryMiBKeepsProgress kills a one-stream transfer whose chunks
// are whole shards every 1 MiB the hub sends: each run must keep what it
// wrote except the last unit of durable progress (CommitEvery, 32 KiB here),
// so the runs make progress and few bytes are fetched twice. With durable
// progress only per chunk, no run would finish a shard and every kill
// would lose its whole MiB.
func TestKillEveryMiBKeepsProgress(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	var lfs int64
	for _, f := range h.Files {
		if f.LFS {
			lfs += int64(len(f.Data))
		}
	}
	pf := &pacedFault{}
	h.SetFault(pf.serve)
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	const kills, every, commit = 5, 1 << 20, 32 << 10
	var kept []int64
	for range kills {
		reached := pf.arm(every)
		cmd := exec.Command(exe, "-test.run=^TestKill9Child$")
		cmd.Env = append(os.Environ(), "DELTAFIN_TEST_CHILD_HUB="+h.URL(), "DELTAFIN_TEST_CHILD_DIR="+dir, "DELTAFIN_TEST_CHILD_ONE_STREAM=1")
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("the child ended before the kill point: %v", err)
		case <-reached:
			// Kill once the child has written what it was sent (not while
			// it sits in a socket buffer), but for the part that fills no
			// whole read buffer (CommitEvery bytes from the request's
			// start) and waits in the child's memory.
			written := len(pf.held.data) / commit * commit
			waitForBytes(t, filepath.Join(dir, pf.held.file), pf.held.data[:written], pf.held.off)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		}
		require.Error(t, <-exited)
		m, err := Open(options(h, dir))
		require.NoError(t, err)
		p, err := m.Plan(t.Context())
		require.NoError(t, err)
		tot, err := m.Totals(p.Work(Full))
		require.NoError(t, err)
		m.Close()
		kept = append(kept, tot.Present)
	}
	pf.disarm()
	m, err := Open(options(h, dir))
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Plan(t.Context())
	require.NoError(t, err)
	require.NoError(t, m.Fetch(t.Context(), p, p.Work(Full)))
	h.RequireIdentical(t, dir)
	twice := pf.sent.Load() - lfs
	t.Logf("%d kills, one every %d KiB sent: bytes kept after each %v; %d of %d shard bytes fetched twice (%.1f KiB per kill, CommitEvery %d KiB)",
		kills, every>>10, kept, twice, lfs, float64(twice)/kills/1024, commit>>10)
	for i := 1; i < len(kept); i++ {
		require.Greater(t, kept[i], kept[i-1], "run %d made progress", i+1)
	}
	// Per kill: the unit written and not yet durable, and the read buffer.
	require.LessOrEqual(t, twice, int64(kills*2*commit), "a kill loses less than one unit of durable progress per stream")
}

// waitForBytes returns once path holds want at off, woken by inotify
// whenever the file is written (the writer is another process).
func waitForBytes(t *testing.T, path string, want []byte, off int64) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(fd)
	_, err = unix.InotifyAddWatch(fd, path, unix.IN_MODIFY)
	require.NoError(t, err)
	got := make([]byte, len(want))
	ev := make([]byte, 4096)
	for {
		f, err := os.Open(path)
		require.NoError(t, err)
		_, err = f.ReadAt(got, off)
		f.Close()
		require.NoError(t, err)
		if bytes.Equal(got, want) {
			return
		}
		_, err = unix.Read(fd, ev) // blocks until the next write
		require.NoError(t, err)
	}
}

// TestKillOnASlowLinkLosesSeconds kills a one-stream transfer from a hub
// that sends 300 kB/s, with the default units of durable progress (8 MiB,
// 2 s): at that rate 8 MiB is 28 s of transfer, so durable progress by
// bytes alone would lose everything the request had sent (here all of it,
// the shards being smaller than 8 MiB). By time as well, a kill loses at
// most CommitInterval of transfer: under 2 s × 300 kB/s, plus a piece.
func TestKillOnASlowLinkLosesSeconds(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	const rate = 300_000
	pf := &pacedFault{rate: rate}
	h.SetFault(pf.serve)
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	present := func() int64 {
		m, err := Open(options(h, dir))
		require.NoError(t, err)
		defer m.Close()
		p, err := m.Plan(t.Context())
		require.NoError(t, err)
		tot, err := m.Totals(p.Work(Full))
		require.NoError(t, err)
		return tot.Present
	}
	var lost []int64
	for range 2 {
		before, sentBefore := present(), pf.sent.Load()
		reached := pf.arm(1_000_000) // about 3.3 s of transfer
		cmd := exec.Command(exe, "-test.run=^TestKill9Child$")
		cmd.Env = append(os.Environ(), "DELTAFIN_TEST_CHILD_HUB="+h.URL(), "DELTAFIN_TEST_CHILD_DIR="+dir, "DELTAFIN_TEST_CHILD_SLOW=1")
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
		sent := pf.sent.Load() - sentBefore
		kept := present() - before
		lost = append(lost, sent-kept)
		require.Less(t, sent-kept, int64(2*rate+64<<10), "a kill loses at most CommitInterval of transfer (sent %d, kept %d)", sent, kept)
	}
	t.Logf("kills at %d kB/s: bytes lost per kill %v (CommitEvery 8 MiB, CommitInterval 2 s)", rate/1000, lost)
}
