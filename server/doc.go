// Package server is the OpenAI-compatible HTTP API on echo, at the end of
// the data flow (downloader → disk → engine → kernels → tokens → server):
// it renders chat requests in the K3 chat format (engine/chat), runs every
// generation as a job in one FIFO queue in front of the engine, and streams
// the tokens back as server-sent events in OpenAI's formats. Stored and
// background responses live in the store (package store) and resume after
// a restart.
//
// Files, one concept each:
//
//   - openai.go: the chat and completion wire types; request.go: strict
//     decoding and validation, refusing before any work what the engine
//     cannot honour (n > 1, logprobs, penalties, ...) and any unknown
//     field; stop.go: stop sequences matched on the decoded text;
//     convert.go: pure conversions to the renderer and to responses.
//
//   - generate.go: the chat and completion endpoints; output.go: tokens to
//     a JSON answer or to SSE chunks (reasoning_content, content, tool
//     calls), holding back what could start a stop sequence;
//     tools.go: tools, tool_choice, parallel_tool_calls and response_format
//     (validation, tool_calls and their deltas, finish_reason and
//     output_error).
//
//   - responses_wire.go, responses_request.go: the Responses API's types
//     and validation; responses_render.go: tokens to output items and the
//     official event sequence (a pure function of the tokens, so streams
//     resume from any event); responses_job.go: a response as a job (run,
//     stored, followed by any number of clients, resumed at start);
//     responses.go: its endpoints.
//
//   - queue.go: one generation at a time for every endpoint, a bounded
//     FIFO line with progress and ETAs; engine.go: the small interface
//     over the engine the server depends on; reuse.go: the last
//     conversation's session, continued when a prompt extends it;
//     memo.go: the exact response memo (greedy, or keyed by seed);
//     sse.go: events plus heartbeat comments; middleware.go: Host,
//     Origin, API key, CORS and JSON checks.
//
//   - server.go: options, routes, errors in OpenAI's shape, timeouts.
//
//   - sampling.go: temperature, top_p, top_k, min_p and seed into the
//     engine's Sampling (the model's defaults for fields not sent, a
//     drawn seed when none is), and the seed reported.
//
// Deliberately not here: constrained decoding (tool calls and JSON formats are K3's own output, checked and reported, not forced
// token by token) and batching of several generations. State shared
// between requests: the memo, the last conversation's session, and the
// jobs (live, and in the store).
package server
