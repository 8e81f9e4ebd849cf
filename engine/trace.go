package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// traceRecord is one line of a router trace: the experts one MoE layer
// selected for one generated token. `deltafin warm` reads these to rank
// experts for fetching and cache warming.
type traceRecord struct {
	Token   int   `json:"token"`   // index of the token in the generation
	Layer   int   `json:"layer"`   // MoE layer number
	Experts []int `json:"experts"` // router order
}

// traceWriter writes a router trace (--trace FILE), one JSON object per line.
// It writes to a temporary file next to the destination and renames it on
// Close, so a reader never sees a half-written trace. Safe for concurrent use.
type traceWriter struct {
	mu   sync.Mutex
	path string
	f    *os.File
	w    *bufio.Writer
	enc  *json.Encoder
	err  error
}

// createTrace starts a trace that will appear at path on Close.
func createTrace(path string) (*traceWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("engine: trace: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	return &traceWriter{path: path, f: f, w: w, enc: json.NewEncoder(w)}, nil
}

// Record appends one line. The first write error sticks and is returned by
// every later call and by Close.
func (t *traceWriter) Record(token, layer int, experts []int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil && t.f == nil {
		t.err = fmt.Errorf("engine: trace %s is closed", t.path)
	}
	if t.err == nil {
		if err := t.enc.Encode(traceRecord{Token: token, Layer: layer, Experts: experts}); err != nil {
			t.err = fmt.Errorf("engine: trace: %w", err)
		}
	}
	return t.err
}

// Close flushes, syncs and renames the trace into place. After an error the
// temporary file is removed and the error returned.
func (t *traceWriter) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return t.err
	}
	f := t.f
	t.f = nil
	err := t.err
	if err == nil {
		err = t.w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), t.path)
	}
	if err != nil {
		os.Remove(f.Name())
		if t.err == nil {
			t.err = fmt.Errorf("engine: trace %s: %w", t.path, err)
		}
		return t.err
	}
	return nil
}
