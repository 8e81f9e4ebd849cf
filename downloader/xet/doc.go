// Package xet is the content hashing of Hugging Face's Xet storage
// (huggingface.co/docs/xet), which the downloader checks the ranges of a
// file it holds only in part against: content-defined chunking (a gear
// rolling hash), the keyed BLAKE3 hash of each chunk, the Merkle tree over
// chunk hashes whose root is a file's Xet hash, and the subtrees the CAS
// sends to summarise the parts of a file a client does not hold
// (GET /v2/file-chunk-hashes). hash_test.go checks chunking and hashes
// against the official implementation (@huggingface/xetchunk-wasm, run
// under node) and the subtrees against the whole-file hash.
package xet
