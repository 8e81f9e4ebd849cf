package server

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/internal/usertext"
	"github.com/deltafin/deltafin/tokenizer"
)

// respRender turns a response's generated tokens into its output items
// and, when sink is set, into the official stream events in order:
// response.created, response.in_progress, then per item
// output_item.added → content_part.added → deltas → text done →
// content_part.done → output_item.done (a reasoning item with
// reasoning_text, then the assistant message with output_text; a
// function_call item has output_item.added → function_call_arguments
// deltas → .done → output_item.done), and response.completed (or
// .incomplete, .failed). The events are a pure function of the tokens,
// so a stream resumed with starting_after=N replays the tokens and skips
// the events numbered up to N.
type respRender struct {
	base   Response // the settings the response echoes; status and output are filled here
	parser *chat.TokenParser
	stop   stopText
	sink   func(ResponseEvent) error // nil: no events
	seq    int

	reasoning, content []byte // text so far
	items              []OutputItem
	open               int // index in items of the item being written, -1 none
	tokens             int
	reasoningTokens    int
	sawContent         bool
	hit                bool // a stop sequence ended the answer
	thinking           bool
	check              func(content string) *OutputError // text.format's, or nil
}

func newRespRender(base Response, tok *tokenizer.Tokenizer, r *respRecord, sink func(ResponseEvent) error) *respRender {
	_, opts := r.render()
	forced := r.Choice == "required" || r.ToolName != ""
	var check func(string) *OutputError
	if !isNull(r.Format) {
		_, check, _ = textFormat(r.Format) // validated by checkResponseFields
	}
	return &respRender{check: check, base: base, parser: chat.NewTokenParserWith(tok, opts, r.parseOptions(base.ID)), stop: stopText{stops: r.Stop},
		sink: sink, open: -1, thinking: r.Thinking, sawContent: forced}
}

func (rr *respRender) event(ev ResponseEvent) error {
	ev.SequenceNumber = rr.seq
	rr.seq++
	if rr.sink == nil {
		return nil
	}
	return rr.sink(ev)
}

func intp(i int) *int { return &i }

// begin sends response.created (status queued or in_progress as given)
// and response.in_progress.
func (rr *respRender) begin(queued bool) error {
	created := rr.snapshot("in_progress")
	if queued {
		created.Status = "queued"
	}
	if err := rr.event(ResponseEvent{Type: "response.created", Response: &created}); err != nil {
		return err
	}
	inProgress := rr.snapshot("in_progress")
	return rr.event(ResponseEvent{Type: "response.in_progress", Response: &inProgress})
}

// token takes one generated token; engine.ErrStopped says a stop
// sequence ended the answer.
func (rr *respRender) token(id int) error {
	rr.tokens++
	if !rr.sawContent {
		rr.reasoningTokens++
	}
	if err := rr.events(rr.parser.Events(id), false); err != nil {
		return err
	}
	if rr.hit {
		return engine.ErrStopped
	}
	return nil
}

// events renders the parser's events, through the stop sequences (which
// match on the content only): text into the reasoning and message items,
// each tool call into a function_call item.
func (rr *respRender) events(evs []chat.Event, last bool) error {
	if rr.hit {
		return nil
	}
	evs = rr.stop.events(evs, last)
	rr.hit = rr.stop.hit
	for _, e := range evs {
		if e.Kind != chat.Reasoning && e.Kind != chat.Markup && (e.Kind != chat.Content || e.Text != "") && !rr.sawContent {
			rr.sawContent = true
			rr.reasoningTokens-- // the token that began the answer
		}
		var err error
		switch e.Kind {
		case chat.Reasoning:
			if e.Text != "" {
				err = rr.delta("reasoning", e.Text)
			}
		case chat.Content:
			if e.Text != "" {
				err = rr.delta("message", e.Text)
			}
		case chat.CallStart:
			err = rr.openCall(e)
		case chat.CallArguments:
			err = rr.callArguments(e.Text)
		case chat.CallDone:
			err = rr.closeCall("completed")
		case chat.CallFailed:
			err = rr.closeCall("incomplete")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// openCall closes the item being written and opens a function_call item.
func (rr *respRender) openCall(e chat.Event) error {
	if rr.open >= 0 {
		if err := rr.closeItem(); err != nil {
			return err
		}
	}
	n := len(rr.items)
	it := OutputItem{Type: "function_call", ID: itemID(rr.base.ID, "function_call", n), Status: "in_progress", CallID: e.ID, Name: e.Name}
	rr.items = append(rr.items, it)
	rr.open = n
	added := it
	return rr.event(ResponseEvent{Type: "response.output_item.added", OutputIndex: intp(n), Item: &added})
}

func (rr *respRender) callArguments(text string) error {
	it := &rr.items[rr.open]
	it.Arguments += text
	return rr.event(ResponseEvent{Type: "response.function_call_arguments.delta", ItemID: it.ID, OutputIndex: intp(rr.open), Delta: &text})
}

// closeCall ends the open function_call item: completed with its
// arguments, or incomplete when the call did not parse (its raw text
// follows in the message).
func (rr *respRender) closeCall(status string) error {
	n := rr.open
	rr.open = -1
	it := &rr.items[n]
	it.Status = status
	if status == "completed" {
		args := it.Arguments
		if err := rr.event(ResponseEvent{Type: "response.function_call_arguments.done", ItemID: it.ID, OutputIndex: intp(n), Arguments: &args, Name: it.Name}); err != nil {
			return err
		}
	}
	done := *it
	return rr.event(ResponseEvent{Type: "response.output_item.done", OutputIndex: intp(n), Item: &done})
}

// delta appends text to the item of kind typ, opening it (and closing
// the one before) as needed.
func (rr *respRender) delta(typ, text string) error {
	if rr.open >= 0 && rr.items[rr.open].Type != typ {
		if err := rr.closeItem(); err != nil {
			return err
		}
	}
	if rr.open < 0 {
		if err := rr.openItem(typ); err != nil {
			return err
		}
	}
	it := &rr.items[rr.open]
	it.Content[0].Text += text
	evType := "response.output_text.delta"
	if typ == "reasoning" {
		rr.reasoning = append(rr.reasoning, text...)
		evType = "response.reasoning_text.delta"
		(*it.Summary)[0].Text += text
		d := text
		if err := rr.event(ResponseEvent{Type: "response.reasoning_summary_text.delta", ItemID: it.ID, OutputIndex: intp(rr.open), SummaryIndex: intp(0), Delta: &d}); err != nil {
			return err
		}
	} else {
		rr.content = append(rr.content, text...)
	}
	ev := ResponseEvent{Type: evType, ItemID: it.ID, OutputIndex: intp(rr.open), ContentIndex: intp(0), Delta: &text}
	if typ == "message" {
		ev.Logprobs = &[]any{}
	}
	return rr.event(ev)
}

func (rr *respRender) openItem(typ string) error {
	n := len(rr.items)
	it := OutputItem{Type: typ, ID: itemID(rr.base.ID, typ, n), Status: "in_progress"}
	part := OutputPart{Type: "reasoning_text"}
	if typ == "message" {
		it.Role = "assistant"
		part = OutputPart{Type: "output_text", Annotations: &[]json.RawMessage{}, Logprobs: &[]json.RawMessage{}}
	} else {
		it.Summary = &[]SummaryRef{}
	}
	rr.items = append(rr.items, it)
	rr.open = n
	added := cloneItem(it)
	added.Content = []OutputPart{}
	if err := rr.event(ResponseEvent{Type: "response.output_item.added", OutputIndex: intp(n), Item: &added}); err != nil {
		return err
	}
	if typ == "reasoning" {
		// The summary part first: the AI SDK opens its reasoning part on
		// the item and writes the summary deltas into it.
		sum := SummaryRef{Type: "summary_text"}
		rr.items[n].Summary = &[]SummaryRef{sum}
		if err := rr.event(ResponseEvent{Type: "response.reasoning_summary_part.added", ItemID: it.ID, OutputIndex: intp(n), SummaryIndex: intp(0), Part: &sum}); err != nil {
			return err
		}
	}
	rr.items[n].Content = []OutputPart{part}
	return rr.event(ResponseEvent{Type: "response.content_part.added", ItemID: it.ID, OutputIndex: intp(n), ContentIndex: intp(0), Part: &part})
}

func (rr *respRender) closeItem() error {
	if rr.items[rr.open].Type == "function_call" {
		return rr.closeCall("incomplete") // the parser ends every call first; this is a guard
	}
	n := rr.open
	rr.open = -1
	it := &rr.items[n]
	it.Status = "completed"
	text := it.Content[0].Text
	doneType := "response.output_text.done"
	if it.Type == "reasoning" {
		doneType = "response.reasoning_text.done"
	}
	ev := ResponseEvent{Type: doneType, ItemID: it.ID, OutputIndex: intp(n), ContentIndex: intp(0), Text: &text}
	if it.Type == "message" {
		ev.Logprobs = &[]any{}
	}
	if err := rr.event(ev); err != nil {
		return err
	}
	part := it.Content[0]
	if err := rr.event(ResponseEvent{Type: "response.content_part.done", ItemID: it.ID, OutputIndex: intp(n), ContentIndex: intp(0), Part: &part}); err != nil {
		return err
	}
	if it.Type == "reasoning" {
		sum := (*it.Summary)[0]
		sumText := sum.Text
		if err := rr.event(ResponseEvent{Type: "response.reasoning_summary_text.done", ItemID: it.ID, OutputIndex: intp(n), SummaryIndex: intp(0), Text: &sumText}); err != nil {
			return err
		}
		if err := rr.event(ResponseEvent{Type: "response.reasoning_summary_part.done", ItemID: it.ID, OutputIndex: intp(n), SummaryIndex: intp(0), Part: &sum}); err != nil {
			return err
		}
	}
	done := cloneItem(*it)
	return rr.event(ResponseEvent{Type: "response.output_item.done", OutputIndex: intp(n), Item: &done})
}

// finish ends the answer: finish is the engine's reason ("stop",
// "length") or the final state ("cancelled", "failed" with errMsg). It
// flushes what the parser holds, closes the items (there is always an
// assistant message), and sends the terminal event.
func (rr *respRender) finish(finish string, promptTokens int, errMsg string) (Response, error) {
	var oe *OutputError
	if finish == "stop" || finish == "length" {
		if err := rr.events(rr.parser.FinishEvents(finish == "length" && !rr.hit), true); err != nil {
			return Response{}, err
		}
		out := rr.parser.Output()
		switch {
		case out.Err != nil && !rr.hit:
			oe = &OutputError{Code: finishMalformedCall, Message: usertext.Of(out.Err)}
		case out.Err == nil && len(out.Calls) == 0 && rr.check != nil && finish == "stop":
			// text.format json_object or a strict json_schema, checked
			// as chat checks response_format.
			oe = rr.check(out.Content)
		}
	}
	if rr.open >= 0 && rr.items[rr.open].Type == "function_call" {
		// Cancelled or failed inside a call.
		if err := rr.closeCall("incomplete"); err != nil {
			return Response{}, err
		}
	}
	if rr.open >= 0 && rr.items[rr.open].Type == "reasoning" {
		if err := rr.closeItem(); err != nil {
			return Response{}, err
		}
	}
	if rr.open < 0 && !rr.answered() {
		if err := rr.openItem("message"); err != nil {
			return Response{}, err
		}
	}
	if rr.open >= 0 {
		if err := rr.closeItem(); err != nil {
			return Response{}, err
		}
	}
	status, evType := "completed", "response.completed"
	reason := "max_output_tokens"
	switch {
	case finish == "length" && !rr.hit:
		status, evType = "incomplete", "response.incomplete"
	case finish == "cancelled":
		status, evType = "cancelled", "response.cancelled"
	case finish == "failed":
		status, evType = "failed", "response.failed"
	case oe != nil:
		status, evType, reason = "incomplete", "response.incomplete", oe.Code
	}
	resp := rr.snapshot(status)
	resp.OutputError = oe
	if status == "incomplete" {
		resp.IncompleteDetails = &IncompleteDetails{Reason: reason}
	}
	if status == "failed" {
		resp.Error = &ResponseError{Code: "server_error", Message: errMsg}
	}
	u := &ResponseUsage{InputTokens: promptTokens, OutputTokens: rr.tokens, TotalTokens: promptTokens + rr.tokens}
	u.OutputTokensDetails.ReasoningTokens = max(rr.reasoningTokens, 0)
	if !rr.thinking {
		u.OutputTokensDetails.ReasoningTokens = 0
	}
	resp.Usage = u
	return resp, rr.event(ResponseEvent{Type: evType, Response: &resp})
}

// answered reports whether the output ends with the answer: a message,
// or the function calls (then no empty message follows them).
func (rr *respRender) answered() bool {
	if len(rr.items) == 0 {
		return false
	}
	last := rr.items[len(rr.items)-1].Type
	return last == "message" || last == "function_call"
}

// snapshot is the response as it stands, with the given status.
func (rr *respRender) snapshot(status string) Response {
	r := rr.base
	r.Status = status
	r.Output = make([]OutputItem, len(rr.items))
	for i, it := range rr.items {
		r.Output[i] = cloneItem(it)
	}
	return r
}

func cloneItem(it OutputItem) OutputItem {
	it.Content = append([]OutputPart(nil), it.Content...)
	if it.Summary != nil {
		sum := append([]SummaryRef{}, *it.Summary...)
		it.Summary = &sum
	}
	return it
}

// itemID derives an output item's id from the response's, so that a
// replayed stream and the stored response name the same items.
func itemID(respID, typ string, n int) string {
	prefix := "msg_"
	switch typ {
	case "reasoning":
		prefix = "rs_"
	case "function_call":
		prefix = "fc_"
	}
	return prefix + strings.TrimPrefix(respID, "resp_") + "_" + strconv.Itoa(n)
}
