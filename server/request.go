package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// This file turns request bodies into validated, endpoint-independent
// genRequests. Everything here runs before any work: a request the engine
// cannot honour is refused with a 400 that names the field, and a field we
// do not know is refused too (fail closed), because silently ignoring, say,
// a stop sequence would return an answer the client did not ask for.

// genRequest is a validated request for one generation.
type genRequest struct {
	chat         bool
	stream       bool
	includeUsage bool
	// maxTokens is the client's limit on generated tokens; 0 means none
	// (chat without max_tokens runs to the end of the turn or the context).
	maxTokens int

	// Chat only.
	messages []message
	thinking bool
	effort   string // "low" | "high" | "max"; "" = the renderer's default
	forget   bool   // leave out earlier turns' reasoning (preserve_thinking=false)
	toolSettings

	// stop holds the stop sequences (stop.go).
	stop []string
	// samp is the sampling as sent; plan resolves it (sampling.go).
	samp samplingFields

	// Completions only: the prompt as text, or as token ids when promptIDs
	// is non-nil.
	prompt    string
	promptIDs []int

	// ignored are the lenient fields that came and were not acted on
	// (controls.go), for the X-Deltafin-Ignored-Fields header.
	ignored []string
}

// message is a validated chat message, in the chat renderer's terms.
type message struct {
	role       string // system | user | assistant | tool
	name       string
	content    string
	parts      []string // text parts, when content was an array
	reasoning  string
	toolCallID string
	toolCalls  []toolCall
}

type toolCall struct {
	id, name, arguments string
}

// defaultCompletionMaxTokens is OpenAI's default for /v1/completions; chat
// has no default cap.
const defaultCompletionMaxTokens = 256

// limits are what validation needs to know about the served model.
type limits struct {
	modelID   string
	vocabSize int
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errTrailingData
	}
	return nil
}

var errTrailingData = errors.New("trailing data after the JSON value")

// jsonError explains a decoding error; prefix is the path of the value
// being decoded ("" for the body).
func jsonError(err error, prefix string) *apiError {
	join := func(field string) string {
		switch {
		case prefix == "":
			return field
		case field == "":
			return prefix
		}
		return prefix + "." + field
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalid(codeInvalidJSON, prefix, "invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		return invalid(codeInvalidValue, join(typ.Field), "expected %s, got JSON %s", typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return invalid(codeInvalidJSON, prefix, "empty request body: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid(codeInvalidJSON, prefix, "truncated JSON")
	case errors.Is(err, errTrailingData):
		return invalid(codeInvalidJSON, prefix, "%v", err)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return invalid(codeUnknown, join(name), "unknown field %q: this server refuses fields it does not know rather than ignore them", name)
	}
	return invalid(codeInvalidJSON, prefix, "%v", err)
}

// isNull reports whether a raw value is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// decodeChat validates a chat completion request body.
func decodeChat(body []byte, lim limits) (*genRequest, *apiError) {
	var req ChatRequest
	body, ignored := splitLenient(body, req)
	if err := decodeStrict(body, &req); err != nil {
		return nil, jsonError(err, "")
	}
	g := &genRequest{chat: true, thinking: true, ignored: ignored}
	if e := checkModel(req.Model, lim); e != nil {
		return nil, e
	}
	g.samp = samplingFields{temperature: req.Temperature, topP: req.TopP, topK: req.TopK, minP: req.MinP, seed: req.Seed}
	if e := checkSampling(g.samp, req.PresencePenalty, req.FrequencyPenalty, req.N, req.LogitBias); e != nil {
		return nil, e
	}
	var e *apiError
	if g.stop, e = checkStop(req.Stop); e != nil {
		return nil, e
	}
	if e := checkStream(g, req.Stream, req.StreamOptions); e != nil {
		return nil, e
	}
	if req.Logprobs != nil && *req.Logprobs {
		return nil, unsupported("logprobs", "logprobs are not available")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return nil, unsupported("top_logprobs", "logprobs are not available")
	}
	n, e := maxTokens("max_tokens", req.MaxTokens)
	if e != nil {
		return nil, e
	}
	m, e := maxTokens("max_completion_tokens", req.MaxCompletionTokens)
	if e != nil {
		return nil, e
	}
	if n != 0 && m != 0 && n != m {
		return nil, invalid(codeInvalidValue, "max_completion_tokens", "max_tokens (%d) and max_completion_tokens (%d) disagree; send one", n, m)
	}
	g.maxTokens = max(n, m)
	tc, e := checkThinking(req.Thinking, req.ChatTemplateKwargs, req.ReasoningEffort, "reasoning_effort")
	if e != nil {
		return nil, e
	}
	g.thinking, g.effort, g.forget = tc.thinking, tc.effort, tc.forget
	if g.toolSettings, e = checkTools(&req); e != nil {
		return nil, e
	}
	for i, mod := range req.Modalities {
		if mod != "text" {
			return nil, unsupported(fmt.Sprintf("modalities[%d]", i), "only text output is available, not %q", mod)
		}
	}
	if len(req.Messages) == 0 {
		return nil, invalid(codeMissing, "messages", "at least one message is required")
	}
	for i, raw := range req.Messages {
		msg, e := checkMessage(i, raw)
		if e != nil {
			return nil, e
		}
		g.messages = append(g.messages, msg)
	}
	return g, nil
}

// decodeCompletion validates a completion request body.
func decodeCompletion(body []byte, lim limits) (*genRequest, *apiError) {
	var req CompletionRequest
	body, ignored := splitLenient(body, req)
	if err := decodeStrict(body, &req); err != nil {
		return nil, jsonError(err, "")
	}
	g := &genRequest{ignored: ignored}
	if e := checkModel(req.Model, lim); e != nil {
		return nil, e
	}
	g.samp = samplingFields{temperature: req.Temperature, topP: req.TopP, topK: req.TopK, minP: req.MinP, seed: req.Seed}
	if e := checkSampling(g.samp, req.PresencePenalty, req.FrequencyPenalty, req.N, req.LogitBias); e != nil {
		return nil, e
	}
	var e *apiError
	if g.stop, e = checkStop(req.Stop); e != nil {
		return nil, e
	}
	if e := checkStream(g, req.Stream, req.StreamOptions); e != nil {
		return nil, e
	}
	if req.BestOf != nil && *req.BestOf != 1 {
		if *req.BestOf < 1 {
			return nil, invalid(codeInvalidValue, "best_of", "must be at least 1")
		}
		return nil, unsupported("best_of", "one completion per request: best_of > 1 is not available")
	}
	if req.Logprobs != nil && *req.Logprobs != 0 {
		return nil, unsupported("logprobs", "logprobs are not available")
	}
	if req.Echo != nil && *req.Echo {
		return nil, unsupported("echo", "echo is not available")
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, unsupported("suffix", "insertion (suffix) is not available")
	}
	n, e := maxTokens("max_tokens", req.MaxTokens)
	if e != nil {
		return nil, e
	}
	if n == 0 {
		n = defaultCompletionMaxTokens
	}
	g.maxTokens = n
	if e := checkPrompt(g, req.Prompt, lim); e != nil {
		return nil, e
	}
	return g, nil
}

// checkModel accepts any model name: one model is loaded and it serves
// every request (local front-ends send names of their own, "gpt-4o" or
// an Ollama tag); the response names the served model's real id.
func checkModel(model string, lim limits) *apiError {
	if model == "" {
		return invalid(codeMissing, "model", "model is required; this server serves %q", lim.modelID)
	}
	return nil
}

// checkModelID is GET /v1/models/{id}: a lookup, so a name that is not
// the served model's id is not found.
func checkModelID(model string, lim limits) *apiError {
	if model != lim.modelID {
		return &apiError{status: http.StatusNotFound, kind: ErrModelNotFound, typ: "invalid_request_error",
			code: "model_not_found", param: "model",
			msg: fmt.Sprintf("the model %q does not exist here; this server serves %q", model, lim.modelID)}
	}
	return nil
}

// checkSampling range-checks the sampling fields (sampling.go) and
// refuses what the engine cannot honour: penalties, several choices,
// logit_bias.
func checkSampling(f samplingFields, presence, frequency *float64, n *int, logitBias map[string]any) *apiError {
	if e := f.check(); e != nil {
		return e
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"presence_penalty", presence}, {"frequency_penalty", frequency}} {
		if p.v == nil || *p.v == 0 {
			continue
		}
		if *p.v < -2 || *p.v > 2 {
			return invalid(codeInvalidValue, p.name, "must be between -2 and 2, got %g", *p.v)
		}
		return unsupported(p.name, "penalties are not available")
	}
	if n != nil && *n != 1 {
		if *n < 1 {
			return invalid(codeInvalidValue, "n", "must be at least 1, got %d", *n)
		}
		return unsupported("n", "one choice per request: send n requests (with different seeds) for n answers")
	}
	if len(logitBias) > 0 {
		return unsupported("logit_bias", "logit_bias is not available")
	}
	return nil
}

func checkStream(g *genRequest, stream *bool, opts *StreamOptions) *apiError {
	g.stream = stream != nil && *stream
	if opts == nil {
		return nil
	}
	if !g.stream {
		return invalid(codeInvalidValue, "stream_options", "stream_options is only allowed when stream is true")
	}
	g.includeUsage = opts.IncludeUsage != nil && *opts.IncludeUsage
	return nil
}

func maxTokens(name string, v *int) (int, *apiError) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, invalid(codeInvalidValue, name, "must be at least 1, got %d", *v)
	}
	return *v, nil
}

func checkMessage(i int, m ChatMessage) (message, *apiError) {
	p := fmt.Sprintf("messages[%d]", i)
	out := message{role: m.Role}
	switch m.Role {
	case "system", "user", "assistant", "tool":
	case "developer":
		// OpenAI's newer name for system; K3 has only system.
		out.role = "system"
	case "":
		return out, invalid(codeMissing, p+".role", "a message needs a role")
	default:
		return out, invalid(codeInvalidValue, p+".role", "unknown role %q: expected system, developer, user, assistant or tool", m.Role)
	}
	if m.Name != nil {
		out.name = *m.Name
	}
	if m.ReasoningContent != nil {
		if out.role != "assistant" {
			return out, invalid(codeInvalidValue, p+".reasoning_content", "only assistant messages carry reasoning_content")
		}
		out.reasoning = *m.ReasoningContent
	}
	if m.Refusal != nil && out.role != "assistant" {
		return out, invalid(codeInvalidValue, p+".refusal", "only assistant messages carry a refusal")
	}
	if len(m.ToolCalls) > 0 && out.role != "assistant" {
		return out, invalid(codeInvalidValue, p+".tool_calls", "only assistant messages carry tool_calls")
	}
	for j, tc := range m.ToolCalls {
		tp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
		if tc.Type != "function" {
			return out, invalid(codeInvalidValue, tp+".type", "tool call type must be \"function\", not %q", tc.Type)
		}
		if tc.Function.Name == "" {
			return out, invalid(codeMissing, tp+".function.name", "a tool call needs a function name")
		}
		out.toolCalls = append(out.toolCalls, toolCall{id: tc.ID, name: tc.Function.Name, arguments: tc.Function.Arguments})
	}
	if m.ToolCallID != nil {
		if out.role != "tool" {
			return out, invalid(codeInvalidValue, p+".tool_call_id", "only tool messages carry tool_call_id")
		}
		out.toolCallID = *m.ToolCallID
	}
	if out.role == "tool" && out.toolCallID == "" {
		return out, invalid(codeMissing, p+".tool_call_id", "a tool message needs the tool_call_id it answers")
	}
	if isNull(m.Content) {
		// An assistant turn may be only tool calls or only reasoning.
		if out.role != "assistant" {
			return out, invalid(codeMissing, p+".content", "a %s message needs content", m.Role)
		}
		return out, nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		out.content = s
		return out, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return out, invalid(codeInvalidValue, p+".content", "content must be a string or an array of content parts")
	}
	for j, raw := range parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		var part ContentPart
		if err := decodeStrict(raw, &part); err != nil {
			return out, jsonError(err, pp)
		}
		switch part.Type {
		case "text":
			if part.Text == nil {
				return out, invalid(codeMissing, pp+".text", "a text part needs text")
			}
			out.parts = append(out.parts, *part.Text)
		case "image_url", "input_image":
			return out, unsupported(pp, "image parts are not supported: this model reads text only")
		case "input_audio":
			return out, unsupported(pp, "audio parts are not supported: this model reads text only")
		case "file":
			return out, unsupported(pp, "file parts are not supported: send the text")
		case "refusal":
			return out, unsupported(pp, "refusal parts are not supported")
		default:
			return out, invalid(codeInvalidValue, pp+".type", "unknown content part type %q", part.Type)
		}
	}
	out.content = strings.Join(out.parts, "")
	return out, nil
}

// checkPrompt reads a completion prompt: a string, [string], [ids] or
// [[ids]]. Several prompts in one request are refused like n > 1.
func checkPrompt(g *genRequest, raw json.RawMessage, lim limits) *apiError {
	if isNull(raw) {
		return invalid(codeMissing, "prompt", "prompt is required")
	}
	param := "prompt"
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 && kindOf(list[0]) != '0' {
		// An array of prompts.
		if len(list) > 1 {
			return unsupported("prompt", "one prompt per request: send several prompts as separate requests")
		}
		raw, param = list[0], "prompt[0]"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return invalid(codeInvalidValue, param, "empty prompt")
		}
		g.prompt = s
		return nil
	}
	if json.Unmarshal(raw, &list) != nil {
		return invalid(codeInvalidValue, param, "must be a string, an array of token ids, or an array holding one of those")
	}
	if len(list) == 0 {
		return invalid(codeInvalidValue, param, "empty prompt")
	}
	ids := make([]int, len(list))
	for i, v := range list {
		if err := json.Unmarshal(v, &ids[i]); err != nil || kindOf(v) != '0' {
			return invalid(codeInvalidValue, fmt.Sprintf("%s[%d]", param, i), "a token id must be an integer, got %s", truncate(string(v), 32))
		}
	}
	return checkIDs(g, param, ids, lim)
}

// kindOf classifies a JSON value by its first byte: '0' for a number,
// otherwise the byte itself ('"', '[', '{', 'n', 't', 'f').
func kindOf(raw json.RawMessage) byte {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return 0
	}
	if b[0] == '-' || (b[0] >= '0' && b[0] <= '9') {
		return '0'
	}
	return b[0]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func checkIDs(g *genRequest, param string, ids []int, lim limits) *apiError {
	for i, id := range ids {
		if id < 0 || id >= lim.vocabSize {
			return invalid(codeInvalidValue, fmt.Sprintf("%s[%d]", param, i), "token id %d is outside the vocabulary [0, %d)", id, lim.vocabSize)
		}
	}
	g.promptIDs = ids
	return nil
}
