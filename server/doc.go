// Package server is the OpenAI-compatible HTTP API on echo, with
// Anthropic's Messages API on the same port, at the end of
// the data flow (downloader → disk → engine → kernels → tokens → server):
// it renders chat requests in the K3 chat format (chat), runs every
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
//     field; controls.go: K3's thinking controls (thinking,
//     chat_template_kwargs, reasoning_effort) settled in one order, and
//     the lenient front-end fields accepted and listed in the
//     X-Deltafin-Ignored-Fields header; stop.go: stop sequences matched
//     on the decoded text;
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
//     and validation (text.format through tools.go's response_format
//     machinery); responses_render.go: tokens to output items (reasoning
//     with its summary) and the
//     official event sequence (a pure function of the tokens, so streams
//     resume from any event); responses_job.go: a response as a job (run,
//     stored, followed by any number of clients, resumed at start);
//     responses.go: its endpoints.
//
//   - anthropic.go: the Messages API's wire types and its error shape;
//     anthropic_request.go: its validation into the chat path's
//     genRequest (system, content blocks, tool_use and tool_result,
//     thinking, tools and tool_choice); anthropic_stream.go: tokens to a
//     message or to Anthropic's event sequence (thinking blocks with
//     signatures, text, tool_use with input_json_delta, ping events);
//     anthropic_endpoints.go: /v1/messages and /v1/messages/count_tokens,
//     answered through the same queue (generate.go's answer) as chat.
//
//   - queue.go: one generation at a time for every endpoint, a bounded
//     FIFO line with progress and ETAs (rates measured over real
//     lengths); jobtitle.go: a job's name, its request's first words;
//     engine.go: the small interface
//     over the engine the server depends on; reuse.go: the last
//     conversation's session, continued when a prompt extends it;
//     memo.go: the exact response memo (greedy, or keyed by seed); sse.go: events plus heartbeat
//     comments; middleware.go: Host, Origin, API key, CORS and JSON checks;
//     throttle.go: wrong API keys limited per client address; text.go:
//     every JSON body's strings checked for invalid UTF-8 and lone
//     surrogates before decoding (which would turn them into U+FFFD).
//
//   - server.go: options, routes, errors in OpenAI's shape (an unknown
//     path's 404 lists the routes the router has); a request the
//     shutdown cuts gets 503 with Retry-After (generate.go).
//
//   - host.go: serving, in one place for deltafin serve, the menu-bar app
//     and the tests: Listen (a taken port is ErrPortInUse; the app tries
//     the next ones), Start and Serve (resume the stored jobs, serve with
//     the Options' header, body and idle timeouts) and Host.Shutdown,
//     which keeps a request's lifetime (its client, or the shutdown) apart
//     from a job's (background and stored responses end only with the
//     server, their tokens stored to resume at the next Start).
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
