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

// TestNodeResponses runs the npm openai package's Responses API calls and
// the AI SDK's default openai(model) provider (generateText, streamText:
// it calls /v1/responses) against the real server.
func TestNodeResponses(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: `make deps` installs it")
	for _, pkg := range []string{"openai", "ai", "@ai-sdk/openai"} {
		_, err = os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json"))
		require.NoError(t, err, "the npm package %s is missing: run `make deps` (npm ci in server/%s)", pkg, nodeDir)
	}
	_, withSt := withStore(t)
	_, base := startServer(t, func(o *Options) { withSt(o); o.MemoEntries = 0 })
	cmd := exec.CommandContext(t.Context(), node, "responses.mjs", base+"/v1", tinyID)
	cmd.Dir = nodeDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got struct {
		Create struct {
			Status, Text, OutputText string
			Types                    []string
			Usage                    struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			}
		}
		Stream struct {
			Types  []string
			Deltas string
			Last   string
		}
		Retrieve struct{ ID, Text string }
		Next     struct {
			Text, Previous string
			InputTokens    int `json:"input_tokens"`
		}
		Items      []struct{ Role, Text string }
		Background struct{ First, Status, Text string }
		Cancel     string
		Deleted    int
		AIGenerate struct {
			Text, Reasoning, Finish string
			Input, Output           int
		}
		AIStream struct{ Text, Finish string }
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))

	user := []chat.Message{{Role: "user", Content: "Hello there"}}
	want := expectResponse(t, user, 10)
	whole := want.reasoning + want.content
	require.Equal(t, whole, got.Create.Text)
	require.Equal(t, want.content, got.Create.OutputText, "output_text is the answer alone")
	require.Equal(t, len(want.prompt), got.Create.Usage.InputTokens)
	require.Equal(t, len(want.tokens), got.Create.Usage.OutputTokens)
	require.Equal(t, whole, got.Stream.Deltas)
	require.Equal(t, "response.created", got.Stream.Types[0])
	require.Contains(t, []string{"completed", "incomplete"}, got.Stream.Last)
	require.Equal(t, whole, got.Retrieve.Text)
	conv := append(user, chat.Message{Role: "assistant", ReasoningContent: want.reasoning, Content: want.content},
		chat.Message{Role: "user", Content: "And then?"})
	wantNext := expectResponse(t, conv, 6)
	require.Equal(t, wantNext.reasoning+wantNext.content, got.Next.Text)
	require.Equal(t, len(wantNext.prompt), got.Next.InputTokens)
	require.Len(t, got.Items, 1)
	require.Equal(t, "And then?", got.Items[0].Text)
	require.Equal(t, "queued", got.Background.First)
	require.Equal(t, whole, got.Background.Text)
	require.Equal(t, "cancelled", got.Cancel)
	require.Equal(t, 404, got.Deleted)

	require.Equal(t, want.content, got.AIGenerate.Text)
	// The AI SDK reads reasoning from summary parts only: the reasoning
	// item's summary is K3's whole reasoning.
	require.Equal(t, want.reasoning, got.AIGenerate.Reasoning)
	require.Equal(t, len(want.prompt), got.AIGenerate.Input)
	require.Equal(t, len(want.tokens), got.AIGenerate.Output)
	require.Equal(t, want.content, got.AIStream.Text)
}
