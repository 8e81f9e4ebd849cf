package store

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConversations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	require.Error(t, s.SaveConversation(&Conversation{}), "an id is needed")
	a := &Conversation{ID: "a", Title: "first"}
	require.NoError(t, s.SaveConversation(a))
	require.False(t, a.Created.IsZero())
	b := &Conversation{ID: "b", Title: "second", Turns: []Turn{{Prompt: "hi", Thinking: true, Effort: "low", ResponseID: "resp_1"}}}
	require.NoError(t, s.SaveConversation(b))
	_, err := s.EditConversation("a", func(c *Conversation) error {
		c.Turns = append(c.Turns, Turn{Prompt: "why?", ResponseID: "resp_2"})
		return nil
	})
	require.NoError(t, err)
	_, err = s.EditConversation("zz", func(*Conversation) error { return nil })
	require.ErrorIs(t, err, ErrNotFound)

	// Reopened: everything is there, most recently updated first, beside
	// the jobs.
	require.NoError(t, s.Create(&Job{ID: "resp_2", Kind: "response"}))
	require.NoError(t, s.Close())
	s = open(t, path)
	all, err := s.Conversations()
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "a", all[0].ID)
	require.Equal(t, "why?", all[0].Turns[0].Prompt)
	got, err := s.Conversation("b")
	require.NoError(t, err)
	require.Equal(t, b.Turns, got.Turns)
	_, _, err = s.Get("resp_2")
	require.NoError(t, err, "one file holds jobs and conversations")

	require.NoError(t, s.DeleteConversation("b"))
	require.ErrorIs(t, s.DeleteConversation("b"), ErrNotFound)
	_, err = s.Conversation("b")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s.Check())
}
