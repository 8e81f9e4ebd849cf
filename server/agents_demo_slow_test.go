//go:build slow

package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// demoMaxTokens caps the demo model's answers in TestAgentsDemo.
const demoMaxTokens = 16

// TestAgentsDemo: each agent makes its round trips on the demo model
// (k3-tiny's real engine; its prompts are 14,000 to 29,000 tokens, minutes
// of prefill on a small machine, hence the slow tag). opencode exits
// cleanly; Claude Code and Codex read the answer, cut at the cap, and
// exit with exactly their report of a cut answer: every event parsed, no
// protocol error.
func TestAgentsDemo(t *testing.T) {
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			base := serveForAgent(t, nil, demoMaxTokens)
			stdout, stderr, err := ac.run(t, base)
			if ac.cutError == "" || err == nil {
				require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
				return
			}
			require.Contains(t, stdout+stderr, ac.cutError, "the only error is the cut answer's")
		})
	}
}
