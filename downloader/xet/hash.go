package xet

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"lukechampine.com/blake3"
)

// Hash is one 32-byte Xet hash.
type Hash [32]byte

// The keys of the keyed BLAKE3 hashes: chunk data, and the Merkle tree's
// internal nodes (the spec's DATA_KEY and INTERNAL_NODE_KEY).
var (
	dataKey = [32]byte{102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
		157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41}
	nodeKey = [32]byte{1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230,
		93, 221, 83, 111, 55, 199, 109, 210, 248, 99, 82, 230, 74, 83, 113, 63}
)

func keyedHash(key *[32]byte, b []byte) Hash {
	h := blake3.New(32, key[:])
	h.Write(b)
	var out Hash
	h.Sum(out[:0])
	return out
}

// ChunkHash is the hash of one chunk's bytes.
func ChunkHash(b []byte) Hash { return keyedHash(&dataKey, b) }

// String is the hash as the Xet APIs write it: each of the four 8-byte
// words as a little-endian u64 in 16 hex digits.
func (h Hash) String() string {
	var b [32]byte
	for w := range 4 {
		binary.BigEndian.PutUint64(b[8*w:], binary.LittleEndian.Uint64(h[8*w:]))
	}
	return hex.EncodeToString(b[:])
}

// ParseHash reads a hash as String writes it (64 lowercase hex digits).
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return h, fmt.Errorf("xet: %q is not a 64-digit hex hash", s)
	}
	for w := range 4 {
		binary.LittleEndian.PutUint64(h[8*w:], binary.BigEndian.Uint64(b[8*w:]))
	}
	return h, nil
}

// MarshalText and UnmarshalText write and read the String form, as the
// Xet APIs' JSON does.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

func (h *Hash) UnmarshalText(b []byte) error {
	var err error
	*h, err = ParseHash(string(b))
	return err
}

// lastWord is the hash's last 8 bytes as a little-endian u64: the word the
// tree's "natural cut" rule reads (the spec's hash % 4).
func (h Hash) lastWord() uint64 { return binary.LittleEndian.Uint64(h[24:]) }

// Chunk is a chunk (or a Merkle node over a run of chunks) as the tree
// sees it: its hash and how many file bytes it covers.
type Chunk struct {
	Hash Hash
	Len  int64
}

// The tree's branching: a node has at least minGroup children (but the
// last) and at most maxGroup; a child whose hash is 0 mod meanBranching
// closes a node that has minGroup before it.
const (
	meanBranching = 4
	minGroup      = 2
	maxGroup      = 2*meanBranching + 1
)

func naturalCut(h Hash) bool { return h.lastWord()%meanBranching == 0 }

// nextCut is how many of the level's nodes the next node groups: up to
// maxGroup, closing early at a natural cut with minGroup before it.
func nextCut(level []Chunk) int {
	if len(level) <= minGroup {
		return len(level)
	}
	end := min(maxGroup, len(level))
	for i := minGroup; i < end; i++ {
		if naturalCut(level[i].Hash) {
			return i + 1
		}
	}
	return end
}

// mergeNode is an internal node over a run of children: the keyed hash of
// one line per child, "<hash> : <length>\n".
func mergeNode(kids []Chunk) Chunk {
	var text []byte
	var n int64
	for _, k := range kids {
		text = append(text, k.Hash.String()...)
		text = append(text, " : "...)
		text = strconv.AppendInt(text, k.Len, 10)
		text = append(text, '\n')
		n += k.Len
	}
	return Chunk{Hash: keyedHash(&nodeKey, text), Len: n}
}

// promote groups a level's nodes into the next level's.
func promote(level []Chunk) []Chunk {
	var next []Chunk
	for pos := 0; pos < len(level); {
		n := nextCut(level[pos:])
		next = append(next, mergeNode(level[pos:pos+n]))
		pos += n
	}
	return next
}

// XorbHash is the Merkle root over chunks (a xorb's hash; a file's before
// the last step): levels of nodes grouped by nextCut, so that the tree's
// shape follows the content, until one node is left.
func XorbHash(chunks []Chunk) Hash {
	if len(chunks) == 0 {
		return Hash{}
	}
	level := chunks
	for len(level) > 1 {
		level = promote(level)
	}
	return level[0].Hash
}

// FileHash is a file's Xet hash: the Merkle root keyed once more with the
// zero key (an empty file's is all zeros).
func FileHash(chunks []Chunk) Hash {
	if len(chunks) == 0 {
		return Hash{}
	}
	return fileHashOfRoot(XorbHash(chunks))
}

func fileHashOfRoot(root Hash) Hash {
	var zero [32]byte
	return keyedHash(&zero, root[:])
}
