package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltafin/deltafin/engine/chat"
)

// respRecord is a validated Responses request as the store keeps it (the
// job's Request): the conversation to render, the engine input once
// planned, and the settings the response object echoes.
type respRecord struct {
	Model        string  `json:"model"`
	CreatedAt    int64   `json:"created_at"`
	Instructions *string `json:"instructions,omitempty"`
	PreviousID   *string `json:"previous_response_id,omitempty"`
	MaxOutput    *int    `json:"max_output_tokens,omitempty"`
	Effort       *string `json:"effort,omitempty"` // as sent
	Thinking     bool    `json:"thinking"`
	// Messages is the whole conversation (earlier responses' turns
	// included, the instructions not: they do not carry over); Input is
	// this request's part of it, with the ids input_items lists.
	Messages []convMessage `json:"messages"`
	Input    []convMessage `json:"input"`
	// Prompt and MaxNew are the engine input; Stop the stop sequences.
	Prompt      []int             `json:"prompt"`
	MaxNew      int               `json:"max_new"`
	Stop        []string          `json:"stop,omitempty"`
	Background  bool              `json:"background"`
	Store       bool              `json:"store"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Temperature float64           `json:"temperature"`
	TopP        float64           `json:"top_p"`
}

// convMessage is one message of a stored conversation.
type convMessage struct {
	ID        string `json:"id,omitempty"`
	Role      string `json:"role"` // system | user | assistant
	Content   string `json:"content"`
	Reasoning string `json:"reasoning,omitempty"`
}

// decodeResponseRequest validates a POST /v1/responses body; it does not
// yet resolve previous_response_id or tokenize (planResponse does).
func decodeResponseRequest(body []byte, lim limits) (*respRecord, bool, *apiError) {
	var req ResponseRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, false, jsonError(err, "")
	}
	r := &respRecord{Model: req.Model, Instructions: req.Instructions, PreviousID: req.PreviousResponseID,
		MaxOutput: req.MaxOutputTokens, Thinking: true, Store: req.Store == nil || *req.Store,
		Background: req.Background != nil && *req.Background, Metadata: req.Metadata, Temperature: 1, TopP: 1}
	if e := checkModel(req.Model, lim); e != nil {
		return nil, false, e
	}
	if e := checkSampling(req.Temperature, req.TopP, nil, nil, nil, nil); e != nil {
		return nil, false, e
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	stream := req.Stream != nil && *req.Stream
	if req.StreamOptions != nil && !stream {
		return nil, false, invalid(codeInvalidValue, "stream_options", "stream_options is only allowed when stream is true")
	}
	if r.Background && !r.Store {
		return nil, false, invalid(codeInvalidValue, "background", "a background response must be stored: drop store=false")
	}
	n, e := maxTokens("max_output_tokens", req.MaxOutputTokens)
	if e != nil {
		return nil, false, e
	}
	r.MaxNew = n
	if req.Reasoning != nil {
		if req.Reasoning.Summary != nil || req.Reasoning.GenerateSummary != nil {
			return nil, false, unsupported("reasoning.summary", "reasoning summaries are not available: the reasoning item carries K3's whole reasoning text")
		}
		if ef := req.Reasoning.Effort; ef != nil {
			r.Effort = ef
			switch *ef {
			case "low", "high", "max":
			case "none":
				r.Thinking = false
			default:
				return nil, false, invalid(codeInvalidValue, "reasoning.effort", "K3 supports low, high or max (or none to turn thinking off), not %q", *ef)
			}
		}
	}
	if r.Stop, e = checkStop(req.Stop); e != nil {
		return nil, false, e
	}
	if e := checkResponseFields(&req); e != nil {
		return nil, false, e
	}
	if r.Input, e = checkInput(req.Input); e != nil {
		return nil, false, e
	}
	return r, stream, nil
}

// checkResponseFields refuses what this server cannot honour.
func checkResponseFields(req *ResponseRequest) *apiError {
	switch {
	case len(req.Tools) > 0:
		return unsupported("tools", "tools are not available on /v1/responses; use /v1/chat/completions")
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return unsupported("top_logprobs", "logprobs are not available")
	case len(req.Include) > 0:
		return unsupported("include[0]", "%q is not available", req.Include[0])
	case !isNull(req.Conversation):
		return unsupported("conversation", "conversations are not available; chain responses with previous_response_id")
	case !isNull(req.Prompt):
		return unsupported("prompt", "prompt templates are not available")
	case req.Truncation != nil && *req.Truncation != "disabled":
		return unsupported("truncation", "only \"disabled\": a conversation longer than the context is refused, never cut")
	}
	// Without tools only "auto" and "none" pass: "required" and a named
	// function are refused as the chat endpoint refuses them without tools.
	if _, _, e := checkToolChoice(req.ToolChoice, nil); e != nil {
		return e
	}
	if req.Text != nil {
		if req.Text.Verbosity != nil && *req.Text.Verbosity != "medium" {
			return unsupported("text.verbosity", "verbosity is not adjustable")
		}
		if !isNull(req.Text.Format) {
			var f struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(req.Text.Format, &f) != nil || f.Type != "text" {
				return unsupported("text.format", "constrained output is not available; only {\"type\": \"text\"}")
			}
		}
	}
	return nil
}

// checkInput reads input: a string (one user message) or an array of
// message items and earlier reasoning items (a reasoning item belongs to
// the assistant message after it).
func checkInput(raw json.RawMessage) ([]convMessage, *apiError) {
	if isNull(raw) {
		return nil, invalid(codeMissing, "input", "input is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []convMessage{{Role: "user", Content: s}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid(codeInvalidValue, "input", "must be a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, invalid(codeMissing, "input", "at least one input item is required")
	}
	var out []convMessage
	var reasoning []string
	for i, raw := range items {
		p := fmt.Sprintf("input[%d]", i)
		var it InputItem
		if err := decodeStrict(raw, &it); err != nil {
			return nil, jsonError(err, p)
		}
		switch it.Type {
		case "reasoning":
			var parts []InputPart
			if !isNull(it.Content) {
				if err := json.Unmarshal(it.Content, &parts); err != nil {
					return nil, invalid(codeInvalidValue, p+".content", "must be an array of reasoning_text parts")
				}
			}
			for _, part := range parts {
				if part.Text != nil {
					reasoning = append(reasoning, *part.Text)
				}
			}
			continue
		case "", "message":
		default:
			return nil, unsupported(p+".type", "input items of type %q are not available", it.Type)
		}
		m, e := checkInputMessage(p, it)
		if e != nil {
			return nil, e
		}
		if len(reasoning) > 0 {
			if m.Role != "assistant" {
				return nil, invalid(codeInvalidValue, p, "a reasoning item must precede an assistant message")
			}
			m.Reasoning = strings.Join(reasoning, "")
			reasoning = nil
		}
		out = append(out, m)
	}
	if len(reasoning) > 0 {
		return nil, invalid(codeInvalidValue, fmt.Sprintf("input[%d]", len(items)-1), "a reasoning item must precede an assistant message")
	}
	return out, nil
}

func checkInputMessage(p string, it InputItem) (convMessage, *apiError) {
	m := convMessage{Role: it.Role}
	if it.ID != nil {
		m.ID = *it.ID
	}
	switch it.Role {
	case "user", "assistant", "system":
	case "developer":
		m.Role = "system"
	case "":
		return m, invalid(codeMissing, p+".role", "a message needs a role")
	default:
		return m, invalid(codeInvalidValue, p+".role", "unknown role %q: expected user, assistant, system or developer", it.Role)
	}
	if isNull(it.Content) {
		return m, invalid(codeMissing, p+".content", "a message needs content")
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		m.Content = s
		return m, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(it.Content, &parts) != nil {
		return m, invalid(codeInvalidValue, p+".content", "must be a string or an array of content parts")
	}
	var text strings.Builder
	for j, raw := range parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		var part InputPart
		if err := decodeStrict(raw, &part); err != nil {
			return m, jsonError(err, pp)
		}
		switch part.Type {
		case "input_text", "output_text":
			if part.Text == nil {
				return m, invalid(codeMissing, pp+".text", "a text part needs text")
			}
			text.WriteString(*part.Text)
		case "input_image":
			return m, unsupported(pp, "image parts are not supported: this model reads text only")
		case "input_file":
			return m, unsupported(pp, "file parts are not supported: send the text")
		default:
			return m, invalid(codeInvalidValue, pp+".type", "unknown content part type %q", part.Type)
		}
	}
	m.Content = text.String()
	return m, nil
}

// render turns a record's conversation into chat messages and options.
func (r *respRecord) render() ([]chat.Message, chat.Options) {
	var msgs []chat.Message
	if r.Instructions != nil && *r.Instructions != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: *r.Instructions})
	}
	for _, m := range r.Messages {
		msgs = append(msgs, chat.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning})
	}
	o := chat.DefaultOptions()
	o.Thinking = r.Thinking
	if r.Effort != nil && r.Thinking {
		o.Effort = *r.Effort
	}
	return msgs, o
}
