package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltafin/deltafin/chat"
)

// Stop sequences: up to four strings that end the answer where they first
// appear in the decoded text (the answer's content for chat, not its
// reasoning). The stop string itself is never sent: a stream holds back the
// shortest tail that could still grow into one, and releases it as soon as
// it cannot. The generation then ends with finish_reason "stop", as it does
// at the end of a turn.

// maxStops is OpenAI's limit on stop sequences.
const maxStops = 4

// checkStop reads stop: null, a string, or an array of up to four
// non-empty strings ("" alone means none).
func checkStop(raw json.RawMessage) ([]string, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil, invalid(codeInvalidValue, "stop", "must be a string or an array of strings")
	}
	if len(list) > maxStops {
		return nil, invalid(codeInvalidValue, "stop", "at most %d stop sequences, got %d", maxStops, len(list))
	}
	for i, s := range list {
		if s == "" {
			return nil, invalid(codeInvalidValue, fmt.Sprintf("stop[%d]", i), "a stop sequence cannot be empty")
		}
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list, nil
}

// stopText finds stop sequences in text that arrives in pieces. The zero
// value has none and passes everything through.
type stopText struct {
	stops []string
	held  string // the unsent tail that may begin a stop sequence
	hit   bool
	// callsSent counts the tool calls completed before a stop sequence.
	callsSent int
}

// push takes the next piece and returns what may be sent now; hit reports
// that a stop sequence appeared (the text before it is returned, nothing
// after it ever is).
func (st *stopText) push(s string) (out string, hit bool) {
	if len(st.stops) == 0 || st.hit {
		return s, st.hit
	}
	buf := st.held + s
	if i := firstStop(buf, st.stops); i >= 0 {
		st.hit, st.held = true, ""
		return buf[:i], true
	}
	keep := 0
	for _, stop := range st.stops {
		for k := min(len(stop)-1, len(buf)); k > keep; k-- {
			if strings.HasSuffix(buf, stop[:k]) {
				keep = k
				break
			}
		}
	}
	st.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the held tail at the end of the answer.
func (st *stopText) flush() string {
	h := st.held
	st.held = ""
	return h
}

// cut truncates a whole answer at its first stop sequence.
func (st *stopText) cut(s string) string {
	if i := firstStop(s, st.stops); i >= 0 {
		return s[:i]
	}
	return s
}

// firstStop is the byte offset of the earliest stop sequence in s, or -1.
func firstStop(s string, stops []string) int {
	first := -1
	for _, stop := range stops {
		if i := strings.Index(s, stop); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// events passes the chat parser's events through the stop sequences,
// which match on the content: a Content event gives only what may be sent
// now, and once a stop sequence appears nothing after it is passed. Content
// held back as a possible stop's start is released before any other event
// (a tool call, say) so the order stays; a stop does not span it. last
// releases what is still held at the end of the answer.
func (st *stopText) events(evs []chat.Event, last bool) []chat.Event {
	if len(st.stops) == 0 {
		return evs
	}
	out := evs[:0:0]
	release := func() {
		if h := st.flush(); h != "" {
			out = append(out, chat.Event{Kind: chat.Content, Text: h})
		}
	}
	for _, e := range evs {
		if st.hit {
			return out
		}
		switch e.Kind {
		case chat.Markup:
		case chat.Content:
			e.Text, _ = st.push(e.Text)
		default:
			release()
			if e.Kind == chat.CallDone {
				st.callsSent++
			}
		}
		out = append(out, e)
	}
	if last && !st.hit {
		release()
	}
	return out
}
