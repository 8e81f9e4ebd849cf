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
// Parser splits a thinking-mode completion at <|open|>response<|sep|> into
// reasoning_content and content, incrementally, for streaming.
package chat
