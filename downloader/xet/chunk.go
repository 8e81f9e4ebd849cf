package xet

// Content-defined chunking (huggingface.co/docs/xet/chunking): a gear
// rolling hash runs over the bytes and a chunk ends where its top 16 bits
// are zero, which happens every TargetChunk bytes on average, but never
// before MinChunk bytes nor after MaxChunk. Because a cut depends only on
// the bytes since the last cut, chunking restarted at any chunk boundary of
// a file cuts the rest of it the same way: that is what lets a range of a
// file be checked without the whole file.
const (
	TargetChunk = 64 << 10
	MinChunk    = TargetChunk / 8
	MaxChunk    = TargetChunk * 2
	// gearMask keeps the hash's top log2(TargetChunk) bits.
	gearMask = uint64(TargetChunk-1) << 48
	// gearWindow is how many bytes the 64-bit gear hash remembers: the
	// first MinChunk-gearWindow-1 bytes of a chunk cannot end it and are
	// skipped unhashed.
	gearWindow = 64
)

// A Chunker is one of the two cut rules files on the hub were chunked
// with: Current, xet-core's since September 2025 (xet-core #487), never
// cuts a chunk shorter than MinChunk; Legacy, before it (and
// @huggingface/xetchunk-wasm 0.2.0), also cut where the hash matched in
// the 64 bytes before MinChunk. They differ only there.
type Chunker int

const (
	Current Chunker = iota
	Legacy
)

// Boundaries returns the end offsets of data's chunks (the last is
// len(data); none for empty data).
func (c Chunker) Boundaries(data []byte) []int {
	var ends []int
	for pos := 0; pos < len(data); {
		pos += c.Next(data[pos:])
		ends = append(ends, pos)
	}
	return ends
}

// Next is the length of the chunk that starts data (all of data when it
// holds no cut).
func (c Chunker) Next(data []byte) int {
	n := len(data)
	i := min(MinChunk-gearWindow-1, n)
	end := min(n, MaxChunk)
	var h uint64
	for ; i < end; i++ {
		h = h<<1 + gearTable[data[i]]
		if h&gearMask == 0 && (c == Legacy || i+1 >= MinChunk) {
			return i + 1
		}
	}
	return end
}

// Chunks cuts data into chunks and hashes each.
func (c Chunker) Chunks(data []byte) []Chunk {
	var out []Chunk
	start := 0
	for _, end := range c.Boundaries(data) {
		out = append(out, Chunk{Hash: ChunkHash(data[start:end]), Len: int64(end - start)})
		start = end
	}
	return out
}

// StableChunk reports whether a chunk of n bytes is of a size that only a
// hash match (not the minimum or the maximum) can have cut: two in a row
// mean the chunker has re-synchronised, whatever came before them.
func StableChunk(n int64) bool { return n >= 2*MinChunk && n < MaxChunk-MinChunk }
