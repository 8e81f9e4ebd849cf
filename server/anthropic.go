package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API's wire types (POST /v1/messages and
// /v1/messages/count_tokens), as Anthropic's SDKs and Claude Code send and
// read them. As for OpenAI's, fields whose JSON type varies are
// json.RawMessage so that validation (anthropic_request.go) names the
// exact field, and the decoder refuses fields it does not know.

// MessagesRequest is the body of POST /v1/messages (and, without
// max_tokens, of /v1/messages/count_tokens).
type MessagesRequest struct {
	Model         string             `json:"model"`
	Messages      []AnthropicMessage `json:"messages"`
	MaxTokens     *int               `json:"max_tokens"`
	System        json.RawMessage    `json:"system"` // a string or text blocks
	StopSequences []string           `json:"stop_sequences"`
	Stream        *bool              `json:"stream"`
	Temperature   *float64           `json:"temperature"`
	TopP          *float64           `json:"top_p"`
	TopK          *int               `json:"top_k"`
	// MinP and Seed are Deltafin's (the chat path's), not Anthropic's.
	MinP       *float64          `json:"min_p"`
	Seed       *int64            `json:"seed"`
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage   `json:"tool_choice"`
	Thinking   json.RawMessage   `json:"thinking"`
	// OutputConfig is {effort, format}: the thinking effort and a JSON
	// schema for the answer.
	OutputConfig json.RawMessage `json:"output_config"`
	Metadata     *struct {
		UserID *string `json:"user_id"`
	} `json:"metadata"`
	ServiceTier *string `json:"service_tier"`
	// ContextManagement asks Anthropic's servers to clear old thinking or
	// tool results from long conversations; accepted and not applied:
	// the whole conversation sent is rendered.
	ContextManagement json.RawMessage `json:"context_management"`
	// Container and MCPServers are Anthropic's hosted tools: refused
	// unless empty.
	Container  json.RawMessage `json:"container"`
	MCPServers json.RawMessage `json:"mcp_servers"`
}

// AnthropicMessage is one entry of messages: content is a string or an
// array of content blocks.
type AnthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentBlock is any content block a request carries; which fields
// belong to which type is checked in validation.
type ContentBlock struct {
	Type         string          `json:"type"`
	CacheControl json.RawMessage `json:"cache_control"`
	// text
	Text      *string         `json:"text"`
	Citations json.RawMessage `json:"citations"`
	// image, document
	Source  json.RawMessage `json:"source"`
	Title   json.RawMessage `json:"title"`
	Context json.RawMessage `json:"context"`
	// tool_use
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Caller json.RawMessage `json:"caller"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	// thinking, redacted_thinking
	Thinking  *string `json:"thinking"`
	Signature *string `json:"signature"`
	Data      *string `json:"data"`
}

// AnthropicTool is a declared client tool.
type AnthropicTool struct {
	Type         *string         `json:"type"` // absent or "custom"; others are server tools
	Name         string          `json:"name"`
	Description  *string         `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
	Strict       *bool           `json:"strict"`
	// DeferLoading marks a tool the model only learns of through a tool
	// search: it is not declared in the prompt.
	DeferLoading   *bool           `json:"defer_loading"`
	InputExamples  json.RawMessage `json:"input_examples"`
	AllowedCallers json.RawMessage `json:"allowed_callers"`
	EagerInput     *bool           `json:"eager_input_streaming"`
}

// Message is a /v1/messages answer, and the message of a stream's
// message_start event (with no content yet).
type Message struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []ResponseBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        MessageUsage    `json:"usage"`
	// OutputError (Deltafin's, as on chat's choices) says why the output
	// is not what was asked for: a tools block that does not parse, an
	// answer that is not the JSON output_config.format asked for.
	OutputError *OutputError `json:"output_error,omitempty"`
}

// ResponseBlock is a content block of an answer: text, thinking (with its
// signature) or tool_use. Input is present only on tool_use.
type ResponseBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// MessageUsage counts tokens: input_tokens are the rendered prompt's,
// output_tokens those generated (the end-of-turn token excluded). Prompt
// caching is not Anthropic's: the cache fields are always 0.
type MessageUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// TokenCount is the body of a count_tokens answer.
type TokenCount struct {
	InputTokens int `json:"input_tokens"`
}

// AnthropicError is every error answer on the Messages API's paths, and a
// stream's error event: {"type":"error","error":{"type","message"}}.
type AnthropicError struct {
	Type  string               `json:"type"`
	Error AnthropicErrorDetail `json:"error"`
}

// AnthropicErrorDetail is the error proper.
type AnthropicErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// isAnthropic reports whether path is the Messages API's: its errors take
// Anthropic's shape.
func isAnthropic(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}

// anthropicBody renders e in Anthropic's shape; the field at fault leads
// the message, as Anthropic's own messages name it.
func (e *apiError) anthropicBody() AnthropicError {
	typ := "invalid_request_error"
	switch {
	case e.status == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.status == http.StatusForbidden:
		typ = "permission_error"
	case e.status == http.StatusNotFound:
		typ = "not_found_error"
	case e.status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case e.status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.status == http.StatusServiceUnavailable:
		typ = "overloaded_error"
	case e.status >= 500:
		typ = "api_error"
	}
	msg := e.text()
	if e.param != "" {
		msg = fmt.Sprintf("%s: %s", e.param, msg)
	}
	return AnthropicError{Type: "error", Error: AnthropicErrorDetail{Type: typ, Message: msg}}
}
