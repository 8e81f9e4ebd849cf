package experts

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/internal/directio"
)

// benchModel writes one layer of 48 K3-sized experts (842 MB) once per run.
func benchModel(b *testing.B) (string, map[ckpt.ExpertID]ckpt.ExpertSpan) {
	dir := b.TempDir()
	name := "model-00001-of-00001.safetensors"
	writeSyntheticShard(b, filepath.Join(dir, name), syntheticExperts(1, 48, 3072, 3584), 5)
	f, err := os.Open(filepath.Join(dir, name))
	require.NoError(b, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(b, err)
	h, err := safetensors.Read(f, st.Size())
	require.NoError(b, err)
	spans, err := ckpt.IndexExperts(name, h)
	require.NoError(b, err)
	return dir, spans
}

// BenchmarkExpertStoreLayer reads a layer's 16 selected K3 experts through
// the store (no cache, page cache bypassed) and reports its throughput as a
// ratio to plain parallel O_DIRECT preads of the same covering ranges,
// measured in the same run.
func BenchmarkExpertStoreLayer(b *testing.B) {
	dir, spans := benchModel(b)
	var ids [3][]int
	for i, id := range slices.SortedFunc(maps.Keys(spans), ckpt.ExpertID.Compare) {
		ids[i/16] = append(ids[i/16], id.Expert)
	}
	raw := func(sel []int) {
		var wg sync.WaitGroup
		for _, e := range sel {
			sp := spans[ckpt.ExpertID{Layer: 1, Expert: e}]
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, direct, err := directio.Open(filepath.Join(dir, sp.Shard), directio.Direct)
				require.NoError(b, err)
				defer f.Close()
				lo, hi := directio.AlignDown(sp.Offset), directio.AlignUp(sp.Offset+sp.Size)
				buf := directio.Buffer(int(hi - lo))
				_, err = directio.ReadFull(int(f.Fd()), buf, lo, direct)
				require.NoError(b, err)
			}()
		}
		wg.Wait()
	}
	s, err := Open(b.Context(), Options{Dir: dir, Spans: spans, Mode: directio.Direct})
	require.NoError(b, err)
	defer s.Close()
	store := func(sel []int) {
		batch, err := s.Acquire(b.Context(), 1, sel)
		require.NoError(b, err)
		for i := range sel {
			_, err := batch.Wait(b.Context(), i)
			require.NoError(b, err)
		}
		batch.Release()
	}
	b.SetBytes(16 * ckpt.ExpertSpanBytes)
	var rawTime, storeTime time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		t0 := time.Now()
		raw(ids[i%3])
		rawTime += time.Since(t0)
		b.StartTimer()
		t0 = time.Now()
		store(ids[(i+1)%3])
		storeTime += time.Since(t0)
	}
	b.ReportMetric(rawTime.Seconds()/storeTime.Seconds(), "of-raw-pread")
	b.ReportMetric(float64(b.N*16*ckpt.ExpertSpanBytes)/storeTime.Seconds()/1e9, "GB/s")
}
