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

// OpenStream plans streaming for the model in modelDir from this machine's
// RAM (or --ram-gb), keeps the expert heat histogram in the data directory
// (heat/<model directory name>.heat) and starts the --trace file if asked.
func (c Config) OpenStream(modelDir string, fetch engine.Fetcher) (*Stream, error) {
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return nil, err
	}
	o := &engine.StreamOptions{
		TotalRAM: int64(mem.Total), AvailableRAM: int64(mem.Available),
		HeatPath: filepath.Join(c.DataDir, "heat", filepath.Base(filepath.Clean(modelDir))+".heat"),
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
