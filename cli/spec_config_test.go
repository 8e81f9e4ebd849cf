package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/stretchr/testify/require"
)

func TestSpecFromEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env     string
		want    bool
		invalid bool
	}{
		{"", true, false},
		{"0", false, false},
		{"false", false, false},
		{"1", true, false},
		{"maybe", true, true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			c := app.DefaultConfig(func(k string) string {
				if k == "DELTAFIN_SPEC" {
					return tc.env
				}
				return ""
			})
			c.DataDir = t.TempDir()
			require.Equal(t, tc.want, c.Spec)
			err := c.Validate()
			if tc.invalid {
				require.ErrorContains(t, err, "DELTAFIN_SPEC")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestRunSpeculationSameIDs: `deltafin run` gives the same ids with
// speculation on (default) and off (DELTAFIN_SPEC=0), and reports its passes.
func TestRunSpeculationSameIDs(t *testing.T) {
	t.Parallel()
	run := func(spec string) RunOutput {
		cfg := app.DefaultConfig(func(k string) string {
			if k == "DELTAFIN_SPEC" {
				return spec
			}
			return ""
		})
		cfg.DataDir = t.TempDir()
		// c,0, c,1, …, c,1023, c: whatever k3-tiny answers, the pair (c,
		// answer) stands earlier, so the n-gram guesser guesses at once.
		var prompt []int
		for v := range 1024 {
			prompt = append(prompt, 7, v)
		}
		prompt = append(prompt, 7)
		cfg.Run = app.RunConfig{Temperature: greedy(), Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: prompt, MaxNew: 8, JSON: true}
		var stdout, stderr bytes.Buffer
		require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
		var out RunOutput
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
		return out
	}
	on, off := run(""), run("0")
	require.Equal(t, off.IDs, on.IDs)
	require.Zero(t, off.Stats.SpecPasses)
	require.Positive(t, on.Stats.SpecPasses)
	t.Logf("speculation: %d of %d guesses accepted", on.Stats.SpecAccepted, on.Stats.SpecPasses)
}
