package server

import (
	"encoding/json"

	"github.com/deltafin/deltafin/store"
)

// This file holds the OpenAI wire types: what clients send and what they
// expect back. They carry no behaviour; request.go validates the requests
// and convert.go builds the responses.
//
// Fields whose JSON type varies (a string or an array, an object or a
// string) are json.RawMessage so that the validator can name the exact
// field ("messages[2].content[0]") when one is wrong. Every field OpenAI
// defines that we accept is listed, even those we ignore, because the
// decoder refuses unknown fields: a request we do not understand fails
// instead of being half-honoured.

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model               string            `json:"model"`
	Messages            []ChatMessage     `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	TopK                *int              `json:"top_k"` // vLLM's extension, as min_p
	MinP                *float64          `json:"min_p"`
	N                   *int              `json:"n"`
	Stream              *bool             `json:"stream"`
	StreamOptions       *StreamOptions    `json:"stream_options"`
	Stop                json.RawMessage   `json:"stop"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	LogitBias           map[string]any    `json:"logit_bias"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	Seed                *int64            `json:"seed"`
	User                *string           `json:"user"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	ReasoningEffort     *string           `json:"reasoning_effort"`
	// Thinking is Moonshot's thinking object and ChatTemplateKwargs the
	// vLLM/SGLang template arguments (thinking, preserve_thinking,
	// thinking_effort); controls.go settles them with reasoning_effort.
	Thinking           *ThinkingParam             `json:"thinking"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
	Metadata           map[string]string          `json:"metadata"`
	Store              *bool                      `json:"store"`
	ServiceTier        *string                    `json:"service_tier"`
	Modalities         []string                   `json:"modalities"`
	PromptCacheKey     *string                    `json:"prompt_cache_key"`
	SafetyIdentifier   *string                    `json:"safety_identifier"`
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage       *bool `json:"include_usage"`
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

// ChatMessage is one entry of messages. Content is a string, null or an
// array of content parts.
type ChatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             *string         `json:"name"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []ChatToolCall  `json:"tool_calls"`
	ToolCallID       *string         `json:"tool_call_id"`
	Refusal          *string         `json:"refusal"`
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type       string          `json:"type"`
	Text       *string         `json:"text"`
	ImageURL   json.RawMessage `json:"image_url"`
	InputAudio json.RawMessage `json:"input_audio"`
	File       json.RawMessage `json:"file"`
	Refusal    *string         `json:"refusal"`
}

// ChatToolCall is an assistant message's tool call.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and its arguments, a JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool declares a tool the model may call.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is a declared function.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// CompletionRequest is the body of POST /v1/completions. Prompt is a
// string, an array of one string, an array of token ids or an array of one
// array of token ids.
type CompletionRequest struct {
	Model            string          `json:"model"`
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        *int            `json:"max_tokens"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	TopK             *int            `json:"top_k"`
	MinP             *float64        `json:"min_p"`
	N                *int            `json:"n"`
	BestOf           *int            `json:"best_of"`
	Stream           *bool           `json:"stream"`
	StreamOptions    *StreamOptions  `json:"stream_options"`
	Stop             json.RawMessage `json:"stop"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	LogitBias        map[string]any  `json:"logit_bias"`
	Logprobs         *int            `json:"logprobs"`
	Echo             *bool           `json:"echo"`
	Suffix           *string         `json:"suffix"`
	Seed             *int64          `json:"seed"`
	User             *string         `json:"user"`
}

// ErrorBody is every error response: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is OpenAI's error object. Param names the request field at
// fault; Code is a stable machine-readable reason.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string        `json:"object"`
	Data   []ModelObject `json:"data"`
}

// ModelObject describes the served model.
type ModelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Description is Deltafin's own field: what the model is when it is
	// not K3 (the demo model's random weights).
	Description string `json:"description,omitempty"`
}

// Usage counts tokens. Prompt tokens are the rendered prompt's; completion
// tokens are those generated, the end-of-turn token excluded.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatCompletion is a non-streamed chat answer.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []ChatChoice `json:"choices"`
	Usage             Usage        `json:"usage"`
	// Seed is Deltafin's: the seed the answer was sampled with (the
	// request's, or the one the server drew), also in X-Deltafin-Seed.
	Seed *int64 `json:"seed,omitempty"`
}

// ChatChoice is the single choice of a chat answer.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     *struct{}       `json:"logprobs"`
	// OutputError says why the output is not what was asked for (a
	// malformed tool call, content that is not the JSON response_format
	// asked for); absent otherwise. Not OpenAI's: Deltafin never alters
	// K3's tokens to hide it.
	OutputError *OutputError `json:"output_error,omitempty"`
}

// OutputError explains a finish_reason beyond OpenAI's: Code is
// malformed_tool_call, invalid_json or schema_mismatch.
type OutputError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResponseMessage is the assistant's answer; ReasoningContent is K3's
// thinking, kept apart from the answer as DeepSeek and vLLM do.
type ResponseMessage struct {
	Role             string         `json:"role"`
	Content          string         `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	Refusal          *string        `json:"refusal"`
	ToolCalls        []ChatToolCall `json:"tool_calls,omitempty"`
}

// ChatChunk is one server-sent event of a streamed chat answer. Usage is
// null on every chunk but the last when stream_options.include_usage is
// set, and absent otherwise, as OpenAI sends it.
type ChatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []ChatChunkChoice `json:"choices"`
	Usage             *Usage            `json:"usage,omitempty"`
	Seed              *int64            `json:"seed,omitempty"` // on the chunk with the finish_reason
	withUsage         bool
}

// MarshalJSON writes "usage": null on the chunks that precede the usage
// chunk when the client asked for usage.
func (c ChatChunk) MarshalJSON() ([]byte, error) {
	type plain ChatChunk
	if c.withUsage && c.Usage == nil {
		return json.Marshal(struct {
			plain
			Usage *Usage `json:"usage"`
		}{plain: plain(c)})
	}
	return json.Marshal(plain(c))
}

// ChatChunkChoice carries one delta.
type ChatChunkChoice struct {
	Index        int          `json:"index"`
	Delta        ChatDelta    `json:"delta"`
	FinishReason *string      `json:"finish_reason"`
	Logprobs     *struct{}    `json:"logprobs"`
	OutputError  *OutputError `json:"output_error,omitempty"` // with the finish_reason, as in ChatChoice
}

// ChatDelta is the increment of a streamed message.
type ChatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a streamed tool call: its first delta carries ID, Type
// and the function's name (and the arguments so far, maybe none); the
// later ones only argument fragments, which concatenate to the arguments.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Completion is a /v1/completions answer, streamed or not: a stream sends
// one per text increment with the same shape.
type Completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []CompletionChoice `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
	Seed              *int64             `json:"seed,omitempty"` // as ChatCompletion's; streamed, on the last chunk
	withUsage         bool
}

// MarshalJSON writes "usage": null before the usage chunk, as ChatChunk does.
func (c Completion) MarshalJSON() ([]byte, error) {
	type plain Completion
	if c.withUsage && c.Usage == nil {
		return json.Marshal(struct {
			plain
			Usage *Usage `json:"usage"`
		}{plain: plain(c)})
	}
	return json.Marshal(plain(c))
}

// CompletionChoice is the single choice of a completion.
type CompletionChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

// Drafting is /health's count of the engine's decode passes and drafts
// over every generation since the server started.
type Drafting struct {
	// Draft names the drafter beside n-gram speculation ("" for none).
	Draft         string  `json:"draft,omitempty"`
	TargetPasses  int     `json:"target_passes"`
	VerifyPasses  int     `json:"verify_passes"`
	Drafted       int     `json:"drafted_tokens"`
	Accepted      int     `json:"accepted_tokens"`
	BytesPerToken float64 `json:"bytes_per_token"`
}

// Health is the body of GET /health.
type Health struct {
	Status string `json:"status"`
	Model  string `json:"model"`
	// Description says what the model is when it is not K3 (the demo).
	Description string `json:"description,omitempty"`
	Busy        bool   `json:"busy"`
	Queued      int    `json:"queued"`
	// Queue is what runs and what waits, with progress and ETAs.
	Queue QueueStatus `json:"queue"`
	// Drafting is the decode passes since start: the target's passes, the
	// tokens drafted and accepted, and the bytes read per token.
	Drafting Drafting `json:"drafting"`
	// StoreRecovered is set when the job store's file was found damaged
	// at start: where it went and what was saved from it.
	StoreRecovered *store.Recovery `json:"store_recovered,omitempty"`
}
