package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/deltafin/deltafin/engine/tokenizer"
)

// The control markers. They are special tokens, and only ever produced from
// Control segments.
const (
	Open     = "<|open|>"
	Close    = "<|close|>"
	Sep      = "<|sep|>"
	EndOfMsg = "<|end_of_msg|>"
)

var (
	// ErrEffort is returned for a thinking effort K3 does not accept.
	ErrEffort = errors.New("chat: unsupported thinking effort")
	// ErrMessage is wrapped by every error about a message that cannot be
	// rendered (unknown role, non-text content part, unnamed tool result,
	// tool-call arguments that are JSON but not an object).
	ErrMessage = errors.New("chat: invalid message")
	// ErrTool is wrapped when a declared tool is not a JSON value.
	ErrTool = errors.New("chat: invalid tool declaration")
)

// Segment is one piece of a rendered prompt. Control segments are encoded
// with special tokens allowed, all others as plain text.
type Segment struct {
	Text    string
	Control bool
}

// Part is one element of a message's content given as a list. Only "text"
// parts exist in this text-only engine.
type Part struct {
	Type string // "text"
	Text string
}

// ToolCall is one call in an assistant message, as the OpenAI API sends it.
type ToolCall struct {
	ID       string
	Type     string // "function"
	Function FunctionCall
}

// FunctionCall names the tool and carries its arguments as JSON text. An
// arguments string that is not JSON is rendered raw.
type FunctionCall struct {
	Name      string
	Arguments string
}

// Tool is one tool declaration as the client sent it, a JSON object such as
// {"type":"function","function":{"name":…,"parameters":…}}. It is rendered
// with keys sorted recursively, so field order does not matter.
type Tool = json.RawMessage

// Message is one OpenAI-style chat message.
type Message struct {
	Role             string // system, developer (rendered as system), user, assistant, tool
	Name             string // user/system: rendered as name="…"; tool: the tool's name if no call matches
	Content          string
	Parts            []Part // content as a list of text parts; used instead of Content when non-nil
	ReasoningContent string // assistant: the think channel of an earlier turn
	ToolCalls        []ToolCall
	ToolCallID       string // tool: the call this result answers
	Tools            []Tool // system: tools added mid-conversation ("## New Tools Available")
}

// Options are the request-level settings of a rendering.
type Options struct {
	Thinking bool   // think before answering (DefaultOptions: true)
	Effort   string // low, high or max ("" = max); ignored when Thinking is off
	// ForgetReasoning leaves out the reasoning of every assistant turn
	// before the last user message (preserve_thinking=false); the
	// reasoning of the current turn's tool loop stays. K3's renderer
	// keeps every turn's reasoning (Moonshot's thinking.keep "all"), so
	// the zero value is K3's default.
	ForgetReasoning bool
	Tools           []Tool
	// ToolChoice "required" or "none" adds the tool-choice instruction;
	// "" and "auto" add nothing. "required" also starts the generation
	// inside the tools block (the prompt ends with its opening tags, an
	// empty think and response before them), so the model writes a call.
	ToolChoice string
	// ToolName forces a call of this tool: the "required" instruction, and
	// the prompt ends inside the call's opening tag, so the model writes
	// only its arguments. The official template has no text for a named
	// tool_choice; "required" is the one that says a call must come.
	ToolName string
	// ResponseFormat "json_object" or "json_schema" (with Schema) adds the
	// response-format instruction.
	ResponseFormat *ResponseFormat
	// NoGenerationPrompt leaves out the opening of the assistant's turn, to
	// render a finished conversation.
	NoGenerationPrompt bool
}

// ResponseFormat is OpenAI's response_format.
type ResponseFormat struct {
	Type   string          // json_object or json_schema
	Schema json.RawMessage // json_schema: the schema
}

// DefaultOptions are K3's defaults: thinking on at effort max.
func DefaultOptions() Options { return Options{Thinking: true, Effort: "max"} }

// Efforts lists the accepted thinking efforts, in a fresh slice.
func Efforts() []string { return []string{"low", "high", "max"} }

// CheckEffort returns ErrEffort unless effort is "", low, high or max.
// "medium" is refused although K3's own instruction text names it: the
// official renderer rejects it.
func CheckEffort(effort string) error {
	switch effort {
	case "", "low", "high", "max":
		return nil
	}
	return fmt.Errorf("%w %q: K3 accepts low, high or max", ErrEffort, effort)
}

const effortText = "`thinking_effort` guides on how much to think in your thinking channel " +
	"(not including the response channel), supported values include `low`, `medium`, `high`, and `max`.\n" +
	"Now the system is invoked with `thinking_effort=%s`."

// renderer accumulates segments, dropping empty ones.
type renderer struct{ segs []Segment }

func (r *renderer) control(s string) { r.segs = append(r.segs, Segment{Text: s, Control: true}) }
func (r *renderer) text(s string) {
	if s != "" {
		r.segs = append(r.segs, Segment{Text: s})
	}
}

// open emits <|open|>tag, then ` key`, `="`, the escaped value and `"` as
// separate segments per attribute, then <|sep|>.
func (r *renderer) open(tag string, attrs ...string) {
	r.control(Open)
	r.text(tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		r.text(" " + attrs[i])
		r.text(`="`)
		r.text(escapeAttr(attrs[i+1]))
		r.text(`"`)
	}
	r.control(Sep)
}

func (r *renderer) close(tag string) {
	r.control(Close)
	r.text(tag)
	r.control(Sep)
}

func (r *renderer) internal(kind, body string) {
	r.open("message", "role", "system", "type", kind)
	r.text(strings.TrimFunc(body, pySpace))
	r.close("message")
	r.control(EndOfMsg)
}

func escapeAttr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "&", "&amp;"), `"`, "&quot;")
}

// pySpace is Python's str.isspace, which str.strip uses.
func pySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// Render returns the prompt segments for msgs, exactly as K3's official
// renderer (encoding_k3.py build_chat_segments) produces them.
func Render(msgs []Message, opts Options) ([]Segment, error) {
	var r renderer
	if len(opts.Tools) > 0 {
		if err := r.toolDeclare(opts.Tools, false); err != nil {
			return nil, err
		}
	}
	if opts.Thinking {
		if err := CheckEffort(opts.Effort); err != nil {
			return nil, err
		}
		effort := opts.Effort
		if effort == "" {
			effort = "max"
		}
		r.internal("thinking-effort", fmt.Sprintf(effortText, effort))
	}
	msgs = orderToolResults(msgs)
	lastUser := -1
	if opts.ForgetReasoning {
		for i, m := range msgs {
			if m.Role == "user" {
				lastUser = i
			}
		}
	}
	var prior []ToolCall // the last assistant message's calls
	toolIndex := 0
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer":
			if len(m.Tools) > 0 {
				if err := r.toolDeclare(m.Tools, true); err != nil {
					return nil, fmt.Errorf("message %d: %w", i, err)
				}
				continue
			}
			if err := r.plain("system", m); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
		case "user":
			if err := r.plain("user", m); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
		case "assistant":
			prior, toolIndex = m.ToolCalls, 0
			if i < lastUser {
				m.ReasoningContent = ""
			}
			if err := r.assistant(m, opts.Thinking); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
		case "tool":
			toolIndex++
			name := m.Name
			if name == "" && toolIndex <= len(prior) {
				name = prior[toolIndex-1].Function.Name
			}
			if name == "" {
				return nil, fmt.Errorf("%w: message %d: tool result names no tool and matches no call", ErrMessage, i)
			}
			r.open("message", "role", "tool", "tool", name, "index", strconv.Itoa(toolIndex))
			if err := r.content(m); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			r.close("message")
			r.control(EndOfMsg)
		default:
			return nil, fmt.Errorf("%w: message %d has role %q (want system, user, assistant or tool)", ErrMessage, i, m.Role)
		}
	}
	switch {
	case opts.forced():
		r.internal("tool-choice", "The system is invoked with `tool_choice=required`.\nYou MUST call tools in the next message.")
	case opts.ToolChoice == "none":
		r.internal("tool-choice", "The system is invoked with `tool_choice=none`.\nYou MUST NOT call any tools in the next message.")
	}
	if err := r.responseFormat(opts.ResponseFormat); err != nil {
		return nil, err
	}
	if !opts.NoGenerationPrompt {
		r.open("message", "role", "assistant")
		switch {
		case opts.forced():
			// The turn so far as the renderer writes an assistant
			// message with no reasoning and no content, then the
			// tools block opened.
			if opts.Thinking {
				r.open("think")
				r.close("think")
			}
			r.open("response")
			r.close("response")
			r.open("tools")
			if opts.ToolName != "" {
				r.open("call", "tool", opts.ToolName, "index", "1")
			}
		case opts.Thinking:
			r.open("think")
		default:
			r.open("response")
		}
	}
	return r.segs, nil
}

// forced reports whether the options force a tool call.
func (o Options) forced() bool { return o.ToolChoice == "required" || o.ToolName != "" }

func (r *renderer) plain(role string, m Message) error {
	if m.Name != "" {
		r.open("message", "role", role, "name", m.Name)
	} else {
		r.open("message", "role", role)
	}
	if err := r.content(m); err != nil {
		return err
	}
	r.close("message")
	r.control(EndOfMsg)
	return nil
}

// content emits a message's content: one segment for a string, one per
// text part for a list (the boundaries between parts are kept).
func (r *renderer) content(m Message) error {
	if m.Parts == nil {
		r.text(m.Content)
		return nil
	}
	for i, p := range m.Parts {
		if p.Type != "text" {
			return fmt.Errorf("%w: content part %d has type %q; only text is supported", ErrMessage, i, p.Type)
		}
		r.text(p.Text)
	}
	return nil
}

func (r *renderer) assistant(m Message, thinking bool) error {
	r.open("message", "role", "assistant")
	if thinking {
		r.open("think")
		if strings.TrimFunc(m.ReasoningContent, pySpace) != "" {
			r.text(m.ReasoningContent)
		}
		r.close("think")
	}
	r.open("response")
	if err := r.content(m); err != nil {
		return err
	}
	r.close("response")
	if len(m.ToolCalls) > 0 {
		r.open("tools")
		for i, c := range m.ToolCalls {
			if err := r.call(i+1, c); err != nil {
				return err
			}
		}
		r.close("tools")
	}
	r.close("message")
	r.control(EndOfMsg)
	return nil
}

// call renders one tool call: each argument of a JSON-object arguments
// string in its own typed block, or a string that is not JSON raw inside a
// json block.
func (r *renderer) call(index int, c ToolCall) error {
	r.open("call", "tool", c.Function.Name, "index", strconv.Itoa(index))
	args := c.Function.Arguments
	if strings.TrimFunc(args, pySpace) != "" {
		v, err := parseJSON([]byte(args))
		switch {
		case err != nil:
			r.open("json", "type", "object")
			r.text(args)
			r.close("json")
		case v.kind != 'o':
			return fmt.Errorf("%w: tool call %d (%s): arguments must be a JSON object", ErrMessage, index, c.Function.Name)
		default:
			for k, key := range v.keys {
				val := v.vals[k]
				r.open("argument", "key", key, "type", xtmlType(val))
				if val.kind == 's' {
					r.text(val.s)
				} else {
					r.text(val.dumps(false))
				}
				r.close("argument")
			}
		}
	}
	r.close("call")
	return nil
}

func xtmlType(v jvalue) string {
	switch v.kind {
	case 'b':
		return "boolean"
	case 'n':
		return "null"
	case '#':
		return "number"
	case 's':
		return "string"
	case 'o':
		return "object"
	}
	return "array"
}

func (r *renderer) toolDeclare(tools []Tool, dynamic bool) error {
	arr := jvalue{kind: 'a', vals: make([]jvalue, len(tools))}
	for i, t := range tools {
		v, err := parseJSON(t)
		if err != nil {
			return fmt.Errorf("%w: tool %d: %v", ErrTool, i, err)
		}
		arr.vals[i] = v
	}
	js := arr.sortKeys().dumps(true)
	if dynamic {
		r.internal("tool-declare", "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\n"+
			"You have access to all existing and extended tools.\nHere are the specs for the extended tools.\n\n```json\n"+js+"\n```")
		return nil
	}
	r.internal("tool-declare", "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n"+js+"\n```")
	return nil
}

func (r *renderer) responseFormat(f *ResponseFormat) error {
	if f == nil {
		return nil
	}
	const head = "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting."
	switch f.Type {
	case "", "text":
	case "json_object":
		r.internal("response-format", "The system is invoked with `response_format=json_object`.\n"+head)
	case "json_schema":
		v, err := parseJSON(f.Schema)
		if err != nil {
			return fmt.Errorf("%w: response_format schema: %v", ErrMessage, err)
		}
		r.internal("response-format", "The system is invoked with `response_format=json_schema`.\n"+head+
			"\nThe JSON data must match the following schema:\n```json\n"+v.sortKeys().dumps(true)+"\n```")
	default:
		return fmt.Errorf("%w: response_format type %q (want text, json_object or json_schema)", ErrMessage, f.Type)
	}
	return nil
}

// orderToolResults names tool results after the assistant call they answer
// and, when every result in a run of consecutive tool messages matches a
// call ID, puts the run in the calls' order (encoding_k3.py
// normalize_xtml_tool_result_messages).
func orderToolResults(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	type target struct {
		pos  int
		name string
	}
	calls := map[string]target{}
	for i := 0; i < len(msgs); {
		m := msgs[i]
		if m.Role == "assistant" {
			calls = map[string]target{}
			for p, c := range m.ToolCalls {
				if _, seen := calls[c.ID]; !seen && c.ID != "" {
					calls[c.ID] = target{p + 1, c.Function.Name}
				}
			}
		}
		if m.Role != "tool" {
			out = append(out, m)
			i++
			continue
		}
		start := len(out)
		resolved := true
		var pos []int
		for ; i < len(msgs) && msgs[i].Role == "tool"; i++ {
			m := msgs[i]
			t, ok := calls[m.ToolCallID]
			if !ok || m.ToolCallID == "" {
				resolved = false
				pos = append(pos, 0)
			} else {
				if t.name != "" {
					m.Name = t.name
				}
				pos = append(pos, t.pos)
			}
			out = append(out, m)
		}
		if !resolved {
			copy(out[start:], msgs[i-len(pos):i]) // an unresolved run stays as given
			continue
		}
		run := out[start:]
		idx := make([]int, len(run))
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool { return pos[idx[a]] < pos[idx[b]] })
		sorted := make([]Message, len(run))
		for k, j := range idx {
			sorted[k] = run[j]
		}
		copy(run, sorted)
	}
	return out
}

// Tokenize encodes segments one by one: control segments with specials
// allowed, all others as plain text.
func Tokenize(t *tokenizer.Tokenizer, segs []Segment) []int {
	var ids []int
	for _, s := range segs {
		if s.Control {
			ids = append(ids, t.EncodeSpecial(s.Text)...)
		} else {
			ids = append(ids, t.Encode(s.Text)...)
		}
	}
	return ids
}

// ErrTokenizer is returned by Prompt for a vocabulary without K3's control
// tokens, where the markers would silently become plain text.
var ErrTokenizer = errors.New("chat: tokenizer lacks the K3 chat control tokens")

// CheckTokenizer returns ErrTokenizer unless t has every control marker as
// a special token.
func CheckTokenizer(t *tokenizer.Tokenizer) error {
	for _, name := range []string{Open, Close, Sep, EndOfMsg} {
		if _, ok := t.SpecialID(name); !ok {
			return fmt.Errorf("%w: no special %s", ErrTokenizer, name)
		}
	}
	return nil
}

// Prompt renders msgs and tokenizes the segments: the prompt ids to feed
// the engine.
func Prompt(t *tokenizer.Tokenizer, msgs []Message, opts Options) ([]int, error) {
	if err := CheckTokenizer(t); err != nil {
		return nil, err
	}
	segs, err := Render(msgs, opts)
	if err != nil {
		return nil, err
	}
	return Tokenize(t, segs), nil
}

// StopTokens are the ids that end an assistant turn: <|end_of_msg|> (K3's
// eos_token_id) and [EOS] where the vocabulary has them.
func StopTokens(t *tokenizer.Tokenizer) []int {
	var ids []int
	for _, name := range []string{EndOfMsg, "[EOS]"} {
		if id, ok := t.SpecialID(name); ok {
			ids = append(ids, id)
		}
	}
	return ids
}
