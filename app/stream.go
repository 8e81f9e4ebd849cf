package app

import (
	"fmt"
	"path/filepath"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// Stream is the streaming setup for opening one model: pass Options to
// engine.Open (engine.Options.Stream), print the model's Plan, and call Close
// after the model's Close to finish the router trace.
type Stream struct {
	Options *engine.StreamOptions
	trace   *engine.TraceWriter
}

// OpenStream plans streaming from this machine's
// RAM (or --ram-gb), keeps the expert heat histogram in the data directory
// (expert_heat.jsonl, which deltafin warm also reads) and starts the --trace
// file if asked.
//
// fetch makes missing expert ranges present: pass the mirror
// (*downloader.Mirror, from OpenMirror) when the model is a stream install
// opened from the mirror's directory, nil for an all-local checkpoint.
func (c Config) OpenStream(fetch engine.Fetcher) (*Stream, error) {
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return nil, err
	}
	o := &engine.StreamOptions{
		TotalRAM: int64(mem.Total), AvailableRAM: int64(mem.Available),
		HeatPath: filepath.Join(c.DataDir, "expert_heat.jsonl"),
		Fetch:    fetch,
	}
	if c.RAMGB > 0 {
		o.OverrideRAM = int64(c.RAMGB * 1e9)
	}
	s := &Stream{Options: o}
	if c.Trace != "" {
		if s.trace, err = engine.CreateTrace(c.Trace); err != nil {
			return nil, fmt.Errorf("app: %w", err)
		}
		o.Trace = s.trace
	}
	return s, nil
}

// Close finishes the router trace (renaming it into place).
func (s *Stream) Close() error {
	if s.trace == nil {
		return nil
	}
	return s.trace.Close()
}
