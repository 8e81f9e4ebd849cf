// Package tokenizer is Kimi K3's byte-level BPE: text → token ids on the way
// into the engine and token ids → text on the way out (downloader → disk →
// engine → kernels → tokens → server/app). The chat package renders
// conversations into segments that this package encodes one by one.
//
// A Tokenizer is loaded from a checkpoint's tiktoken.model (a base64 token
// and its rank per line) and tokenizer_config.json (the names of the 256
// special ids that follow the ranks). It reproduces tiktoken with Kimi's
// eight-part pre-tokenizer pattern and tokenization_kimi.py's input
// splitting exactly, so the ids are the ones the model was trained on. The
// tests hold it to the tiktoken core (npm tiktoken under node, in
// testdata/tiktokennode) on K3's real 163,584-rank vocabulary, ids and
// encode speed both.
//
// Encode treats special-token spellings as plain text (user text can never
// produce a control token); EncodeSpecial turns them into special ids and is
// for trusted structural text only. Decoder turns a stream of ids back into
// text at UTF-8 boundaries for streaming. A Tokenizer is immutable and safe
// for concurrent use; a Decoder is not.
package tokenizer
