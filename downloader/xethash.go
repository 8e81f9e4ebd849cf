package downloader

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"lukechampine.com/blake3"
)

// Xet content hashes (huggingface.co/docs/xet/hashing): the hub's Xet
// storage names every chunk of a large file (content-defined, ~64 KiB) by
// a keyed BLAKE3 hash of its bytes, and a file (or xorb) by the root of a
// Merkle tree over its chunk hashes and lengths. These are the hashes a
// range of a file held in part can be verified with; xethash_test.go checks
// them against the official implementation (@huggingface/xetchunk-wasm).

// XetHash is one 32-byte Xet hash.
type XetHash [32]byte

// The keys of the keyed BLAKE3 hashes: chunk data, and the Merkle tree's
// internal nodes (the spec's DATA_KEY and INTERNAL_NODE_KEY).
var (
	xetDataKey = [32]byte{102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
		157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41}
	xetNodeKey = [32]byte{1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230,
		93, 221, 83, 111, 55, 199, 109, 210, 248, 99, 82, 230, 74, 83, 113, 63}
)

func keyedHash(key *[32]byte, b []byte) XetHash {
	h := blake3.New(32, key[:])
	h.Write(b)
	var out XetHash
	h.Sum(out[:0])
	return out
}

// XetChunkHash is the hash of one chunk's bytes.
func XetChunkHash(b []byte) XetHash { return keyedHash(&xetDataKey, b) }

// String is the hash as the Xet APIs write it: each of the four 8-byte
// words as a little-endian u64 in 16 hex digits.
func (h XetHash) String() string {
	var b [32]byte
	for w := range 4 {
		binary.BigEndian.PutUint64(b[8*w:], binary.LittleEndian.Uint64(h[8*w:]))
	}
	return hex.EncodeToString(b[:])
}

// XetChunk is a chunk (or a Merkle node) as the tree sees it.
type XetChunk struct {
	Hash XetHash
	Len  int64
}

// xetMergeNode is an internal node over a run of children: the keyed
// hash of one line per child, "<hash> : <length>\n".
func xetMergeNode(kids []XetChunk) XetChunk {
	var text []byte
	var n int64
	for _, k := range kids {
		text = append(text, k.Hash.String()...)
		text = append(text, " : "...)
		text = strconv.AppendInt(text, k.Len, 10)
		text = append(text, '\n')
		n += k.Len
	}
	return XetChunk{Hash: keyedHash(&xetNodeKey, text), Len: n}
}

// XetXorbHash is the Merkle root over chunks. Each level groups children
// into nodes: a node closes at a child that has 8 before it, at the last
// child, or at a child with at least 2 before it whose hash's last word is
// 0 mod 4, so that the tree's shape follows the content.
func XetXorbHash(chunks []XetChunk) XetHash {
	if len(chunks) == 0 {
		return XetHash{}
	}
	level := chunks
	for len(level) > 1 {
		var next []XetChunk
		start := 0
		for i := range level {
			n := i - start // children before this one in the open node
			natural := n >= 2 && binary.LittleEndian.Uint64(level[i].Hash[24:])%4 == 0
			if i == len(level)-1 || n == 8 || natural {
				next = append(next, xetMergeNode(level[start:i+1]))
				start = i + 1
			}
		}
		level = next
	}
	return level[0].Hash
}

// XetFileHash is a file's Xet hash: the Merkle root keyed once more with
// the zero key (an empty file's is all zeros).
func XetFileHash(chunks []XetChunk) XetHash {
	if len(chunks) == 0 {
		return XetHash{}
	}
	root := XetXorbHash(chunks)
	var zero [32]byte
	return keyedHash(&zero, root[:])
}
