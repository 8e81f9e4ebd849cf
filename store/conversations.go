package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Conversation is one chat of the web page (package web): the user's
// prompts in order, each answered by a stored background response of the
// Responses API, whose tokens and result live in the jobs bucket.
type Conversation struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Turns   []Turn    `json:"turns"`
}

// Turn is one prompt and its answer.
type Turn struct {
	Prompt   string `json:"prompt"`
	Thinking bool   `json:"thinking"`
	Effort   string `json:"effort,omitempty"` // "low" | "high" | "max"
	// ResponseID is the background response answering the prompt.
	ResponseID string `json:"response_id"`
	// Status, Answer and Reasoning are copied in once the response has
	// ended, so a conversation outlives its response's retention.
	Status    string `json:"status,omitempty"`
	Answer    string `json:"answer,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// SaveConversation writes c whole, creating it or replacing the stored one,
// and stamps Updated (and Created, the first time).
func (s *Store) SaveConversation(c *Conversation) error {
	if c.ID == "" || strings.ContainsAny(c.ID, "/\x00") {
		return fmt.Errorf("store: bad conversation id %q", c.ID)
	}
	return s.update(func(tx *bolt.Tx) error {
		c.Updated = s.now().UTC()
		if c.Created.IsZero() {
			c.Created = c.Updated
		}
		v, err := json.Marshal(c)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketConversations).Put([]byte(c.ID), v)
	})
}

// EditConversation loads conversation id, applies f and writes it back in
// one transaction, so concurrent edits (two tabs) do not lose each other.
func (s *Store) EditConversation(id string, f func(*Conversation) error) (*Conversation, error) {
	var out *Conversation
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketConversations)
		c, err := getConversation(b, id)
		if err != nil {
			return err
		}
		if err := f(c); err != nil {
			return err
		}
		c.Updated = s.now().UTC()
		v, err := json.Marshal(c)
		if err != nil {
			return err
		}
		out = c
		return b.Put([]byte(id), v)
	})
	return out, err
}

// Conversation returns one conversation.
func (s *Store) Conversation(id string) (*Conversation, error) {
	var c *Conversation
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		c, err = getConversation(tx.Bucket(bucketConversations), id)
		return err
	})
	return c, err
}

// Conversations returns every conversation, the most recently updated
// first.
func (s *Store) Conversations() ([]*Conversation, error) {
	var out []*Conversation
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConversations).ForEach(func(k, v []byte) error {
			var c Conversation
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("store: conversation %q: %w", k, err)
			}
			out = append(out, &c)
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b *Conversation) int { return b.Updated.Compare(a.Updated) })
	return out, err
}

// DeleteConversation removes a conversation (its responses stay in the
// jobs bucket until they expire).
func (s *Store) DeleteConversation(id string) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketConversations)
		if b.Get([]byte(id)) == nil {
			return fmt.Errorf("%w: conversation %q", ErrNotFound, id)
		}
		return b.Delete([]byte(id))
	})
}

func getConversation(b *bolt.Bucket, id string) (*Conversation, error) {
	return getJSON[Conversation](b, "conversation", id)
}
