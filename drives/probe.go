package drives

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafin/deltafin/internal/directio"
)

// probeChunk is the size of one probe read: the engine's expert reads are
// 4 MiB chunks.
const probeChunk = 4 << 20

// probeDepths are the reads in flight the probe tries.
var probeDepths = []int{1, 2, 4, 8, 16, 32}

// ProbeResult is a probe's pick: the fewest reads in flight within 5% of
// the best bandwidth measured, and that bandwidth.
type ProbeResult struct {
	Readers int
	GBps    float64
	ByDepth map[int]float64 // GB/s per reads in flight
}

// Probe measures the drive: it writes a file of size bytes (default
// 256 MiB) to it, reads it back with direct reads of 4 MiB at 1 to 32 in
// flight, removes it, and records the pick in the manifest (Readers).
func (d *Drive) Probe(ctx context.Context, size int64) (ProbeResult, error) {
	if size <= 0 {
		size = 256 << 20
	}
	size = max(size/probeChunk, 1) * probeChunk
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return ProbeResult{}, fmt.Errorf("drives: %w", err)
	}
	path := filepath.Join(d.dir, "probe.tmp")
	defer os.Remove(path)
	if err := writeProbe(path, size); err != nil {
		return ProbeResult{}, err
	}
	f, err := directio.OpenFile(path)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("drives: %w", err)
	}
	defer f.Close()
	res := ProbeResult{ByDepth: map[int]float64{}}
	best := 0.0
	for _, depth := range probeDepths {
		bw, err := probeRead(ctx, f, size, depth)
		if err != nil {
			return res, err
		}
		res.ByDepth[depth] = bw
		best = max(best, bw)
	}
	for _, depth := range probeDepths {
		if res.ByDepth[depth] >= 0.95*best {
			res.Readers, res.GBps = depth, res.ByDepth[depth]
			break
		}
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	d.mu.RLock()
	m := d.man
	d.mu.RUnlock()
	m.Readers, m.GBps = res.Readers, res.GBps
	if err := m.save(d.dir); err != nil {
		return res, err
	}
	d.mu.Lock()
	d.man = m
	d.mu.Unlock()
	return res, nil
}

func writeProbe(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("drives: probe: %w", err)
	}
	buf := make([]byte, probeChunk)
	for i := range buf {
		buf[i] = byte(i * 131)
	}
	for off := int64(0); off < size && err == nil; off += probeChunk {
		_, err = f.WriteAt(buf, off)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("drives: probe: %w", err)
	}
	return nil
}

// probeRead reads the file once with depth readers and returns GB/s.
func probeRead(ctx context.Context, f *directio.File, size int64, depth int) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, depth)
	start := time.Now()
	for w := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := directio.Buffer(probeChunk)
			for {
				off := (next.Add(1) - 1) * probeChunk
				if off >= size {
					return
				}
				if err := f.ReadAt(ctx, buf, off); err != nil {
					errs[w] = fmt.Errorf("drives: probe: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(size) / time.Since(start).Seconds() / 1e9, nil
}
