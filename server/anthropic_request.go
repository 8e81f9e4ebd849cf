package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// This file validates Messages API requests into the same genRequest the
// chat path runs: Anthropic's system, content blocks, tools and
// tool_choice become the chat messages and tool settings the K3 renderer
// takes, so both APIs give K3 the same prompt for the same conversation.
// As on the OpenAI paths, anything the engine cannot honour is refused
// before any work, naming the field ("messages[1].content[0]").

// msgRequest is a validated Messages request: the generation, and what
// only Anthropic's answer needs.
type msgRequest struct {
	g *genRequest
	// omitThinking: thinking.display "omitted": thinking blocks carry
	// only their signature (which holds the text, thinkingSignature).
	omitThinking bool
}

// maxStopSequences bounds stop_sequences (Anthropic sets no small limit;
// each is matched on every piece of text).
const maxStopSequences = 64

// decodeMessages validates a /v1/messages body; count is true for
// count_tokens, which has no max_tokens and no stream.
func decodeMessages(body []byte, lim limits, count bool) (*msgRequest, *apiError) {
	var req MessagesRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, jsonError(err, "")
	}
	r := &msgRequest{g: &genRequest{chat: true, thinking: true, toolSettings: toolSettings{parallel: true}}}
	g := r.g
	if e := checkModel(req.Model, lim); e != nil {
		return nil, e
	}
	if !count {
		if req.MaxTokens == nil {
			return nil, invalid(codeMissing, "max_tokens", "max_tokens is required")
		}
		if *req.MaxTokens < 1 {
			return nil, invalid(codeInvalidValue, "max_tokens", "must be at least 1, got %d", *req.MaxTokens)
		}
		g.maxTokens = *req.MaxTokens
		g.stream = req.Stream != nil && *req.Stream
	}
	var e *apiError
	if g.samp, e = checkMsgSampling(&req); e != nil {
		return nil, e
	}
	if len(req.StopSequences) > maxStopSequences {
		return nil, invalid(codeInvalidValue, "stop_sequences", "at most %d stop sequences, got %d", maxStopSequences, len(req.StopSequences))
	}
	for i, s := range req.StopSequences {
		if s == "" {
			return nil, invalid(codeInvalidValue, fmt.Sprintf("stop_sequences[%d]", i), "a stop sequence cannot be empty")
		}
	}
	g.stop = req.StopSequences
	if !isNull(req.Container) {
		return nil, unsupported("container", "Anthropic's hosted containers are not available here")
	}
	if !isNull(req.MCPServers) && string(bytes.TrimSpace(req.MCPServers)) != "[]" {
		return nil, unsupported("mcp_servers", "MCP servers run by the API are not available here: connect them to the client")
	}
	if e := r.checkThinking(req.Thinking); e != nil {
		return nil, e
	}
	if e := checkOutputConfig(g, req.OutputConfig); e != nil {
		return nil, e
	}
	names, e := checkMsgTools(g, req.Tools)
	if e != nil {
		return nil, e
	}
	if e := checkMsgToolChoice(g, req.ToolChoice, names); e != nil {
		return nil, e
	}
	if !isNull(req.System) {
		sys, e := systemMessage(req.System)
		if e != nil {
			return nil, e
		}
		g.messages = append(g.messages, sys)
	}
	if len(req.Messages) == 0 {
		return nil, invalid(codeMissing, "messages", "at least one message is required")
	}
	calls := map[string]string{} // the last assistant message's tool_use ids and names
	for i, m := range req.Messages {
		msgs, e := checkMsgMessage(i, m, calls)
		if e != nil {
			return nil, e
		}
		g.messages = append(g.messages, msgs...)
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == "assistant" {
		return nil, unsupported(fmt.Sprintf("messages[%d]", len(req.Messages)-1),
			"a final assistant message (prefilling the answer) is not supported: end with a user message")
	}
	return r, nil
}

// checkMsgSampling range-checks temperature (Anthropic's 0 to 1), top_p
// and top_k, and takes min_p and seed as the chat path does (Deltafin's
// own: Anthropic's API has neither), for the same seeded sampler
// (sampling.go); fields not sent take the model card's.
func checkMsgSampling(req *MessagesRequest) (samplingFields, *apiError) {
	s := samplingFields{temperature: req.Temperature, topP: req.TopP, topK: req.TopK, minP: req.MinP, seed: req.Seed}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return s, invalid(codeInvalidValue, "temperature", "must be between 0 and 1, got %g", *t)
	}
	if p := req.TopP; p != nil && (*p < 0 || *p > 1) {
		return s, invalid(codeInvalidValue, "top_p", "must be between 0 and 1, got %g", *p)
	}
	if k := req.TopK; k != nil && *k < 0 {
		return s, invalid(codeInvalidValue, "top_k", "must be at least 0, got %d", *k)
	}
	return s, s.check()
}

// checkThinking reads thinking: {"type":"enabled","budget_tokens":N},
// {"type":"adaptive"} (K3 always decides how long to think) or
// {"type":"disabled"}; display "omitted" keeps the text out of the
// answer. Absent, K3 thinks, as it does on the chat path. K3 has no token
// budget for thinking: budget_tokens is checked, not applied (max_tokens
// bounds thinking and answer together).
func (r *msgRequest) checkThinking(raw json.RawMessage) *apiError {
	if isNull(raw) {
		return nil
	}
	var th struct {
		Type         string  `json:"type"`
		BudgetTokens *int    `json:"budget_tokens"`
		Display      *string `json:"display"`
	}
	if err := decodeStrict(raw, &th); err != nil {
		return jsonError(err, "thinking")
	}
	switch th.Type {
	case "enabled":
		if th.BudgetTokens == nil {
			return invalid(codeMissing, "thinking.budget_tokens", "thinking type \"enabled\" needs budget_tokens")
		}
		if *th.BudgetTokens < 1 {
			return invalid(codeInvalidValue, "thinking.budget_tokens", "must be at least 1, got %d", *th.BudgetTokens)
		}
	case "adaptive":
	case "disabled":
		r.g.thinking = false
	default:
		return invalid(codeInvalidValue, "thinking.type", "must be \"enabled\", \"adaptive\" or \"disabled\", not %q", th.Type)
	}
	if th.Type != "enabled" && th.BudgetTokens != nil {
		return invalid(codeInvalidValue, "thinking.budget_tokens", "only for thinking type \"enabled\"")
	}
	if th.Display != nil {
		switch *th.Display {
		case "omitted":
			r.omitThinking = true
		case "summarized":
			// K3's thinking is sent whole, not summarised.
		default:
			return invalid(codeInvalidValue, "thinking.display", "must be \"summarized\" or \"omitted\", not %q", *th.Display)
		}
	}
	return nil
}

// checkOutputConfig reads output_config: effort (K3's low, high or max)
// and format, a JSON schema the answer must match (checked, as chat's
// strict json_schema is).
func checkOutputConfig(g *genRequest, raw json.RawMessage) *apiError {
	if isNull(raw) {
		return nil
	}
	var oc struct {
		Effort *string         `json:"effort"`
		Format json.RawMessage `json:"format"`
	}
	if err := decodeStrict(raw, &oc); err != nil {
		return jsonError(err, "output_config")
	}
	if oc.Effort != nil {
		switch *oc.Effort {
		case "low", "high", "max":
			g.effort = *oc.Effort
		default:
			return invalid(codeInvalidValue, "output_config.effort", "K3 supports the efforts low, high or max, not %q", *oc.Effort)
		}
	}
	if isNull(oc.Format) {
		return nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if err := decodeStrict(oc.Format, &f); err != nil {
		return jsonError(err, "output_config.format")
	}
	if f.Type != "json_schema" {
		return invalid(codeInvalidValue, "output_config.format.type", "must be \"json_schema\", not %q", f.Type)
	}
	if kindOf(f.Schema) != '{' {
		return invalid(codeInvalidValue, "output_config.format.schema", "must be a JSON Schema object")
	}
	// The same checks as chat's strict response_format.
	rf, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "output", "schema": f.Schema, "strict": true}})
	var e *apiError
	if g.format, g.check, e = checkResponseFormat(rf); e != nil {
		e.param = strings.Replace(e.param, "response_format.json_schema.schema", "output_config.format.schema", 1)
		return e
	}
	return nil
}

// checkMsgTools validates tools and converts each to the OpenAI function
// declaration the K3 renderer takes; it returns the declared names.
func checkMsgTools(g *genRequest, tools []json.RawMessage) (map[string]bool, *apiError) {
	names := map[string]bool{}
	for i, raw := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		var t AnthropicTool
		if err := decodeStrict(raw, &t); err != nil {
			return nil, jsonError(err, p)
		}
		if t.Type != nil && *t.Type != "custom" {
			return nil, unsupported(p+".type", "Anthropic's server tools (%q) are not available here: declare client tools, which the client runs", *t.Type)
		}
		if isNull(t.InputSchema) {
			return nil, invalid(codeMissing, p+".input_schema", "a tool needs an input_schema")
		}
		if e := checkFunction(p, t.Name, t.InputSchema, names); e != nil {
			return nil, e
		}
		if t.DeferLoading != nil && *t.DeferLoading {
			continue // found through a tool search, not declared up front
		}
		fn := map[string]any{"name": t.Name, "parameters": t.InputSchema}
		if t.Description != nil {
			fn["description"] = *t.Description
		}
		decl, err := json.Marshal(map[string]any{"type": "function", "function": fn})
		if err != nil {
			return nil, invalid(codeInvalidValue, p, "%v", err)
		}
		g.tools = append(g.tools, decl)
	}
	return names, nil
}

// checkMsgToolChoice reads tool_choice: auto, any (a call must come), tool
// (this tool must be called) or none; disable_parallel_tool_use keeps one
// call.
func checkMsgToolChoice(g *genRequest, raw json.RawMessage, names map[string]bool) *apiError {
	if isNull(raw) {
		return nil
	}
	var tc struct {
		Type            string  `json:"type"`
		Name            *string `json:"name"`
		DisableParallel *bool   `json:"disable_parallel_tool_use"`
	}
	if err := decodeStrict(raw, &tc); err != nil {
		return jsonError(err, "tool_choice")
	}
	if tc.Name != nil && tc.Type != "tool" {
		return invalid(codeInvalidValue, "tool_choice.name", "only for tool_choice type \"tool\"")
	}
	switch tc.Type {
	case "auto", "none":
		g.toolChoice = tc.Type
	case "any":
		if len(names) == 0 {
			return invalid(codeInvalidValue, "tool_choice", "tool_choice \"any\" needs tools")
		}
		g.toolChoice = "required"
	case "tool":
		if tc.Name == nil || !names[*tc.Name] {
			name := ""
			if tc.Name != nil {
				name = *tc.Name
			}
			return invalid(codeInvalidValue, "tool_choice.name", "no declared tool is named %q", name)
		}
		g.toolChoice, g.toolName = "required", *tc.Name
	default:
		return invalid(codeInvalidValue, "tool_choice.type", "must be \"auto\", \"any\", \"tool\" or \"none\", not %q", tc.Type)
	}
	if tc.DisableParallel != nil && *tc.DisableParallel {
		g.parallel = false
	}
	return nil
}

// systemMessage reads system: a string or an array of text blocks.
func systemMessage(raw json.RawMessage) (message, *apiError) {
	m := message{role: "system"}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		m.content = s
		return m, nil
	}
	blocks, e := blocksOf(raw, "system")
	if e != nil {
		return m, e
	}
	for j, b := range blocks {
		p := fmt.Sprintf("system[%d]", j)
		if b.Type != "text" {
			return m, invalid(codeInvalidValue, p+".type", "system blocks must be text, not %q", b.Type)
		}
		if e := checkText(p, b); e != nil {
			return m, e
		}
		m.parts = append(m.parts, *b.Text)
	}
	m.content = strings.Join(m.parts, "")
	return m, nil
}

// blocksOf decodes an array of content blocks at path p.
func blocksOf(raw json.RawMessage, p string) ([]ContentBlock, *apiError) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, invalid(codeInvalidValue, p, "must be a string or an array of content blocks")
	}
	out := make([]ContentBlock, len(list))
	for j, r := range list {
		if err := decodeStrict(r, &out[j]); err != nil {
			return nil, jsonError(err, fmt.Sprintf("%s[%d]", p, j))
		}
	}
	return out, nil
}

func checkText(p string, b ContentBlock) *apiError {
	if b.Text == nil {
		return invalid(codeMissing, p+".text", "a text block needs text")
	}
	if !isNull(b.Citations) && string(bytes.TrimSpace(b.Citations)) != "[]" {
		return unsupported(p+".citations", "citations are not available")
	}
	return nil
}

// checkMsgMessage converts message i into chat messages: a user message's
// tool_result blocks become tool messages (in their order, between its
// text), an assistant message's thinking, text and tool_use blocks one
// assistant message. calls holds the previous assistant message's tool_use
// ids and names, which tool results must answer.
func checkMsgMessage(i int, m AnthropicMessage, calls map[string]string) ([]message, *apiError) {
	p := fmt.Sprintf("messages[%d]", i)
	switch m.Role {
	case "user", "assistant":
	case "system":
		// Claude Code's mid-conversation instructions.
	case "":
		return nil, invalid(codeMissing, p+".role", "a message needs a role")
	default:
		return nil, invalid(codeInvalidValue, p+".role", "unknown role %q: expected user or assistant", m.Role)
	}
	if isNull(m.Content) {
		return nil, invalid(codeMissing, p+".content", "a message needs content")
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		if m.Role == "assistant" {
			clear(calls)
		}
		return []message{{role: m.Role, content: s}}, nil
	}
	blocks, e := blocksOf(m.Content, p+".content")
	if e != nil {
		return nil, e
	}
	if m.Role == "assistant" {
		msg, e := assistantMessage(p, blocks, calls)
		return []message{msg}, e
	}
	var out []message
	cur := message{role: m.Role}
	flush := func() {
		if cur.parts != nil {
			cur.content = strings.Join(cur.parts, "")
			out = append(out, cur)
		}
		cur = message{role: m.Role}
	}
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", p, j)
		switch b.Type {
		case "text":
			if e := checkText(bp, b); e != nil {
				return nil, e
			}
			cur.parts = append(cur.parts, *b.Text)
		case "tool_result":
			if m.Role != "user" {
				return nil, invalid(codeInvalidValue, bp, "only user messages carry tool_result blocks")
			}
			flush()
			tm, e := toolResult(bp, b, calls)
			if e != nil {
				return nil, e
			}
			out = append(out, tm)
		case "image":
			return nil, unsupported(bp, "image blocks are not supported: this model reads text only")
		case "document", "search_result", "container_upload":
			return nil, unsupported(bp, "%s blocks are not supported: send the text", b.Type)
		case "thinking", "redacted_thinking", "tool_use", "server_tool_use":
			return nil, invalid(codeInvalidValue, bp+".type", "only assistant messages carry %s blocks", b.Type)
		default:
			return nil, invalid(codeInvalidValue, bp+".type", "unknown content block type %q", b.Type)
		}
	}
	flush()
	if len(out) == 0 {
		// An empty array: an empty turn, as an empty string would be.
		out = append(out, message{role: m.Role})
	}
	return out, nil
}

// toolResult converts a tool_result block. is_error has no place in K3's
// format: the result's text (which says what failed) is rendered as is.
func toolResult(p string, b ContentBlock, calls map[string]string) (message, *apiError) {
	tm := message{role: "tool", toolCallID: b.ToolUseID}
	if b.ToolUseID == "" {
		return tm, invalid(codeMissing, p+".tool_use_id", "a tool_result needs the tool_use_id it answers")
	}
	name, ok := calls[b.ToolUseID]
	if !ok {
		return tm, invalid(codeInvalidValue, p+".tool_use_id", "%q answers no tool_use block of the previous assistant message", b.ToolUseID)
	}
	tm.name = name
	if isNull(b.Content) {
		return tm, nil
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		tm.content = s
		return tm, nil
	}
	inner, e := blocksOf(b.Content, p+".content")
	if e != nil {
		return tm, e
	}
	for k, ib := range inner {
		ip := fmt.Sprintf("%s.content[%d]", p, k)
		switch ib.Type {
		case "text":
			if e := checkText(ip, ib); e != nil {
				return tm, e
			}
			tm.parts = append(tm.parts, *ib.Text)
		case "image":
			return tm, unsupported(ip, "image blocks are not supported: this model reads text only")
		default:
			return tm, unsupported(ip, "%q blocks are not supported in a tool result: send text", ib.Type)
		}
	}
	tm.content = strings.Join(tm.parts, "")
	return tm, nil
}

// assistantMessage converts an assistant message's blocks: thinking
// becomes the turn's reasoning (recovered from its signature when the
// text was omitted), text its content, tool_use its calls.
func assistantMessage(p string, blocks []ContentBlock, calls map[string]string) (message, *apiError) {
	clear(calls)
	msg := message{role: "assistant"}
	var reasoning []string
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", p, j)
		switch b.Type {
		case "text":
			if e := checkText(bp, b); e != nil {
				return msg, e
			}
			msg.parts = append(msg.parts, *b.Text)
		case "thinking":
			if b.Thinking == nil {
				return msg, invalid(codeMissing, bp+".thinking", "a thinking block needs thinking")
			}
			text := *b.Thinking
			if text == "" && b.Signature != nil {
				text, _ = thinkingFromSignature(*b.Signature)
			}
			reasoning = append(reasoning, text)
		case "redacted_thinking":
			return msg, unsupported(bp, "redacted_thinking blocks (another model's encrypted thinking) cannot be read by this model: leave them out")
		case "tool_use":
			if b.Name == "" {
				return msg, invalid(codeMissing, bp+".name", "a tool_use block needs a name")
			}
			if b.ID == "" {
				return msg, invalid(codeMissing, bp+".id", "a tool_use block needs an id")
			}
			if kindOf(b.Input) != '{' {
				return msg, invalid(codeInvalidValue, bp+".input", "must be a JSON object")
			}
			var args bytes.Buffer
			if err := json.Compact(&args, b.Input); err != nil {
				return msg, invalid(codeInvalidValue, bp+".input", "%v", err)
			}
			calls[b.ID] = b.Name
			msg.toolCalls = append(msg.toolCalls, toolCall{id: b.ID, name: b.Name, arguments: args.String()})
		case "server_tool_use", "web_search_tool_result":
			return msg, unsupported(bp, "Anthropic's server tools are not available here")
		default:
			return msg, invalid(codeInvalidValue, bp+".type", "unknown content block type %q", b.Type)
		}
	}
	msg.reasoning = strings.Join(reasoning, "")
	msg.content = strings.Join(msg.parts, "")
	return msg, nil
}

// thinkingPrefix starts every signature: Anthropic's clients need one on
// each thinking block and send it back unchanged. Deltafin's carries the
// thinking's text itself, so a client that asked for thinking omitted
// (display "omitted") still gives K3 its earlier reasoning back. It is no
// attestation: K3 runs on the user's own machine.
const thinkingPrefix = "deltafin-k3-thinking-v1\x00"

// thinkingSignature is the signature of a thinking block.
func thinkingSignature(text string) string {
	return base64.StdEncoding.EncodeToString([]byte(thinkingPrefix + text))
}

// thinkingFromSignature recovers the text of a signature Deltafin made.
func thinkingFromSignature(sig string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), thinkingPrefix)
}
