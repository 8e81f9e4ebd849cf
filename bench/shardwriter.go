package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
)

// fillKind says how synthetic bytes are shaped so that kernels reading them
// meet finite, K3-like values: random MXFP4 codes, e8m0 scales in a 2^-7..2^0
// window (the real checkpoint keeps each matrix's scales in a 16-value
// window), BF16/F32 values of magnitude about 2^-7.
type fillKind uint8

const (
	fillRaw   fillKind = iota // any byte (MXFP4 packed codes)
	fillScale                 // e8m0 bytes 120..127
	fillBF16                  // bfloat16 ±[2^-7, 2^-6)
	fillF32                   // float32 ±[2^-7, 2^-6)
	// fillALog is K3's KDA A_log: a flat float32 [head_dim] with one decay
	// rate per head (fillF32) in its first k3KDAHeads entries and exact
	// zeros after them, the padding the engine refuses to see non-zero.
	fillALog
)

// A synthTensor is one tensor of a synthetic shard, in physical order.
type synthTensor struct {
	name  string
	dtype string // "BF16", "F32", "U8"
	shape []int64
	fill  fillKind
}

func (t synthTensor) size() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= d
	}
	return n * safetensors.DTypeSize(t.dtype)
}

// shardHeader encodes a safetensors header for tensors laid out back to back
// in the given order (safetensors.Encode). It returns the header bytes (with
// the 8-byte length prefix) and each tensor's absolute offset.
func shardHeader(tensors []synthTensor) ([]byte, []int64) {
	ts := make([]safetensors.Tensor, len(tensors))
	for i, t := range tensors {
		ts[i] = safetensors.Tensor{Name: t.name, DType: t.dtype, Shape: t.shape}
	}
	h := safetensors.Encode(ts)
	offs := make([]int64, len(ts))
	for i, t := range ts {
		offs[i] = t.Offset
	}
	return h, offs
}

// shardChunk is the unit of synthetic generation: each chunk's bytes depend
// only on (seed, chunk index), so an interrupted file resumes at its last
// whole chunk and a rerun writes the same bytes.
const shardChunk = 8 << 20

// writeSyntheticShard creates path with the given tensors filled with
// pseudo-random bytes. It writes path+".partial", resumes one left by an
// interrupted run, fsyncs and renames, so path exists only when complete.
// The written pages are dropped from the page cache as it goes: the file is
// meant to be read cold.
func writeSyntheticShard(ctx context.Context, path string, tensors []synthTensor, seed uint64, progress func(int64)) error {
	header, offs := shardHeader(tensors)
	total := offs[len(offs)-1] + tensors[len(tensors)-1].size()
	if st, err := os.Stat(path); err == nil && st.Size() == total {
		progress(total)
		return rewriteHeader(path, header)
	}
	part := path + ".partial"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	start := min(st.Size(), total) / shardChunk * shardChunk
	if start > 0 {
		progress(start)
	}
	buf := make([]byte, shardChunk)
	synced := start
	for pos := start; pos < total; pos += shardChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(shardChunk), total-pos)
		fillChunk(buf[:n], pos, header, tensors, offs, seed)
		if _, err := f.WriteAt(buf[:n], pos); err != nil {
			return fmt.Errorf("bench: write %s: %w", part, err)
		}
		progress(n)
		if pos+n-synced >= 512<<20 || pos+n == total {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("bench: sync %s: %w", part, err)
			}
			dropRange(f, synced, pos+n-synced)
			synced = pos + n
		}
	}
	if err := f.Truncate(total); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.Rename(part, path); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// rewriteHeader makes a complete shard's header equal to header. The data
// bytes depend only on the seed, the chunk and the tensors' sizes and kinds,
// so a layout that renames tensors (same header length) keeps its data and
// only the header is rewritten in place; any other difference is refused.
func rewriteHeader(path string, header []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	old := make([]byte, len(header))
	if _, err := f.ReadAt(old, 0); err != nil {
		return fmt.Errorf("bench: %s: %w", path, err)
	}
	if bytes.Equal(old, header) {
		return nil
	}
	if !bytes.Equal(old[:8], header[:8]) {
		return fmt.Errorf("bench: %s has another layout; delete it to write it again", path)
	}
	if _, err := f.WriteAt(header, 0); err != nil {
		return fmt.Errorf("bench: %s: %w", path, err)
	}
	return f.Sync()
}

// fillChunk writes the file bytes [pos, pos+len(dst)): header bytes verbatim,
// tensor bytes from a splitmix64 stream seeded by the chunk, shaped per kind.
// Every tensor size and offset is a multiple of 8, so shaping works on words.
func fillChunk(dst []byte, pos int64, header []byte, tensors []synthTensor, offs []int64, seed uint64) {
	x := seed ^ uint64(pos/shardChunk)*0x9E3779B97F4A7C15
	end := pos + int64(len(dst))
	ti := 0
	for i := 0; i+8 <= len(dst); i += 8 {
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		binary.LittleEndian.PutUint64(dst[i:], z)
	}
	// Shape the words tensor by tensor.
	for ti < len(tensors) && offs[ti]+tensors[ti].size() <= pos {
		ti++
	}
	for ; ti < len(tensors) && offs[ti] < end; ti++ {
		a, b := max(offs[ti], pos)-pos, min(offs[ti]+tensors[ti].size(), end)-pos
		var and, or uint64
		switch tensors[ti].fill {
		case fillScale:
			and, or = 0x0707070707070707, 0x7878787878787878
		case fillBF16:
			and, or = 0x807F807F807F807F, 0x3C003C003C003C00
		case fillF32, fillALog:
			and, or = 0x807FFFFF807FFFFF, 0x3C0000003C000000
		default:
			continue
		}
		for i := a; i < b; i += 8 {
			w := binary.LittleEndian.Uint64(dst[i:])
			binary.LittleEndian.PutUint64(dst[i:], w&and|or)
		}
		if tensors[ti].fill == fillALog {
			pad := max(offs[ti]+4*k3KDAHeads, pos) - pos
			clear(dst[min(pad, b):b])
		}
	}
	if pos < int64(len(header)) {
		copy(dst, header[pos:])
	}
}

// fileSize returns the size of path, or 0 if it does not exist.
func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
