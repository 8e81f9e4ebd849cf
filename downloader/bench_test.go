package downloader

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// BenchmarkFetch measures a full install of a synthetic 128 MiB shard over
// loopback and reports it against a limit measured in the same run: the
// slower of a plain HTTP GET of the same bytes and writing them to disk as
// Fetch does, plus one sha256 pass (verification follows the transfer).
// ratio = limit time / fetch time; 1 means no overhead.
func BenchmarkFetch(b *testing.B) {
	const size = 128 << 20
	src := b.TempDir()
	name := "model-00001-of-000001.safetensors"
	header := []byte(fmt.Sprintf(`{"w":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}`, size, size))
	data := make([]byte, 8+len(header)+size)
	binary.LittleEndian.PutUint64(data, uint64(len(header)))
	copy(data[8:], header)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 8 + len(header); i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	require.NoError(b, os.WriteFile(filepath.Join(src, name), data, 0o644))
	require.NoError(b, os.WriteFile(filepath.Join(src, "config.json"), []byte(`{}`), 0o644))
	h := hubtest.New(b, src)

	var fetchT, limitT time.Duration
	for b.Loop() {
		// The limit's parts, measured now.
		t0 := time.Now()
		req, err := http.NewRequest(http.MethodGet, h.URL()+"/"+hubtest.Repo+"/resolve/"+hubtest.Revision+"/"+name, nil)
		require.NoError(b, err)
		req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", len(data)-1))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		require.Equal(b, http.StatusPartialContent, resp.StatusCode)
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.NoError(b, err)
		net := time.Since(t0)
		// Disk: the same bytes written the way Fetch writes them (a sparse
		// file, 64 MiB chunks in parallel, 1 MiB writes, fsync per chunk).
		t0 = time.Now()
		f, err := os.Create(filepath.Join(b.TempDir(), "w"))
		require.NoError(b, err)
		require.NoError(b, f.Truncate(int64(len(data))))
		var wg sync.WaitGroup
		for c := 0; c < len(data); c += 64 << 20 {
			wg.Go(func() {
				end := min(c+64<<20, len(data))
				for o := c; o < end; o += 1 << 20 {
					f.WriteAt(data[o:min(o+1<<20, end)], int64(o))
				}
				f.Sync()
			})
		}
		wg.Wait()
		f.Close()
		write := time.Since(t0)
		t0 = time.Now()
		sha256.Sum256(data)
		hash := time.Since(t0)
		limitT += max(net, write) + hash
		b.Logf("net %v write+fsync %v sha256 %v", net, write, hash)

		opts := options(h, b.TempDir())
		opts.ChunkSize, opts.Jobs = 0, 0 // the defaults: 64 MiB, 8 jobs
		t0 = time.Now()
		m, err := Open(opts)
		require.NoError(b, err)
		p, err := m.Plan(b.Context())
		require.NoError(b, err)
		require.NoError(b, m.Fetch(b.Context(), p, p.Work(Full)))
		fetchT += time.Since(t0)
		m.Close()
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(data))/(fetchT.Seconds()/n)/1e6, "fetch-MB/s")
	b.ReportMetric(float64(len(data))/(limitT.Seconds()/n)/1e6, "limit-MB/s")
	b.ReportMetric(limitT.Seconds()/fetchT.Seconds(), "ratio")
}
