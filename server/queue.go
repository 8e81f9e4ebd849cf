package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/deltafin/deltafin/engine"
)

// queue runs one generation at a time, for every endpoint (chat,
// completions, responses, background jobs): the engine has one set of
// weights streaming from disk, and two interleaved generations would each
// run at half speed while thrashing the expert cache. Requests that arrive
// while one runs wait in a bounded FIFO line (a K3 answer takes minutes, so
// waiting is the normal case, not an error); only a full line refuses, with
// 429 and Retry-After (depth 0: refused at once, today's behaviour before
// the line existed).
//
// Each ticket also carries its job's progress, so /health and the menu can
// say what runs and what waits, with an ETA from the rates measured on the
// generations that finished before.
type queue struct {
	mu       sync.Mutex
	running  *ticket
	line     []*ticket
	maxQueue int
	now      func() time.Time
	// prefillRate and decodeRate are tokens per second measured on
	// finished generations (prefill and decode, below); 0 = not measured
	// yet.
	prefillRate, decodeRate float64
	prefill, decode         rateSample
	// generated counts every token generated since start; recent holds
	// the last finished generations' figures, oldest first.
	generated int64
	recent    []Generation
}

// recentKept is how many finished generations QueueStatus.Recent lists.
const recentKept = 16

// Generation is one finished generation's speed, for the web page's
// "recent answers".
type Generation struct {
	ID             string  `json:"id"`
	PromptTokens   int     `json:"prompt_tokens"`
	Tokens         int     `json:"tokens"`
	PrefillSeconds float64 `json:"prefill_seconds"`
	DecodeSeconds  float64 `json:"decode_seconds"`
}

// A ticket is one job's place: running or waiting in line. Its owner must
// call release exactly when done with it, whatever happened.
type ticket struct {
	q     *queue
	ready chan struct{} // closed when the ticket's turn comes
	// Under q.mu.
	granted, released bool
	st                JobStatus
	enqueued, started time.Time
	firstToken        bool
}

// JobStatus is one job's place and progress.
type JobStatus struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // "chat.completion" | "text_completion" | "response" | "message"
	// Title is the request's first words (its last user message), what
	// the menu and the page call the job.
	Title string `json:"title,omitempty"`
	State string `json:"state"` // "queued" | "prefilling" | "generating"
	// PromptTokens are the prompt tokens the engine runs (a continued
	// conversation runs only its new ones); PromptDone of them are done,
	// estimated from the measured prefill rate until the first token.
	PromptTokens int `json:"prompt_tokens"`
	PromptDone   int `json:"prompt_done"`
	// Tokens generated so far, of at most MaxTokens.
	Tokens    int `json:"tokens"`
	MaxTokens int `json:"max_tokens"`
	// Thinking is set while the answer is in K3's think channel (before
	// its end-of-thinking marker); ThinkingTokens are the tokens it has
	// thought so far (all of Tokens while Thinking, then frozen).
	Thinking       bool `json:"thinking"`
	ThinkingTokens int  `json:"thinking_tokens"`
	// WaitedSeconds is the time spent in line.
	WaitedSeconds float64 `json:"waited_seconds"`
	// ETASeconds is the time until this job ends at the measured rates if
	// it runs to MaxTokens (an upper bound: most turns end earlier); nil
	// until a generation has been measured.
	ETASeconds *float64 `json:"eta_seconds"`
}

// QueueStatus is a snapshot of the queue: the job at the engine, the line
// in order, the line's capacity and the measured rates (tokens/s, 0 until
// measured).
type QueueStatus struct {
	Running     *JobStatus  `json:"running"`
	Queued      []JobStatus `json:"queued"`
	Depth       int         `json:"depth"`
	PrefillRate float64     `json:"prefill_tokens_per_second"`
	DecodeRate  float64     `json:"decode_tokens_per_second"`
	// Generated counts the tokens generated since the server started;
	// Recent are the last finished generations, oldest first.
	Generated int64        `json:"generated_tokens"`
	Recent    []Generation `json:"recent,omitempty"`
}

func newQueue(maxQueue int) *queue {
	return &queue{maxQueue: max(maxQueue, 0), now: time.Now}
}

// enter admits a job: its turn is now or it waits in line; with the line
// full it returns ErrBusy.
func (q *queue) enter(id, kind string, promptTokens, maxTokens int) (*ticket, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{q: q, ready: make(chan struct{}), enqueued: q.now(),
		st: JobStatus{ID: id, Kind: kind, State: "queued", PromptTokens: promptTokens, MaxTokens: maxTokens}}
	switch {
	case q.running == nil:
		q.grant(t)
	case len(q.line) < q.maxQueue:
		q.line = append(q.line, t)
	default:
		return nil, ErrBusy
	}
	return t, nil
}

// admit enters a job that was acknowledged before (a stored job resumed
// at start): it takes its place even beyond the depth.
func (q *queue) admit(id, kind string, promptTokens, maxTokens int) *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{q: q, ready: make(chan struct{}), enqueued: q.now(),
		st: JobStatus{ID: id, Kind: kind, State: "queued", PromptTokens: promptTokens, MaxTokens: maxTokens}}
	if q.running == nil {
		q.grant(t)
	} else {
		q.line = append(q.line, t)
	}
	return t
}

// grant must be called with q.mu held.
func (q *queue) grant(t *ticket) {
	q.running = t
	t.granted = true
	t.started = q.now()
	t.st.State = "prefilling"
	close(t.ready)
}

// wait blocks until the ticket's turn or until ctx ends (the client left).
func (t *ticket) wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prefill records how many prompt tokens the engine will run (fewer than
// the prompt when a conversation continues).
func (t *ticket) prefill(n int) {
	t.q.mu.Lock()
	t.st.PromptTokens = n
	t.started = t.q.now()
	t.q.mu.Unlock()
}

// token counts one generated token.
func (t *ticket) token() {
	t.q.mu.Lock()
	t.st.Tokens++
	t.q.generated++
	t.st.State = "generating"
	t.firstToken = true
	t.q.mu.Unlock()
}

// think records whether the answer is still thinking after its last
// token.
func (t *ticket) think(on bool) {
	t.q.mu.Lock()
	t.st.Thinking = on
	if on {
		t.st.ThinkingTokens = t.st.Tokens
	}
	t.q.mu.Unlock()
}

// measure folds a finished generation's speed into the rates.
func (t *ticket) measure(res engine.Result) {
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.prefillRate = q.prefill.add(res.PromptTokens, res.Prefill)
	// The first token comes from the prefill's logits: decode ran one
	// pass per token after it. (A max_tokens 1 request decoded nothing in
	// microseconds, and counting its token made the rate 58,295 tok/s.)
	q.decodeRate = q.decode.add(res.Tokens-1, res.Decode)
	if len(q.recent) == recentKept {
		q.recent = q.recent[1:]
	}
	q.recent = append(q.recent, Generation{ID: t.st.ID, PromptTokens: res.PromptTokens, Tokens: res.Tokens,
		PrefillSeconds: res.Prefill.Seconds(), DecodeSeconds: res.Decode.Seconds()})
}

// rateSample measures a rate over many tokens: the tokens and seconds of
// recent generations added up (halved past rateWindow tokens, so old runs
// fade), not an average of per-request rates a short request dominates.
type rateSample struct{ tokens, seconds float64 }

const (
	// minRateTokens is the fewest tokens a rate is measured over: below
	// it the rate (and every ETA from it) stays unknown.
	minRateTokens = 8
	rateWindow    = 4096
)

// add folds n tokens in d into the sample and returns the rate, 0 while
// fewer than minRateTokens have been measured.
func (r *rateSample) add(n int, d time.Duration) float64 {
	if n > 0 && d > 0 {
		r.tokens += float64(n)
		r.seconds += d.Seconds()
		for r.tokens > rateWindow {
			r.tokens, r.seconds = r.tokens/2, r.seconds/2
		}
	}
	if r.tokens < minRateTokens || r.seconds <= 0 {
		return 0
	}
	return r.tokens / r.seconds
}

// release gives the turn to the first in line, or leaves the line. It is
// safe to call more than once.
func (t *ticket) release() {
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	if !t.granted {
		for i, w := range q.line {
			if w == t {
				q.line = append(q.line[:i], q.line[i+1:]...)
				break
			}
		}
		return
	}
	q.running = nil
	if len(q.line) > 0 {
		next := q.line[0]
		q.line = q.line[1:]
		q.grant(next)
	}
}

// counts reports whether a generation runs and how many wait.
func (q *queue) counts() (busy bool, queued int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running != nil, len(q.line)
}

// status is the snapshot for /health and the menu.
func (q *queue) status() QueueStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	qs := QueueStatus{Depth: q.maxQueue, PrefillRate: q.prefillRate, DecodeRate: q.decodeRate, Queued: []JobStatus{},
		Generated: q.generated, Recent: slices.Clone(q.recent)}
	known := q.prefillRate > 0 && q.decodeRate > 0
	var ahead float64 // seconds until the engine is free for the next job
	if t := q.running; t != nil {
		st := t.st
		st.WaitedSeconds = t.started.Sub(t.enqueued).Seconds()
		switch {
		case t.firstToken:
			st.PromptDone = st.PromptTokens
		case q.prefillRate > 0:
			st.PromptDone = min(st.PromptTokens, int(now.Sub(t.started).Seconds()*q.prefillRate))
		}
		if known {
			ahead = float64(st.PromptTokens-st.PromptDone)/q.prefillRate + float64(max(st.MaxTokens-st.Tokens, 0))/q.decodeRate
			eta := ahead
			st.ETASeconds = &eta
		}
		qs.Running = &st
	}
	for _, t := range q.line {
		st := t.st
		st.WaitedSeconds = now.Sub(t.enqueued).Seconds()
		if known {
			ahead += float64(st.PromptTokens)/q.prefillRate + float64(st.MaxTokens)/q.decodeRate
			eta := ahead
			st.ETASeconds = &eta
		}
		qs.Queued = append(qs.Queued, st)
	}
	return qs
}
