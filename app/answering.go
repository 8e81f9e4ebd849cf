package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deltafin/deltafin/server"
)

// QueueReporter is implemented by a Server that can show its job queue:
// the menu polls it to say "Answering… 1 queued" with progress.
type QueueReporter interface {
	Queue() (q server.QueueStatus, serving bool)
}

// Answering is the job queue as the menu shows it.
type Answering struct {
	Running                  bool
	Queued                   int
	PromptDone, PromptTokens int // the running job's prompt, read so far
	Tokens                   int // the running job's generated tokens
	// Thinking is set while the running job is in K3's think channel,
	// with ThinkingTokens its tokens so far.
	Thinking       bool
	ThinkingTokens int
	ETA            time.Duration
	Title          string // the running job's first words
}

// answeringPoll is how often the menu reads the queue.
const answeringPoll = time.Second

// watchQueue keeps State.Answering current while the app runs.
func (a *App) watchQueue(r QueueReporter) {
	a.goWork(func(ctx context.Context) {
		t := time.NewTicker(answeringPoll)
		defer t.Stop()
		var last Answering
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			q, _ := r.Queue()
			now := answeringOf(q)
			if now != last {
				last = now
				a.update(func(s *State) { s.Answering = now })
			}
		}
	})
}

func answeringOf(q server.QueueStatus) Answering {
	ans := Answering{Queued: len(q.Queued)}
	if r := q.Running; r != nil {
		ans.Running = true
		ans.PromptDone, ans.PromptTokens, ans.Tokens, ans.Title = r.PromptDone, r.PromptTokens, r.Tokens, r.Title
		ans.Thinking, ans.ThinkingTokens = r.Thinking, r.ThinkingTokens
		if r.ETASeconds != nil {
			ans.ETA = time.Duration(*r.ETASeconds * float64(time.Second))
		}
	}
	return ans
}

// line is the status text: "Answering “Why is the sky blue?” · reading
// the prompt 40% · 1 waiting, 1 ahead", "Answering… · thinking… 120
// tokens · 1 waiting, 1 ahead".
func (a Answering) line() string {
	if !a.Running && a.Queued == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Answering…")
	if a.Title != "" {
		fmt.Fprintf(&b, " “%s”", a.Title)
	}
	switch {
	case a.Thinking:
		fmt.Fprintf(&b, " · thinking… %s", tokens(a.ThinkingTokens))
	case a.Tokens > 0:
		fmt.Fprintf(&b, " · %s", tokens(a.Tokens))
	case a.PromptTokens > 0:
		fmt.Fprintf(&b, " · reading the prompt %d%%", percent(float64(a.PromptDone)/float64(a.PromptTokens)))
	}
	if a.ETA > 0 {
		fmt.Fprintf(&b, " · at most %s left", formatETA(a.ETA))
	}
	// Each waiting answer has the running one and those before it ahead.
	switch {
	case a.Queued == 1:
		b.WriteString(" · 1 waiting, 1 ahead")
	case a.Queued > 1:
		fmt.Fprintf(&b, " · %d waiting, the last %d ahead", a.Queued, a.Queued)
	}
	return b.String()
}

// tokens is "1 token", "12 tokens".
func tokens(n int) string {
	if n == 1 {
		return "1 token"
	}
	return fmt.Sprintf("%d tokens", n)
}
