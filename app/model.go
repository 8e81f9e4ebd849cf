package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/drives"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/sysinfo"
	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/tokenizer"
)

// ModelRef names the model OpenModel opens.
type ModelRef struct {
	// Dir is the model directory (config.json, the safetensors shards and,
	// for text, tiktoken.model).
	Dir string
	// Mirror, when set, is the mirror whose directory Dir is: the engine
	// reads through it, so a stream install fetches missing experts from the
	// hub on demand. Nil for a plain local checkpoint.
	Mirror *downloader.Mirror
	// NeedTokenizer refuses a directory without a tokenizer before any
	// weight is read (the server and --prompt need one; --ids does not).
	NeedTokenizer bool
	// Log receives the warnings of opening (a --ram-gb above what is free,
	// an expert drive skipped): the command's log, so they reach the log
	// file. Nil: slog.Default().
	Log *slog.Logger
}

// Model is an opened model with everything opened for it: the engine's
// model, its tokenizer, and the streaming setup (RAM plan, expert heat
// histogram, router trace). Close closes them in order.
type Model struct {
	*engine.Model
	// Tokenizer is nil when the directory has none and NeedTokenizer was
	// not set.
	Tokenizer *tokenizer.Tokenizer
	// Dir is ModelRef.Dir.
	Dir string
	// Approximate is set when the weights are not the published ones (the
	// int8 spine): callers say so wherever the output is shown.
	Approximate string
	// Drafter names the drafter the model drafts with ("" for none).
	Drafter string
	drives  []*drives.Drive // the expert drives it reads from (drives.go)
	// folderMirror is the mirror OpenModel opened for a --model folder
	// that a mirror wrote (folder.go); closed with the model.
	folderMirror *downloader.Mirror
	stopWatch    func() // stops the memory monitor (memwatch.go), or nil
}

// OpenModel is the one way every entry point (deltafin run, deltafin serve,
// the menu bar's server) opens a model, so each honours the same Config:
// the compute backend (DELTAFIN_KERNELS), n-gram speculation
// (DELTAFIN_SPEC), the spine precision (--spine), the RAM plan (--ram-gb,
// else this machine's memory), the expert heat histogram kept in the data
// directory, and the router trace (--trace).
//
// Everything cheap is checked before any weight is read: --ram-gb against
// this machine's memory, config.json, the tokenizer files (present and
// parseable) and the backend name; then the engine checks the config, every
// shard's header against its file's size, the index and every tensor
// against the config (engine.Open) before it reads a weight.
func OpenModel(ctx context.Context, cfg Config, ref ModelRef) (*Model, error) {
	log := ref.Log
	if log == nil {
		log = slog.Default()
	}
	ref.Log = log // every path of the open logs to it (folder.go, drives.go)
	if cfg.RAMGB > 0 {
		mem, err := sysinfo.ReadMemory()
		if err != nil {
			return nil, err
		}
		warning, err := checkRAM(cfg.RAMGB, mem)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			log.Warn(warning)
		}
	}
	if _, err := os.Stat(filepath.Join(ref.Dir, "config.json")); err != nil {
		return nil, fmt.Errorf("%w: %s has no config.json", ErrNoModel, ref.Dir)
	}
	tok, err := tokenizer.Load(ref.Dir)
	switch {
	case err != nil && (ref.NeedTokenizer || !errors.Is(err, tokenizer.ErrMissing)):
		return nil, fmt.Errorf("app: the model's tokenizer: %w", err)
	case err != nil:
		tok = nil
	}
	backend, err := kernels.ByName(cfg.Kernels)
	if err != nil {
		return nil, err
	}
	stream, err := streamOptions(cfg)
	if err != nil {
		return nil, err
	}
	m := &Model{Tokenizer: tok, Dir: ref.Dir}
	// --draft off turns n-gram off; the oracle drafts alone, set per
	// session by run (it needs the answer first).
	draft, err := engine.ParseDraft(cfg.Draft)
	if err != nil {
		return nil, err
	}
	eo := engine.Options{Backend: backend, Stream: stream, NoSpec: !cfg.Spec || draft.Kind != "ngram"}
	// A folder a mirror wrote is read through presence (folder.go).
	if eo.OpenSource, m.folderMirror, err = openFolder(ctx, cfg, ref); err != nil {
		return nil, err
	}
	stream.OpenDrives = func(_ context.Context, spans map[ckpt.ExpertID]ckpt.ExpertSpan) ([]experts.Drive, error) {
		var err error
		if m.drives, err = openDrives(cfg, spans, log); err != nil {
			return nil, err
		}
		out := make([]experts.Drive, len(m.drives))
		for i, d := range m.drives {
			out[i] = d
		}
		return out, nil
	}
	if cfg.Spine == "int8" {
		eo.SpineInt8 = engine.SpineInt8Dir(ref.Dir)
		m.Approximate = fmt.Sprintf("spine: int8 copy in %s (approximate: NOT the exact K3 output)", eo.SpineInt8)
	}
	// The model drafter drafts beside n-gram (--draft ngram, the default);
	// --draft off and the oracle leave it out.
	if draft.Kind == "ngram" {
		if eo.Draft, err = withDrafter(ctx, cfg, draft, ref.Dir, backend, log); err != nil {
			if m.folderMirror != nil {
				m.folderMirror.Close()
			}
			return nil, err
		}
		m.Drafter = eo.Draft.String()
	}
	if m.Model, err = engine.Open(ctx, ref.Dir, eo); err != nil {
		for _, d := range m.drives {
			d.Close()
		}
		if m.folderMirror != nil {
			m.folderMirror.Close()
		}
		return nil, fmt.Errorf("app: open model: %w", err)
	}
	return m, nil
}

// ErrRAM is CheckRAM's error: --ram-gb asks for more memory than the
// machine has.
var ErrRAM = errors.New("--ram-gb is more than this machine's RAM")

// CheckRAM refuses a --ram-gb above the machine's physical memory before
// anything is loaded: the plan would pin more weights than fit, and loading
// them would end in the out-of-memory killer.
func CheckRAM(cfg Config) error {
	if cfg.RAMGB <= 0 {
		return nil
	}
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return err
	}
	_, err = checkRAM(cfg.RAMGB, mem)
	return err
}

// checkRAM holds --ram-gb to the machine's memory: above the physical RAM
// it is refused; above what is available now (other programs hold the
// rest) it is allowed, with a warning to show, since the plan would pin
// weights the system must first free memory for.
func checkRAM(ramGB float64, mem sysinfo.Memory) (warning string, err error) {
	total, avail := float64(mem.Total)/1e9, float64(mem.Available)/1e9
	switch {
	case ramGB > total:
		return "", fmt.Errorf("%w: --ram-gb %g, and this machine has %.1f GB (leave --ram-gb out to plan for what is available)", ErrRAM, ramGB, total)
	case ramGB > avail:
		return fmt.Sprintf("--ram-gb %g is more than the %.1f GB available now (of %.1f GB): the system will have to free memory for the pinned weights; leave --ram-gb out to plan for what is available", ramGB, avail, total), nil
	}
	return "", nil
}

// PasteableAddr is a listener's address as a person on this machine can
// paste it into a browser or a client: a wildcard host (0.0.0.0, ::) becomes
// 127.0.0.1.
func PasteableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// streamOptions plans streaming from this machine's RAM (or --ram-gb), keeps
// the expert heat histogram in the data directory (expert_heat.jsonl, which
// deltafin warm also reads) and the --trace file if asked (the engine puts
// it in place when the model closes). A stream install's missing bytes are
// fetched through the mirror's Sources (MirrorSource), which the engine asks
// to Ensure a range before it reads.
func streamOptions(c Config) (*engine.StreamOptions, error) {
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return nil, err
	}
	o := &engine.StreamOptions{
		TotalRAM: int64(mem.Total), AvailableRAM: int64(mem.Available),
		HeatPath: filepath.Join(c.DataDir, "expert_heat.jsonl"), TracePath: c.Trace,
	}
	if c.RAMGB > 0 {
		o.OverrideRAM = int64(c.RAMGB * 1e9)
	}
	return o, nil
}
