package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/downloader"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/deltafin/deltafin/internal/testref"
	"github.com/stretchr/testify/require"
)

// k3TinyRef is the tiny K3's reference outputs.
const k3TinyRef = "../testdata/k3-tiny/reference.safetensors"

func reference(t *testing.T, name string) []float64 { return testref.Floats(t, k3TinyRef, name) }

func ints(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// TestRunK3Tiny runs `deltafin run --ids … --max-new 16 --json
// --logits-out FILE` on the K3 tiny checkpoint and checks the ids and every
// logits row against the reference.
func TestRunK3Tiny(t *testing.T) {
	t.Parallel()
	const maxNew = 16
	prompt := ints(reference(t, "text.input_ids"))
	logitsPath := filepath.Join(t.TempDir(), "logits.f32")
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir() // Run keeps the expert heat histogram there
	cfg.Run = app.RunConfig{Temperature: greedy(),
		Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt,
		MaxNew: maxNew, JSON: true, LogitsOut: logitsPath,
	}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))

	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Equal(t, prompt, out.PromptIDs)
	require.Equal(t, ints(reference(t, "text.greedy_tokens")), out.IDs)
	require.Equal(t, "length", out.Stats.FinishReason)
	require.Equal(t, "deltafin-kimi-k3", out.Stats.Model)

	const V = 1024
	raw, err := os.ReadFile(logitsPath)
	require.NoError(t, err)
	rows := len(prompt) + maxNew - 1
	require.Len(t, raw, rows*V*4, "prompt_len + max_new − 1 rows of vocab_size float32")
	require.Equal(t, rows, out.Stats.LogitsRows)
	want := append(reference(t, "text.logits"), reference(t, "text.greedy_step_logits")[V:]...)
	require.Len(t, want, rows*V)
	for i, w := range want {
		got := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		require.InDelta(t, w, got, 2e-3, "row %d, token %d", i/V, i%V)
	}
}

// TestRunPrompt: --prompt tokenizes "The capital of France is" with the
// model's tokenizer into the reference's ids and continues as the
// reference does; --json carries the decoded text.
func TestRunPrompt(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir() // Run keeps the expert heat histogram there
	cfg.Run = app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "k3-tiny"), Prompt: "The capital of France is", MaxNew: 16, JSON: true}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Equal(t, ints(reference(t, "text.input_ids")), out.PromptIDs)
	greedy := ints(reference(t, "text.greedy_tokens"))
	require.Equal(t, greedy, out.IDs)
	require.NotNil(t, out.Text)
	require.Equal(t, tinyTokenizer(t).Decode(greedy), *out.Text)
	require.Nil(t, out.Reasoning)

	// Without --json the text is printed as it is decoded.
	cfg.Run.JSON = false
	stdout.Reset()
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	require.Equal(t, tinyTokenizer(t).Decode(greedy)+"\n", stdout.String())
	require.Contains(t, stderr.String(), "finish length")
}

// TestRunChat: --chat renders the turn in the K3 format, stops at the
// end-of-turn token at the latest and splits reasoning from content.
func TestRunChat(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir() // Run keeps the expert heat histogram there
	cfg.Run = app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "k3-tiny"), Prompt: "Hello", Chat: true, MaxNew: 8, JSON: true}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	tok := tinyTokenizer(t)
	require.True(t, strings.HasSuffix(tok.Decode(out.PromptIDs), `<|open|>message role="assistant"<|sep|><|open|>think<|sep|>`))
	require.NotContains(t, out.IDs, 770, "the end-of-turn token is not part of the answer")
	require.NotNil(t, out.Reasoning)
	require.NotNil(t, out.Content)
	require.Contains(t, []string{"stop", "length"}, out.Stats.FinishReason)
}

// TestRunChatThinkingFlags: --effort takes the names clients send and maps
// them as the server does; none and --thinking=false answer directly.
func TestRunChatThinkingFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		effort     string
		thinking   bool
		wantEffort string
		wantOff    bool
	}{
		{"", true, "", false}, {"medium", true, "high", false}, {"XHIGH", true, "max", false},
		{"minimal", true, "low", false}, {"none", true, "", true}, {"high", false, "", true},
	} {
		r := app.RunConfig{Effort: tc.effort}
		require.NoError(t, thinkingFlags(&r, tc.thinking), tc.effort)
		require.Equal(t, tc.wantEffort, r.Effort, tc.effort)
		require.Equal(t, tc.wantOff, r.NoThinking, tc.effort)
	}
	r := app.RunConfig{Effort: "huge"}
	require.ErrorContains(t, thinkingFlags(&r, true), `--effort "huge"`)

	// The mapped effort is the one the prompt names.
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.Run = app.RunConfig{Model: filepath.Join("..", "testdata", "k3-tiny"), Prompt: "Hello", Chat: true, MaxNew: 1, JSON: true, Effort: "medium"}
	require.NoError(t, thinkingFlags(&cfg.Run, true))
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Contains(t, tinyTokenizer(t).Decode(out.PromptIDs), "`thinking_effort=high`")
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	model := filepath.Join("..", "testdata", "k3-tiny")
	tests := []struct {
		name string
		rc   app.RunConfig
		want string
	}{
		{"no model installed", app.RunConfig{Temperature: greedy(), IDs: []int{1}, MaxNew: 1}, "no model is installed in"},
		{"no prompt", app.RunConfig{Temperature: greedy(), Model: model, MaxNew: 1}, "--ids or --prompt"},
		{"both prompts", app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{1}, Prompt: "x", MaxNew: 1}, "not both"},
		{"chat without prompt", app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{1}, Chat: true, MaxNew: 1}, "--chat needs --prompt"},
		{"max-new 0", app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{1}}, "--max-new 0"},
		{"id outside the vocabulary", app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{5000}, MaxNew: 1}, "token id 5000 outside the vocabulary"},
		{"not a model", app.RunConfig{Temperature: greedy(), Model: t.TempDir(), IDs: []int{1}, MaxNew: 1}, "config.json"},
		{"prompt without tokenizer", app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"), Prompt: "hello", MaxNew: 1}, "--prompt needs the model's tokenizer"},
		{"logits file in a missing directory", app.RunConfig{Temperature: greedy(), Model: model, IDs: []int{1}, MaxNew: 1, LogitsOut: filepath.Join(t.TempDir(), "no", "x")}, "--logits-out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := app.DefaultConfig(func(string) string { return "" })
			cfg.DataDir = t.TempDir() // Run keeps the expert heat histogram there
			cfg.Run = tt.rc
			var stdout, stderr bytes.Buffer
			err := runPrompt(t.Context(), cfg, &stdout, &stderr)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseIDs(t *testing.T) {
	t.Parallel()
	ids, err := ParseIDs("1, 2,3")
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, ids)
	for _, bad := range []string{"", "1,,2", "a", "-1", "1.5"} {
		_, err := ParseIDs(bad)
		require.Error(t, err, bad)
	}
}

// TestRunUsesTheInstalledModel: without --model, run generates with the
// model deltafin setup installed (a stream install: the experts come from
// the hub on demand), and gives the reference's tokens.
func TestRunUsesTheInstalledModel(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
	cfg := hubConfig(t, h)
	require.NoError(t, setup(t.Context(), cfg, SetupOptions{Mode: downloader.Stream, Headroom: 1, ChunkSize: 64 << 10}, io.Discard))
	want := ints(reference(t, "short.greedy_tokens"))
	cfg.Run = app.RunConfig{Temperature: greedy(), IDs: ints(reference(t, "short.input_ids")), MaxNew: len(want), JSON: true}
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Equal(t, want, out.IDs)
}

// greedy is --temperature 0, for the runs compared with greedy tokens.
func greedy() *float64 {
	zero := 0.0
	return &zero
}
