package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/engine"
	"github.com/stretchr/testify/require"
)

// runArgs is `deltafin run ARGS --json` on k3-tiny, through the flags.
func runArgs(t *testing.T, args ...string) (RunOutput, string, error) {
	t.Helper()
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	var stdout, stderr bytes.Buffer
	args = append([]string{"--model", filepath.Join("..", "testdata", "k3-tiny"), "--ids", "5,6,7,8", "--max-new", "12", "--json"}, args...)
	err := runCmd(t.Context(), &Call{Command: Command{Name: "run"}, Config: cfg, Args: args, Stdout: &stdout, Stderr: &stderr}, nil) // --model given: no demo
	var out RunOutput
	if err == nil {
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	}
	return out, stderr.String(), err
}

// TestRunSampling: without sampling flags `deltafin run` samples as the
// model card says and reports the seed it drew; --seed with it repeats the
// ids, which are the engine's for that seed; --temperature 0 is greedy;
// bad values are refused naming the flag.
func TestRunSampling(t *testing.T) {
	t.Parallel()
	m, err := engine.Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), engine.Options{})
	require.NoError(t, err)
	defer m.Close()
	gen := func(s engine.Sampling) []int {
		var toks []int
		_, err := m.NewSession().Generate(t.Context(), []int{5, 6, 7, 8}, engine.GenerateOptions{MaxNew: 12, Sampling: s},
			func(tok int) error { toks = append(toks, tok); return nil })
		require.NoError(t, err)
		return toks
	}

	drawn, _, err := runArgs(t)
	require.NoError(t, err)
	again, _, err := runArgs(t, "--seed", strconv.FormatInt(drawn.Seed, 10))
	require.NoError(t, err)
	require.Equal(t, drawn.IDs, again.IDs, "the reported seed repeats the run")
	require.Equal(t, drawn.Seed, again.Seed)
	card := m.Info().Sampling
	card.Seed = uint64(drawn.Seed)
	require.Equal(t, gen(card), drawn.IDs)

	out, _, err := runArgs(t, "--seed", "9", "--temperature", "0.8", "--top-p", "0.9", "--top-k", "20", "--min-p", "0.01")
	require.NoError(t, err)
	require.Equal(t, int64(9), out.Seed)
	require.Equal(t, gen(engine.Sampling{Temperature: 0.8, TopP: 0.9, TopK: 20, MinP: 0.01, Seed: 9}), out.IDs)

	out, _, err = runArgs(t, "--temperature", "0", "--seed", "4")
	require.NoError(t, err)
	require.Equal(t, gen(engine.Sampling{}), out.IDs, "temperature 0 is greedy")

	for flag, v := range map[string]string{"--temperature": "2.5", "--top-p": "0", "--top-k": "-2", "--min-p": "1.5"} {
		_, _, err := runArgs(t, flag, v)
		require.ErrorContains(t, err, flag)
	}
	for flag, v := range map[string]string{"--seed": "1.5", "--temperature": "hot", "--top-k": "x"} {
		_, stderr, err := runArgs(t, flag, v)
		require.Error(t, err)
		require.Contains(t, stderr, flag[2:], "the usage names the flag")
	}
}
