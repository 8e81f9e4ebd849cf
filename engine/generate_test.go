package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	ckpt "github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

func openK3Tiny(t *testing.T) *Model {
	t.Helper()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func collect(ids *[]int) func(int) error {
	return func(tok int) error { *ids = append(*ids, tok); return nil }
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	m := openK3Tiny(t)
	ref := loadRef(t, filepath.Join("..", "testdata", "k3-tiny", "reference.safetensors"))
	prompt := ref.ints(t, "short.input_ids")
	greedy := ref.ints(t, "short.greedy_tokens")

	t.Run("emit can stop within one token", func(t *testing.T) {
		var got []int
		res, err := m.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 16}, func(tok int) error {
			got = append(got, tok)
			if len(got) == 3 {
				return ErrStopped
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, greedy[:3], got)
		require.Equal(t, 2, res.Spec.Tokens(), "tokens 2 and 3 came from decode passes")
		res.Spec = SpecStats{}
		require.Equal(t, Result{PromptTokens: len(prompt), Tokens: 3, FinishReason: "stop"}, withoutTimes(res))
	})

	t.Run("emit error is returned", func(t *testing.T) {
		boom := errors.New("client went away")
		_, err := m.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 16}, func(int) error { return boom })
		require.ErrorIs(t, err, boom)
	})

	t.Run("stop token ends the turn and is not emitted", func(t *testing.T) {
		stopAt := 5 // the first occurrence of greedy[5] must be at 5
		require.NotContains(t, greedy[:stopAt], greedy[stopAt])
		var got []int
		res, err := m.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 16, StopTokens: []int{greedy[stopAt]}}, collect(&got))
		require.NoError(t, err)
		require.Equal(t, greedy[:stopAt], got)
		require.Equal(t, "stop", res.FinishReason)
		require.Equal(t, stopAt, res.Tokens)
	})

	t.Run("a session continues the conversation", func(t *testing.T) {
		// Two turns on one session equal one raw completion: the second
		// turn starts from the first turn's last token, still pending.
		s := m.NewSession()
		var first, second []int
		_, err := s.Generate(t.Context(), prompt, GenerateOptions{MaxNew: 4}, collect(&first))
		require.NoError(t, err)
		require.Equal(t, len(prompt)+4, s.Len())
		_, err = s.Generate(t.Context(), greedy[4:6], GenerateOptions{MaxNew: 3}, collect(&second))
		require.NoError(t, err)
		require.Equal(t, greedy[:4], first)
		require.Equal(t, greedy[6:9], second)

		// A turn with no new input continues from the pending token.
		var third []int
		_, err = s.Generate(t.Context(), nil, GenerateOptions{MaxNew: 2, Logits: func([]float32) error { return nil }}, collect(&third))
		require.NoError(t, err)
		require.Equal(t, greedy[9:11], third)
	})

	t.Run("sessions run concurrently on one model", func(t *testing.T) {
		results := make([][]int, 3)
		done := make(chan struct{})
		for i := range results {
			go func() {
				defer func() { done <- struct{}{} }()
				_, err := m.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 8}, collect(&results[i]))
				if err != nil {
					results[i] = nil
				}
			}()
		}
		for range results {
			<-done
		}
		for _, r := range results {
			require.Equal(t, greedy[:8], r)
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := m.NewSession()
		var n int
		_, err := s.Generate(ctx, prompt, GenerateOptions{MaxNew: 16}, func(int) error {
			n++
			if n == 2 {
				cancel()
			}
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 2, n)
		_, err = s.Forward(t.Context(), []int{1}, false)
		require.ErrorContains(t, err, "interrupted")
	})

	t.Run("bad input", func(t *testing.T) {
		_, err := m.NewSession().Generate(t.Context(), nil, GenerateOptions{MaxNew: 1}, collect(new([]int)))
		require.ErrorIs(t, err, ErrInput)
		_, err = m.NewSession().Generate(t.Context(), []int{-1}, GenerateOptions{MaxNew: 1}, collect(new([]int)))
		require.ErrorIs(t, err, ErrInput)
	})
}

func withoutTimes(r Result) Result { r.Prefill, r.Decode = 0, 0; return r }

func TestInfo(t *testing.T) {
	t.Parallel()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "kimi-linear-tiny", "hf"), Options{})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, Info{ID: "hf", ModelType: "kimi_linear", VocabSize: 512, EOS: -1, BOS: -1, ContextLen: 4096,
		Layers: 8, Hidden: 64, Experts: 16, TopK: 4, Backend: kernels.Default().Name(),
		Sampling:   Sampling{Temperature: 1, TopP: 0.95}, // generation_config.json sets none: the model card
		SpineBytes: 1_219_488,                            // every tensor but the routed experts
		// flops.go's counts (TestInfoCountsK3TinyFLOPs writes k3-tiny's out);
		// the head is 2·512·64.
		TokenFLOPs: 852_992, HeadFLOPs: 65_536, PairFLOPs: 640,
	}, m.Info())
	require.NoError(t, m.Close())
	_, err = m.NewSession().Forward(t.Context(), []int{1}, false)
	require.ErrorIs(t, err, ErrClosed)
}

// failingSource fails every read that reaches past limit, as a shard that
// shrank after open or a range fetch that broke would.
type failingSource struct {
	ckpt.Source
	limit int64
}

func (f failingSource) ReadAt(ctx context.Context, p []byte, off int64) error {
	if off+int64(len(p)) > f.limit {
		return fmt.Errorf("injected read failure at %d", off)
	}
	return f.Source.ReadAt(ctx, p, off)
}

// TestSourceReadError: a read that fails while loading names the file and
// the tensor.
func TestSourceReadError(t *testing.T) {
	t.Parallel()
	const victim = "model-00003-of-000004.safetensors"
	open := func(ctx context.Context, path string) (ckpt.Source, error) {
		s, err := ckpt.OpenFile(ctx, path)
		if err != nil || filepath.Base(path) != victim {
			return s, err
		}
		return failingSource{s, s.Size() / 2}, nil
	}
	_, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{OpenSource: open})
	require.ErrorIs(t, err, ErrCheckpoint)
	require.ErrorContains(t, err, victim+`: tensor "language_model.model.layers.`)
	require.ErrorContains(t, err, "injected read failure")
}
