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

// TestRunOracleDraftSameIDs: `deltafin run --draft oracle:R` decodes the
// answer, drafts it back and gives the same ids as --draft off, sampled by
// the model card's defaults with a seed; the JSON stats report the
// target's passes (fewer than the tokens at R = 0.9) and the drafts.
func TestRunOracleDraftSameIDs(t *testing.T) {
	t.Parallel()
	run := func(draft string) RunOutput {
		cfg := app.DefaultConfig(func(string) string { return "" })
		cfg.DataDir = t.TempDir()
		cfg.Draft = draft
		seed := int64(5)
		cfg.Run = app.RunConfig{Seed: &seed, Model: filepath.Join("..", "testdata", "k3-tiny"), IDs: []int{3, 14, 15, 92, 65}, MaxNew: 24, JSON: true}
		var stdout, stderr bytes.Buffer
		require.NoError(t, runPrompt(t.Context(), cfg, &stdout, &stderr))
		var out RunOutput
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
		return out
	}
	off := run("off")
	require.Equal(t, "off", off.Stats.Draft)
	require.Zero(t, off.Stats.Drafted)
	for _, r := range []string{"0", "0.9"} {
		got := run("oracle:" + r)
		require.Equal(t, off.IDs, got.IDs, r)
		require.Equal(t, "oracle:"+r, got.Stats.Draft)
		require.Positive(t, got.Stats.Drafted, r)
		if r == "0.9" {
			require.Less(t, got.Stats.TargetPasses, got.Stats.GeneratedTokens)
			require.Positive(t, got.Stats.Accepted)
		} else {
			require.Zero(t, got.Stats.Accepted)
		}
	}
	cfg := app.DefaultConfig(func(string) string { return "" })
	cfg.DataDir, cfg.Draft = t.TempDir(), "oracle:2"
	require.ErrorContains(t, cfg.Validate(), "--draft")
}
