package server

import (
	"slices"
	"sync"
)

// Conversation reuse: a chat client sends the whole conversation with every
// request. The session of the last completed generation is kept with its
// tokens (prompt and generated, the turn's stop token included); a request
// whose prompt strictly extends them (the same messages plus new ones, so
// its token ids start with the kept ones) continues from that session and
// runs only the new tokens. Anything else starts a fresh session. The kept
// state is what a cold run computes for the same ids, so the tokens are the
// same (up to the rounding of one batched prompt pass against several).

// convo holds the kept session. Generations take turns in the queue, but the
// memo's replies and a failed generation must not see a half-used session,
// hence take/keep under a lock.
type convo struct {
	mu   sync.Mutex
	sess Session
	ids  []int
}

// take returns the session to run prompt on and the ids still to run: the
// kept session and prompt's new tail when prompt strictly extends the kept
// ids, else a fresh session and the whole prompt. The kept session is given
// up either way: it is kept again only when this generation completes.
func (c *convo) take(m Model, prompt []int) (sess Session, rest []int, reused bool) {
	c.mu.Lock()
	s, ids := c.sess, c.ids
	c.sess, c.ids = nil, nil
	c.mu.Unlock()
	if s != nil && s.Usable() && len(prompt) > len(ids) && slices.Equal(prompt[:len(ids)], ids) {
		return s, prompt[len(ids):], true
	}
	return m.NewSession(), prompt, false
}

// keep stores the session of a completed generation.
func (c *convo) keep(s Session) {
	ids := s.Tokens()
	c.mu.Lock()
	c.sess, c.ids = s, ids
	c.mu.Unlock()
}
