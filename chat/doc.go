// Package chat is Kimi K3's chat format ("XTML"): it turns OpenAI-style
// messages into the prompt's token ids on the way in and splits generated
// text into reasoning and answer on the way out (downloader → disk → engine
// → kernels → tokens → server/app; this package sits between tokens and
// server/app, on top of package tokenizer).
//
// Render reproduces Moonshot's encoding_k3.py renderer: a list of segments,
// each either a trusted control marker (<|open|>, <|sep|>, <|close|>,
// <|end_of_msg|>) or ordinary text. Tokenize encodes each segment on its own,
// control segments with specials allowed and everything else as plain BPE,
// so user text that spells "<|open|>" never becomes the control token. The
// segment boundaries are part of the token contract: merging two ordinary
// segments would change the ids.
//
// Parser reads generated text incrementally, for streaming: a scanner
// (scan.go) cuts it into text and XTML tags, and the parser (parser.go,
// calls.go) splits it into reasoning_content, content and tool calls, as
// Events: Reasoning and Content text, CallStart {Call, ID, Name},
// CallArguments fragments of the arguments as the JSON text OpenAI sends,
// CallDone, CallFailed. Typed arguments become a JSON object, a raw json
// block its text. A tools block that does not parse (cut off, an unknown
// tag, a value not of its type) becomes content, raw, with Output.Err set:
// the Raw of the events always adds up to the text parsed.
package chat
