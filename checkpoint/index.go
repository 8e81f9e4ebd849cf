package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// IndexFile maps tensor names to shards in a sharded checkpoint.
const IndexFile = "model.safetensors.index.json"

// ErrTruncated reports a shard that ends inside a routed expert.
var ErrTruncated = errors.New("checkpoint: shard truncated")

// A Shard is one opened safetensors file of a checkpoint, its header parsed.
type Shard struct {
	Name   string // base name in the model directory, for errors
	Src    Source
	Header *safetensors.Header
}

// An Index is a checkpoint directory read as far as reading no weight goes:
// its shards opened and their headers parsed. It is the one parse both the
// engine (which validates it against the config) and the expert store's
// users without a model (drives, bench) start from; on the full K3 it takes
// about a second, so it is done once per open.
type Index struct {
	Shards []*Shard
	// Entries are model.safetensors.index.json's, nil for a single
	// model.safetensors.
	Entries []safetensors.IndexEntry
	// Prefix is TextPrefix when the checkpoint uses Moonshot's multimodal
	// wrapper (some tensor carries it), else empty.
	Prefix string
}

// OpenIndex opens the shards named by model.safetensors.index.json in dir,
// or its single model.safetensors, through open, and parses their headers on
// every core (K3: 96 of about 1 MB each). A header the parser rejects is
// explained, where the file ends inside a routed expert, by the expert it
// cuts (ErrTruncated). The first error in file order is the one reported.
func OpenIndex(ctx context.Context, dir string, open OpenSource) (*Index, error) {
	if open == nil {
		open = OpenFile
	}
	files, entries, err := shardFiles(dir)
	if err != nil {
		return nil, err
	}
	ix := &Index{Entries: entries}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			ix.Close()
			return nil, err
		}
		src, err := open(ctx, filepath.Join(dir, f))
		if err != nil {
			ix.Close()
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ix.Shards = append(ix.Shards, &Shard{Name: f, Src: src})
	}
	errs := make([]error, len(ix.Shards))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ix.Shards)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ix.Shards); i = int(next.Add(1) - 1) {
				s := ix.Shards[i]
				var err error
				if s.Header, err = safetensors.Read(readerAt{ctx, s.Src}, s.Src.Size()); err != nil {
					if errs[i] = diagnoseTruncation(ctx, s.Name, s.Src); errs[i] == nil {
						errs[i] = fmt.Errorf("%s: %v", s.Name, err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			ix.Close()
			return nil, err
		}
	}
	for _, s := range ix.Shards {
		if slices.ContainsFunc(s.Header.Tensors, func(t safetensors.Tensor) bool { return strings.HasPrefix(t.Name, TextPrefix) }) {
			ix.Prefix = TextPrefix
			break
		}
	}
	return ix, nil
}

// Experts finds the routed MXFP4 experts in every shard (IndexExperts over
// each header's text tensors: in the multimodal wrapper the vision tower's
// are left out).
func (ix *Index) Experts() (map[ExpertID]ExpertSpan, error) {
	out := map[ExpertID]ExpertSpan{}
	for _, s := range ix.Shards {
		text := s.Header
		if ix.Prefix != "" && slices.ContainsFunc(s.Header.Tensors, func(t safetensors.Tensor) bool { return !strings.HasPrefix(t.Name, ix.Prefix) }) {
			text = &safetensors.Header{DataStart: s.Header.DataStart}
			for _, t := range s.Header.Tensors {
				if strings.HasPrefix(t.Name, ix.Prefix) {
					text.Tensors = append(text.Tensors, t)
				}
			}
		}
		spans, err := IndexExperts(s.Name, text)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, spans)
	}
	return out, nil
}

// Sources returns the shards' Sources by name.
func (ix *Index) Sources() map[string]Source {
	m := make(map[string]Source, len(ix.Shards))
	for _, s := range ix.Shards {
		m[s.Name] = s.Src
	}
	return m
}

// Close closes the shards' Sources that have a Close method.
func (ix *Index) Close() error {
	var first error
	for _, s := range ix.Shards {
		if c, ok := s.Src.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// shardFiles lists the checkpoint's files and, when sharded, the index.
func shardFiles(dir string) ([]string, []safetensors.IndexEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
			return nil, nil, fmt.Errorf("%s has neither %s nor model.safetensors", dir, IndexFile)
		}
		return []string{"model.safetensors"}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	index, err := safetensors.ParseIndex(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", IndexFile, err)
	}
	if len(index) == 0 {
		return nil, nil, fmt.Errorf("%s has an empty weight_map", IndexFile)
	}
	set := map[string]bool{}
	for _, e := range index {
		f := e.File
		if set[f] {
			continue
		}
		if f != filepath.Base(f) || !strings.HasSuffix(f, ".safetensors") {
			return nil, nil, fmt.Errorf("%s names shard %q, want a .safetensors file in the model directory", IndexFile, f)
		}
		set[f] = true
	}
	return slices.Sorted(maps.Keys(set)), index, nil
}

// diagnoseTruncation explains a shard whose header the parser rejected: if
// the file ends inside a routed expert, the error names that expert and its
// bytes rather than whichever tensor the parser met first. It returns nil
// when the file is not cut inside an expert. It reads under the open's ctx:
// a stream install's header may be fetched from the hub.
func diagnoseTruncation(ctx context.Context, name string, src Source) error {
	var prefix [8]byte
	if err := src.ReadAt(ctx, prefix[:], 0); err != nil {
		return nil
	}
	n, err := safetensors.HeaderLength(prefix[:], src.Size())
	if err != nil {
		return nil
	}
	buf := make([]byte, n)
	if err := src.ReadAt(ctx, buf, 8); err != nil {
		return nil
	}
	// Trust the offsets as if the file were whole, to see what it cuts.
	h, err := safetensors.Parse(buf, math.MaxInt64/2)
	if err != nil {
		return nil
	}
	spans, err := IndexExperts(name, h)
	if err != nil {
		return nil
	}
	if id, ok := FirstTruncated(spans, map[string]int64{name: src.Size()}); ok {
		return TruncatedError(id, spans[id], src.Size())
	}
	return nil
}

// FirstTruncated finds an expert that runs past the end of its shard (sizes
// by shard name), preferring the one the end of the file cuts through (the
// others lie wholly beyond it).
func FirstTruncated(spans map[ExpertID]ExpertSpan, sizes map[string]int64) (ExpertID, bool) {
	var found ExpertID
	ok := false
	for _, id := range slices.SortedFunc(maps.Keys(spans), ExpertID.Compare) {
		sp := spans[id]
		size := sizes[sp.Shard]
		if sp.Offset+sp.Size <= size {
			continue
		}
		if sp.Offset < size {
			return id, true
		}
		if !ok || sp.Offset < spans[found].Offset {
			found, ok = id, true
		}
	}
	return found, ok
}

// TruncatedError says that shard sp.Shard, size bytes long, ends inside
// expert id (ErrTruncated).
func TruncatedError(id ExpertID, sp ExpertSpan, size int64) error {
	return fmt.Errorf("%w: %s ends at byte %d, inside %s (bytes %d to %d); the download is incomplete or the file was cut",
		ErrTruncated, sp.Shard, size, id, sp.Offset, sp.Offset+sp.Size)
}
