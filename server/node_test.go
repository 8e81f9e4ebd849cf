package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/engine/chat"
	"github.com/stretchr/testify/require"
)

// nodeDir holds the official openai npm package (package.json and
// package-lock.json committed; `make deps` runs npm ci there).
const nodeDir = "testdata/node"

type nodeUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type nodeResult struct {
	Models []string `json:"models"`
	Chat   struct {
		Object    string    `json:"object"`
		Content   string    `json:"content"`
		Reasoning string    `json:"reasoning"`
		Finish    string    `json:"finish"`
		Usage     nodeUsage `json:"usage"`
	} `json:"chat"`
	Stream struct {
		Chunks    int        `json:"chunks"`
		Role      string     `json:"role"`
		Content   string     `json:"content"`
		Reasoning string     `json:"reasoning"`
		Finish    string     `json:"finish"`
		Usage     *nodeUsage `json:"usage"`
		Order     string     `json:"order"`
	} `json:"stream"`
	Error *struct {
		Status int    `json:"status"`
		Param  string `json:"param"`
		Code   string `json:"code"`
		Type   string `json:"type"`
	} `json:"error"`
}

// TestNodeClient runs the official openai npm package with node against
// the real server: models, chat, streaming chat and an error.
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	_, err = os.Stat(filepath.Join(nodeDir, "node_modules", "openai", "package.json"))
	require.NoError(t, err, "the openai npm package is missing: run `make deps` (npm ci in server/%s)", nodeDir)

	_, base := startServer(t, func(o *Options) { o.MemoEntries = 0 })
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", base+"/v1", tinyID)
	cmd.Dir = nodeDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got nodeResult
	require.NoError(t, json.Unmarshal(out, &got), string(out))

	want := expectChat(t, []chat.Message{{Role: "user", Content: "Hello from node"}}, chat.DefaultOptions(), 8)
	wantUsage := nodeUsage{PromptTokens: len(want.prompt), CompletionTokens: len(want.tokens), TotalTokens: len(want.prompt) + len(want.tokens)}

	require.Equal(t, []string{tinyID}, got.Models)

	require.Equal(t, "chat.completion", got.Chat.Object)
	require.Equal(t, want.content, got.Chat.Content)
	require.Equal(t, want.reasoning, got.Chat.Reasoning)
	require.Equal(t, want.finish, got.Chat.Finish)
	require.Equal(t, wantUsage, got.Chat.Usage)

	var reasoning, content, order string
	for _, d := range want.deltas {
		order += d[:1]
		if d[0] == 'r' {
			reasoning += d[2:]
		} else {
			content += d[2:]
		}
	}
	require.Equal(t, "assistant", got.Stream.Role)
	require.Equal(t, reasoning, got.Stream.Reasoning)
	require.Equal(t, content, got.Stream.Content)
	require.Equal(t, order, got.Stream.Order, "reasoning deltas, then content deltas")
	require.Equal(t, want.finish, got.Stream.Finish)
	require.NotNil(t, got.Stream.Usage)
	require.Equal(t, wantUsage, *got.Stream.Usage)
	require.GreaterOrEqual(t, got.Stream.Chunks, len(want.deltas)+3, "role, deltas, finish, usage")

	require.NotNil(t, got.Error)
	require.Equal(t, 400, got.Error.Status)
	require.Equal(t, "n", got.Error.Param)
	require.Equal(t, codeUnsupported, got.Error.Code)
	require.Equal(t, "invalid_request_error", got.Error.Type)
}
