package chat

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestControlCases renders the thinking controls' cases (efforts, thinking
// off, every earlier turn's reasoning kept or only the current turn's) and
// compares them byte for byte with the Kimi-K3 Jinja port's rendering
// (testdata/chat/gen_control_cases.py).
func TestControlCases(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/chat/control_cases.json")
	require.NoError(t, err)
	var cases []struct {
		fixtureCase
		Keep string `json:"keep"`
	}
	require.NoError(t, json.Unmarshal(raw, &cases))
	require.Len(t, cases, 7)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			msgs, opts := caseInput(t, c.fixtureCase)
			require.Contains(t, []string{"all", "current"}, c.Keep)
			opts.ForgetReasoning = c.Keep == "current"
			segs, err := Render(msgs, opts)
			require.NoError(t, err)
			require.Equal(t, c.Rendered, joined(segs))
			if c.Keep == "current" && opts.Thinking {
				// The switch matters: keeping every turn renders more.
				opts.ForgetReasoning = false
				all, err := Render(msgs, opts)
				require.NoError(t, err)
				require.Greater(t, len(joined(all)), len(c.Rendered))
			}
		})
	}
}

func TestNearestEffort(t *testing.T) {
	for in, want := range map[string]struct {
		effort   string
		thinking bool
	}{
		"none": {"", false}, " None ": {"", false}, "minimal": {"low", true}, "low": {"low", true},
		"medium": {"high", true}, "HIGH": {"high", true}, "xhigh": {"max", true}, "max": {"max", true},
	} {
		e, on, err := NearestEffort(in)
		require.NoError(t, err, in)
		require.Equal(t, want.effort, e, in)
		require.Equal(t, want.thinking, on, in)
		if on {
			require.NoError(t, CheckEffort(e), "every mapped effort renders")
		}
	}
	_, _, err := NearestEffort("huge")
	require.ErrorIs(t, err, ErrEffort)
	require.ErrorContains(t, err, `"huge"`)
}
