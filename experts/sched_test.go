package experts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/internal/directio"
)

// gatedDrive is an expert drive over replicas written here, whose reads
// announce their expert and then wait for a release: the tests order
// events with channels, not sleeps.
type gatedDrive struct {
	name    string
	reps    map[ckpt.ExpertID]Replica
	started chan ckpt.ExpertID
	release chan struct{}
}

func (g *gatedDrive) Name() string          { return g.name }
func (g *gatedDrive) Readers() int          { return 1 }
func (g *gatedDrive) Corrupt(ckpt.ExpertID) {}
func (g *gatedDrive) Replica(id ckpt.ExpertID) (Replica, bool) {
	r, ok := g.reps[id]
	return r, ok
}

type gatedSource struct {
	ckpt.Source
	g    *gatedDrive
	byAt map[int64]ckpt.ExpertID // replica offset → expert
}

func (s gatedSource) ReadAt(ctx context.Context, p []byte, off int64) error {
	s.g.started <- s.byAt[directio.AlignDown(off)] // a whole-expert read starts within its first block
	select {
	case <-s.g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Source.ReadAt(ctx, p, off)
}

// newGatedDrive copies every expert of spans (ReplicaRange, zero-padded)
// into one file and serves it through a gate.
func newGatedDrive(t *testing.T, name, dir string, spans map[ckpt.ExpertID]ckpt.ExpertSpan) *gatedDrive {
	g := &gatedDrive{name: name, reps: map[ckpt.ExpertID]Replica{}, started: make(chan ckpt.ExpertID, 64), release: make(chan struct{})}
	path := filepath.Join(t.TempDir(), "replicas")
	f, err := os.Create(path)
	require.NoError(t, err)
	byAt := map[int64]ckpt.ExpertID{}
	var at int64
	for id, sp := range spans {
		b, err := os.ReadFile(filepath.Join(dir, sp.Shard))
		require.NoError(t, err)
		lo, hi := ReplicaRange(sp)
		buf := make([]byte, hi-lo)
		copy(buf, b[lo:min(hi, int64(len(b)))])
		_, err = f.WriteAt(buf, at)
		require.NoError(t, err)
		g.reps[id] = Replica{Offset: at, CRC32C: SpanCRC(b[sp.Offset:sp.End()])}
		byAt[at] = id
		at += directio.AlignUp(hi - lo)
	}
	require.NoError(t, f.Close())
	src, err := ckpt.OpenFile(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { src.(*ckpt.FileSource).Close() })
	for id, r := range g.reps {
		r.Source = gatedSource{src, g, byAt}
		g.reps[id] = r
	}
	return g
}

// While one drive's only reader is busy, the other drive takes the next
// queued read: neither waits while a read it holds is queued.
func TestNoDriveIdlesWhileAnotherHasAQueue(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{2}, 4)
	a, b := newGatedDrive(t, "a", dir, spans), newGatedDrive(t, "b", dir, spans)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Mode: directio.Buffered, Readers: 2, ChunkBytes: 1 << 20,
		Drives: []Drive{a, b}, MirrorLast: true})
	require.NoError(t, err)
	defer s.Close()
	batch, err := s.Acquire(t.Context(), 2, []int{0, 1, 2, 3})
	require.NoError(t, err)
	defer batch.Release()
	first := map[ckpt.ExpertID]bool{<-a.started: true, <-b.started: true}
	require.Len(t, first, 2, "both drives read at once, each a different expert")
	close(a.release)
	close(b.release)
	for i := range 4 {
		got, err := batch.Wait(t.Context(), i)
		require.NoError(t, err)
		require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 2, Expert: i}]), got)
	}
	st := s.Stats()
	require.Zero(t, st.Drives[0].Bytes, "the mirror read nothing: the drives hold every expert")
	require.Equal(t, int64(4), st.Drives[1].Reads+st.Drives[2].Reads)
}

// A demand read queued after a prefetch is read before it.
func TestDemandReadsGoBeforePrefetches(t *testing.T) {
	t.Parallel()
	dir, spans := writeTinyModel(t, []int{2, 3}, 4)
	a := newGatedDrive(t, "a", dir, spans)
	s, err := Open(t.Context(), Options{Dir: dir, Spans: spans, Mode: directio.Buffered, Readers: 2, ChunkBytes: 1 << 20,
		Drives: []Drive{a}, MirrorLast: true})
	require.NoError(t, err)
	defer s.Close()
	s.Prefetch(3, []int{0, 1})
	require.Equal(t, ckpt.ExpertID{Layer: 3, Expert: 0}, <-a.started, "the drive's one reader takes the first prefetch")
	batch, err := s.Acquire(t.Context(), 2, []int{2})
	require.NoError(t, err)
	defer batch.Release()
	a.release <- struct{}{}
	require.Equal(t, ckpt.ExpertID{Layer: 2, Expert: 2}, <-a.started, "the demand read overtakes the queued prefetch")
	a.release <- struct{}{}
	got, err := batch.Wait(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, spanBytes(t, dir, spans[ckpt.ExpertID{Layer: 2, Expert: 2}]), got)
	require.Equal(t, ckpt.ExpertID{Layer: 3, Expert: 1}, <-a.started)
	close(a.release)
}
