// Package server is the OpenAI-compatible HTTP API on echo, at the end of
// the data flow (downloader → disk → engine → kernels → tokens → server):
// it renders chat requests in the K3 chat format (engine/chat), drives one
// engine.Session at a time and streams the tokens back as server-sent
// events in OpenAI's chunk format.
//
// Files, one concept each:
//   - openai.go: the wire types; request.go: strict decoding and
//     validation, refusing before any work what the engine cannot honour
//     (n > 1, logprobs, stop sequences, ...) and any unknown field;
//     convert.go: pure conversions to the renderer and to responses.
//   - generate.go: the two generation endpoints; output.go: tokens to a
//     JSON answer or to SSE chunks (reasoning_content, content, tool calls);
//     tools.go: tools, tool_choice, parallel_tool_calls and response_format
//     (validation, tool_calls and their deltas, finish_reason and
//     output_error).
//   - gate.go: one generation at a time with a bounded FIFO line;
//     memo.go: the exact response memo; sse.go: events plus heartbeat
//     comments; middleware.go: Host, Origin, API key, CORS and JSON checks.
//   - server.go: options, routes, errors in OpenAI's shape, timeouts.
//
// Deliberately not here: sampling (decoding is greedy, so temperature and
// top_p are range-checked and ignored), constrained decoding (tool calls
// and JSON formats are K3's own output, checked and reported, not forced
// token by token), batching of several generations, and any state shared
// between requests other than the memo: each request renders its whole
// conversation and runs in a fresh session.
package server
