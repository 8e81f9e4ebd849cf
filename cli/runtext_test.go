package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/tokenizer"
)

func tinyTokenizer(t *testing.T) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load("../testdata/k3-tiny")
	require.NoError(t, err)
	return tok
}

func TestTextPrompt(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizer(t)
	ids, err := textPrompt(tok, "The capital of <|open|>", false, chat.DefaultOptions())
	require.NoError(t, err)
	require.Equal(t, tok.Encode("The capital of <|open|>"), ids)

	ids, err = textPrompt(tok, "Hi <|open|>", true, chat.DefaultOptions())
	require.NoError(t, err)
	text := tok.Decode(ids)
	require.True(t, strings.HasPrefix(text, `<|open|>message role="system" type="thinking-effort"<|sep|>`))
	require.True(t, strings.HasSuffix(text, `<|open|>message role="user"<|sep|>Hi <|open|><|close|>message<|sep|><|end_of_msg|><|open|>message role="assistant"<|sep|><|open|>think<|sep|>`))

	ids, err = textPrompt(tok, "Hi", true, chat.Options{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(tok.Decode(ids), `<|open|>response<|sep|>`))

	_, err = textPrompt(tok, "Hi", true, chat.Options{Thinking: true, Effort: "medium"})
	require.ErrorIs(t, err, chat.ErrEffort)
}

func TestTextPrinter(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizer(t)
	gen := tok.EncodeSpecial("Think 😀.<|close|>think<|sep|><|open|>response<|sep|>Paris.<|close|>response<|sep|><|close|>message<|sep|>")
	cases := []struct {
		name   string
		chat   bool
		color  bool
		ids    []int
		cut    bool
		want   string
		reason string
		answer string
	}{
		{"chat on a terminal", true, true, gen, false, ansiDim + "Think 😀." + ansiReset + "\n\nParis.", "Think 😀.", "Paris."},
		{"chat in a pipe", true, false, gen, false, "Think 😀.\n\nParis.", "Think 😀.", "Paris."},
		{"chat cut while thinking", true, true, gen[:4], true, ansiDim + tok.Decode(gen[:4]) + ansiReset, tok.Decode(gen[:4]), ""},
		{"raw", false, true, tok.Encode("a 😀 b"), true, "a 😀 b", "", ""},
		{"raw cut inside a character", false, false, tok.Encode("a 😀")[:3], true, "a \uFFFD", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			p := newTextPrinter(&out, c.color, tok, c.chat, chat.DefaultOptions())
			for _, id := range c.ids {
				require.NoError(t, p.add(id))
			}
			require.NoError(t, p.finish(c.cut))
			require.Equal(t, c.want, out.String())
			text, r, a := p.result()
			require.Equal(t, tok.Decode(c.ids), text)
			if !c.chat {
				require.Nil(t, r)
				require.Nil(t, a)
				return
			}
			require.Equal(t, c.reason, *r)
			require.Equal(t, c.answer, *a)
		})
	}
}

func TestTextPrinterWriteError(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizer(t)
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.False(t, isTerminal(f))
	require.NoError(t, f.Close()) // writes now fail
	p := newTextPrinter(f, false, tok, false, chat.DefaultOptions())
	require.ErrorContains(t, p.add(tok.Encode("a")[0]), "writing output")
	require.False(t, isTerminal(&bytes.Buffer{}))
}

// modelWithoutTokenizer links k3-tiny's files except the tokenizer's into a
// temporary directory.
func modelWithoutTokenizer(t *testing.T) string {
	src, err := filepath.Abs(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == tokenizer.ModelFile || e.Name() == tokenizer.ConfigFile {
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())))
	}
	return dir
}

func runK3Tiny(t *testing.T, ctx context.Context, rc app.RunConfig, stdout io.Writer) (RunOutput, string, error) {
	cfg := app.DefaultConfig(func(string) string { return "" })
	rc.Model = filepath.Join("..", "testdata", "k3-tiny")
	if rc.MaxNew == 0 {
		rc.MaxNew = 16
	}
	cfg.Run = rc
	var buf bytes.Buffer
	if stdout == nil {
		stdout = &buf
	}
	var stderr bytes.Buffer
	err := runPrompt(ctx, cfg, stdout, &stderr)
	var out RunOutput
	if err == nil && rc.JSON {
		require.NoError(t, json.Unmarshal(buf.Bytes(), &out))
	}
	return out, stderr.String(), err
}

// --prompt "The capital of France is" encodes to the reference prompt ids
// and gives the reference greedy tokens, now as text.
func TestRunPromptK3Tiny(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizer(t)
	out, _, err := runK3Tiny(t, t.Context(), app.RunConfig{Temperature: greedy(), Prompt: "The capital of France is", JSON: true}, nil)
	require.NoError(t, err)
	require.Equal(t, ints(reference(t, "text.input_ids")), out.PromptIDs)
	require.Equal(t, ints(reference(t, "text.greedy_tokens")), out.IDs)
	require.NotNil(t, out.Text)
	require.Equal(t, tok.Decode(out.IDs), *out.Text)
	require.Nil(t, out.Reasoning, "reasoning and content are for --chat")

	// Without --json the same text is printed as it is generated.
	var stdout bytes.Buffer
	_, stderr, err := runK3Tiny(t, t.Context(), app.RunConfig{Temperature: greedy(), Prompt: "The capital of France is"}, &stdout)
	require.NoError(t, err)
	require.Equal(t, *out.Text+"\n", stdout.String())
	require.Contains(t, stderr, "finish length")

	// --ids runs gain "text" when the model has a tokenizer.
	out, _, err = runK3Tiny(t, t.Context(), app.RunConfig{Temperature: greedy(), IDs: out.PromptIDs, JSON: true}, nil)
	require.NoError(t, err)
	require.Equal(t, tok.Decode(out.IDs), *out.Text)
}

func TestRunChatK3Tiny(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizer(t)
	for _, thinking := range []bool{true, false} {
		t.Run(fmt.Sprint("thinking=", thinking), func(t *testing.T) {
			rc := app.RunConfig{Temperature: greedy(), Prompt: "Hi <|open|>", Chat: true, NoThinking: !thinking, Effort: "low", JSON: true, MaxNew: 24}
			out, _, err := runK3Tiny(t, t.Context(), rc, nil)
			require.NoError(t, err)
			want, err := chat.Prompt(tok, []chat.Message{{Role: "user", Content: "Hi <|open|>"}}, chat.Options{Thinking: thinking, Effort: "low"})
			require.NoError(t, err)
			require.Equal(t, want, out.PromptIDs)
			require.NotContains(t, out.IDs, 770, "the stop token ends the turn and is not emitted")
			require.Equal(t, tok.Decode(out.IDs), *out.Text)
			p := chat.NewTokenParser(tok, chat.Options{Thinking: thinking})
			for _, id := range out.IDs {
				p.Add(id)
			}
			p.Finish(out.Stats.FinishReason != "stop")
			r, c := p.Result()
			require.Equal(t, r, *out.Reasoning)
			require.Equal(t, c, *out.Content)

			// Printed: the reasoning and the answer, set apart.
			rc.JSON = false
			var stdout bytes.Buffer
			_, _, err = runK3Tiny(t, t.Context(), rc, &stdout)
			require.NoError(t, err)
			printed := stdout.String()
			require.True(t, strings.HasPrefix(printed, *out.Reasoning), "%q", printed)
			require.True(t, strings.HasSuffix(printed, *out.Content+"\n"), "%q", printed)
		})
	}
	_, _, err := runK3Tiny(t, t.Context(), app.RunConfig{Temperature: greedy(), Prompt: "Hi", Chat: true, Effort: "medium"}, nil)
	require.ErrorIs(t, err, chat.ErrEffort)
	require.ErrorContains(t, err, "--effort")
}

// cancelOnWrite cancels the run at its first printed text, as Ctrl-C would.
type cancelOnWrite struct {
	buf    bytes.Buffer // not embedded: its WriteString would bypass Write
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.buf.Write(p)
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := &cancelOnWrite{cancel: cancel}
	out, _, err := runK3Tiny(t, t.Context(), app.RunConfig{Temperature: greedy(), Prompt: "The capital of France is", JSON: true}, nil)
	require.NoError(t, err)
	_, stderr, err := runK3Tiny(t, ctx, app.RunConfig{Temperature: greedy(), Prompt: "The capital of France is"}, w)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "interrupted")
	require.Contains(t, stderr, "finish interrupted")
	printed := w.buf.String()
	require.True(t, strings.HasSuffix(printed, "\n"))
	require.NotEmpty(t, strings.TrimSuffix(printed, "\n"), "what was printed is kept")
	require.True(t, strings.HasPrefix(*out.Text, strings.TrimSuffix(printed, "\n")), "%q is a prefix of %q", printed, *out.Text)
	require.Less(t, len(printed), len(*out.Text)+1, "generation stopped early")
}

// Without tokenizer files an --ids run still works and prints ids.
func TestRunIDsWithoutTokenizer(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.Run.Model, cfg.Run.IDs, cfg.Run.MaxNew = modelWithoutTokenizer(t), []int{1, 2, 3}, 3
	var stdout, stderr bytes.Buffer
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	fields := strings.Fields(stdout.String())
	require.Len(t, fields, 3, "three ids: %q", stdout.String())
	for _, f := range fields {
		_, err := strconv.Atoi(f)
		require.NoError(t, err)
	}
	cfg.Run.JSON = true
	stdout.Reset()
	require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
	var out RunOutput
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	require.Nil(t, out.Text)
}
