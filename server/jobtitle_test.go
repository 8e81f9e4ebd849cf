package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJobTitleIsTheRequestsFirstWords: a job is named by the last user
// message's first words, not its id.
func TestJobTitleIsTheRequestsFirstWords(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Why is the sky blue?", firstWords("  Why is the\nsky blue?  "))
	require.Equal(t, "one two three four five six seven eight…", firstWords("one two three four five six seven eight nine"))
	g := &genRequest{messages: []message{{role: "user", content: "first question"}, {role: "assistant", content: "a"}, {role: "user", parts: []string{"the", "second"}}}}
	require.Equal(t, "the second", chatTitle(g))
	require.Equal(t, "Once upon a time", chatTitle(&genRequest{prompt: "Once upon a time"}))
	require.Equal(t, "Tell me a story", inputTitle([]convMessage{{Role: "system", Content: "x"}, {Role: "user", Content: "Tell me a story"}}))
	q := newQueue(1)
	tk, err := q.enter("resp_1", "response", 3, 4)
	require.NoError(t, err)
	tk.name("Tell me a story")
	require.Equal(t, "Tell me a story", q.status().Running.Title)
	tk.release()
}
