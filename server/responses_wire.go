package server

import "encoding/json"

// The Responses API's wire types (POST /v1/responses and friends), as the
// official SDKs send and read them. Like openai.go: no behaviour, every
// accepted field listed so that the strict decoder refuses the rest.

// ResponseRequest is the body of POST /v1/responses. Input is a string or
// an array of items.
type ResponseRequest struct {
	Model              string             `json:"model"`
	Input              json.RawMessage    `json:"input"`
	Instructions       *string            `json:"instructions"`
	PreviousResponseID *string            `json:"previous_response_id"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Reasoning          *ReasoningParam    `json:"reasoning"`
	Stream             *bool              `json:"stream"`
	StreamOptions      *ResponseStreamOpt `json:"stream_options"`
	Store              *bool              `json:"store"`
	Background         *bool              `json:"background"`
	Metadata           map[string]string  `json:"metadata"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	TopK               *int               `json:"top_k"` // extensions, as on chat
	MinP               *float64           `json:"min_p"`
	Seed               *int64             `json:"seed"`
	TopLogprobs        *int               `json:"top_logprobs"`
	Text               *ResponseTextParam `json:"text"`
	Tools              []json.RawMessage  `json:"tools"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Truncation         *string            `json:"truncation"`
	Include            []string           `json:"include"`
	User               *string            `json:"user"`
	ServiceTier        *string            `json:"service_tier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	Conversation       json.RawMessage    `json:"conversation"`
	Prompt             json.RawMessage    `json:"prompt"`
	// Stop is an extension (chat's stop sequences): up to four strings.
	Stop json.RawMessage `json:"stop"`
}

// ResponseTool is a declared function in the Responses API's flat shape
// (chat nests the same fields under "function").
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description json.RawMessage `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      json.RawMessage `json:"strict"`
}

// ReasoningParam is the request's reasoning object.
type ReasoningParam struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"`
}

// ResponseStreamOpt is stream_options.
type ResponseStreamOpt struct {
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

// ResponseTextParam is the request's text object.
type ResponseTextParam struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

// InputItem is one element of an array input: a message (type "message"
// or no type), or an earlier turn's reasoning item.
type InputItem struct {
	Type             string          `json:"type"`
	ID               *string         `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Status           *string         `json:"status"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	// function_call and function_call_output items.
	CallID    *string         `json:"call_id"`
	Name      *string         `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// InputPart is one content part of an input message.
type InputPart struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
	ImageURL    json.RawMessage `json:"image_url"`
	FileID      json.RawMessage `json:"file_id"`
	FileData    json.RawMessage `json:"file_data"`
	Filename    json.RawMessage `json:"filename"`
	Detail      json.RawMessage `json:"detail"`
}

// Response is a response object: what create returns (the whole answer,
// or a queued one for background), what GET returns and what stream
// events carry.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          ReasoningConfig    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               ResponseTextConfig `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	TopP               float64            `json:"top_p"`
	Seed               *int64             `json:"seed,omitempty"` // Deltafin's: the seed sampled with
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	Metadata           map[string]string  `json:"metadata"`
	// OutputError (an extension, as on chat's choices) says that the
	// model wrote a tools block that does not parse: its raw text ends
	// the message, and the status is incomplete with the reason
	// malformed_tool_call (or max_output_tokens when cut).
	OutputError *OutputError `json:"output_error,omitempty"`
}

// Texts is the response's output text: the message items' (the answer)
// and every other item's (the reasoning), each in output order.
func (r Response) Texts() (reasoning, answer string) {
	for _, it := range r.Output {
		for _, p := range it.Content {
			if it.Type == "message" {
				answer += p.Text
			} else {
				reasoning += p.Text
			}
		}
	}
	return reasoning, answer
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ReasoningConfig echoes the reasoning settings.
type ReasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ResponseTextConfig echoes the text format as sent ({"type":"text"} when
// none was).
type ResponseTextConfig struct {
	Format json.RawMessage `json:"format"`
}

// OutputItem is a "reasoning" item (K3's thinking, in Content as
// reasoning_text and again as the one summary_text part of Summary, which
// is what the AI SDK and Codex show), an assistant "message" item (the
// answer, as output_text) or a "function_call" item (CallID, Name and
// Arguments, a JSON text; no content).
type OutputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	Role      string        `json:"role,omitempty"`
	Summary   *[]SummaryRef `json:"summary,omitempty"`
	Content   []OutputPart  `json:"content"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments string        `json:"arguments,omitempty"`
}

// functionCallItem is a function_call item on the wire: arguments always
// present (empty when the call starts), no content.
type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// MarshalJSON writes a function_call item in its own shape.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	if it.Type == "function_call" {
		return json.Marshal(functionCallItem{Type: it.Type, ID: it.ID, CallID: it.CallID, Name: it.Name, Arguments: it.Arguments, Status: it.Status})
	}
	type plain OutputItem
	return json.Marshal(plain(it))
}

// SummaryRef is a reasoning summary part: K3 writes no separate summary,
// so it is the whole reasoning text.
type SummaryRef struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// OutputPart is output_text (in a message) or reasoning_text (in a
// reasoning item).
type OutputPart struct {
	Type        string             `json:"type"`
	Text        string             `json:"text"`
	Annotations *[]json.RawMessage `json:"annotations,omitempty"`
	Logprobs    *[]json.RawMessage `json:"logprobs,omitempty"`
}

// ResponseUsage counts a response's tokens; reasoning tokens are part of
// the output tokens.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// ResponseEvent is one streamed event; only the fields of its type are
// set.
type ResponseEvent struct {
	Type           string      `json:"type"`
	SequenceNumber int         `json:"sequence_number"`
	Response       *Response   `json:"response,omitempty"`
	OutputIndex    *int        `json:"output_index,omitempty"`
	ItemID         string      `json:"item_id,omitempty"`
	ContentIndex   *int        `json:"content_index,omitempty"`
	SummaryIndex   *int        `json:"summary_index,omitempty"`
	Item           *OutputItem `json:"item,omitempty"`
	Part           any         `json:"part,omitempty"` // *OutputPart or *SummaryRef
	Delta          *string     `json:"delta,omitempty"`
	Text           *string     `json:"text,omitempty"`
	Arguments      *string     `json:"arguments,omitempty"` // function_call_arguments.done
	Name           string      `json:"name,omitempty"`      // function_call_arguments.done
	Logprobs       *[]any      `json:"logprobs,omitempty"`
}

// ResponseErrorEvent is the stream's "error" event: the stream ends
// without a terminal response event (the server shutting down).
type ResponseErrorEvent struct {
	Type           string  `json:"type"`
	Code           string  `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int     `json:"sequence_number"`
}

// ResponseDeleted is the body of DELETE /v1/responses/{id}.
type ResponseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// InputItemList is the body of GET /v1/responses/{id}/input_items.
type InputItemList struct {
	Object  string         `json:"object"`
	Data    []InputItemOut `json:"data"`
	FirstID *string        `json:"first_id"`
	LastID  *string        `json:"last_id"`
	HasMore bool           `json:"has_more"`
}

// InputItemOut is a stored input item: a message (role and content), a
// function_call (call_id, name, arguments) or a function_call_output
// (call_id, output).
type InputItemOut struct {
	Type      string       `json:"type"`
	ID        string       `json:"id"`
	Status    string       `json:"status"`
	Role      string       `json:"role,omitempty"`
	Content   []OutputPart `json:"content,omitempty"`
	CallID    string       `json:"call_id,omitempty"`
	Name      string       `json:"name,omitempty"`
	Arguments *string      `json:"arguments,omitempty"`
	Output    *string      `json:"output,omitempty"`
}
