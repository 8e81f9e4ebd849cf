package server

import (
	"strings"
	"unicode/utf8"
)

// titleWords is how many words of its request name a job in the queue.
const titleWords = 8

// firstWords is text's first titleWords words on one line, with "…" when
// cut: how the menu and the page name a job instead of its resp_… id.
func firstWords(text string) string {
	f := strings.Fields(text)
	cut := len(f) > titleWords
	if cut {
		f = f[:titleWords]
	}
	s := strings.Join(f, " ")
	if utf8.RuneCountInString(s) > 80 {
		s, cut = string([]rune(s)[:79]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// chatTitle names a chat or completion job by the last user message, or
// the prompt text.
func chatTitle(g *genRequest) string {
	for i := len(g.messages) - 1; i >= 0; i-- {
		if m := g.messages[i]; m.role == "user" {
			return firstWords(m.content + " " + strings.Join(m.parts, " "))
		}
	}
	return firstWords(g.prompt)
}

// inputTitle names a Responses job by its last user message.
func inputTitle(in []convMessage) string {
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role == "user" {
			return firstWords(in[i].Content)
		}
	}
	return ""
}

// name sets the ticket's title (JobStatus.Title).
func (t *ticket) name(title string) *ticket {
	t.q.mu.Lock()
	t.st.Title = title
	t.q.mu.Unlock()
	return t
}
