package server

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The coding agents people point at local models, run non-interactively
// against the real server on loopback: Claude Code over the Messages API,
// OpenAI's Codex CLI over the Responses API, opencode over chat
// completions (server/testdata/agents, installed by make deps at pinned
// versions). Each runs with a private HOME, telemetry and update checks
// off, and only our server's address to talk to. On agentK3 each goes
// through a whole tool loop: the model calls the shell tool, the agent
// runs `echo hello-from-tool` and sends its output back, the model quotes
// it, and the agent prints that answer. On the demo model (k3-tiny, random
// weights) each makes its round trips and exits without a client error.

const agentsDir = "testdata/agents"

// agentTimeout bounds one agent run; it only fails a run that hangs.
const agentTimeout = 5 * time.Minute

const agentKey = "agent-test-key"

// agentBin is the path of an installed agent's executable.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(agentsDir, "node_modules", ".bin", name))
	require.NoError(t, err)
	_, err = os.Stat(p)
	require.NoError(t, err, "%s is not installed: `make deps` installs the agents in %s", name, agentsDir)
	return p
}

// agentEnv is a clean environment for an agent: PATH, a private HOME and
// the given variables.
func agentEnv(home string, kv ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"TMPDIR=" + filepath.Join(home, "tmp"), "NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8"}
	return append(env, kv...)
}

// runAgent runs an agent in dir and returns its stdout and stderr.
func runAgent(t *testing.T, dir string, env []string, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp"), 0o755))
	ctx, cancel := context.WithTimeout(t.Context(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// serveForAgent serves m on loopback with an API key, logging every
// request to the test's log.
// A nil m is the demo model, k3-tiny, with generations capped at
// maxTokens (the server's --max-tokens): random weights rarely end a turn.
func serveForAgent(t *testing.T, m Model, maxTokens int) string {
	t.Helper()
	if m == nil {
		tm, _ := tiny(t)
		m = FromEngine(tm)
	}
	_, base := startServerWith(t, m, func(o *Options) {
		o.APIKey, o.MaxTokens = agentKey, maxTokens
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	})
	return base
}

// testWriter writes a logger's lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

const agentPrompt = "Run the shell command `echo " + toolOutput + "` with your shell tool and tell me what it printed."

// claude runs Claude Code's print mode against base.
func claude(t *testing.T, base string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	env := agentEnv(home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY="+agentKey,
		"ANTHROPIC_MODEL="+tinyID, "ANTHROPIC_SMALL_FAST_MODEL="+tinyID, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+tinyID,
		"ANTHROPIC_DEFAULT_SONNET_MODEL="+tinyID, "ANTHROPIC_DEFAULT_OPUS_MODEL="+tinyID,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1")
	return runAgent(t, home, env, agentBin(t, "claude"), "-p", agentPrompt,
		"--allowedTools", "Bash(echo:*)", "--output-format", "text")
}

// codex runs `codex exec` with a provider for base's Responses API.
func codex(t *testing.T, base string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	require.NoError(t, os.MkdirAll(codexHome, 0o755))
	config := `model = "` + tinyID + `"
model_provider = "deltafin"
check_for_update_on_startup = false
# K3's reasoning items carry the whole reasoning, not a summary; web
# search is OpenAI's hosted tool; subagents and goals add tools that are
# not function tools.
model_reasoning_summary = "none"
web_search = "disabled"

[analytics]
enabled = false

[agents]
enabled = false

[features]
goals = false

[model_providers.deltafin]
name = "Deltafin"
base_url = "` + base + `/v1"
wire_api = "responses"
env_key = "DELTAFIN_API_KEY"
`
	require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644))
	env := agentEnv(home, "CODEX_HOME="+codexHome, "DELTAFIN_API_KEY="+agentKey)
	return runAgent(t, home, env, agentBin(t, "codex"), "exec", "--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never", agentPrompt)
}

// opencode runs `opencode run` with an OpenAI-compatible provider for
// base's chat completions.
func opencode(t *testing.T, base string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	config := `{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "deltafin": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Deltafin",
      "options": {"baseURL": "` + base + `/v1", "apiKey": "` + agentKey + `"},
      "models": {"` + tinyID + `": {"name": "Kimi K3 (Deltafin)"}}
    }
  },
  "model": "deltafin/` + tinyID + `",
  "small_model": "deltafin/` + tinyID + `",
  "permission": {"bash": "allow"},
  "autoupdate": false,
  "share": "disabled"
}
`
	require.NoError(t, os.WriteFile(filepath.Join(home, "opencode.json"), []byte(config), 0o644))
	env := agentEnv(home, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1")
	return runAgent(t, home, env, agentBin(t, "opencode"), "run", agentPrompt)
}

type agentCase struct {
	name       string
	run        func(*testing.T, string) (string, string, error)
	tool, args string // the shell tool as the agent declares it
	// cutError is how the agent reports an answer cut by the token limit
	// (it exits non-zero): the demo model's random weights rarely end a
	// turn before the cap.
	cutError string
}

var agentCases = []agentCase{
	{"claude-code", claude, "Bash", xtmlArg("command", "echo "+toolOutput) + xtmlArg("description", "Print a greeting"), "response exceeded the"},
	{"codex", codex, "exec_command", xtmlArg("cmd", "echo "+toolOutput), "reason: max_output_tokens"},
	{"opencode", opencode, "bash", xtmlArg("command", "echo "+toolOutput) + xtmlArg("description", "Print a greeting"), ""},
}

// TestAgentsToolLoop: each agent completes a whole tool loop on agentK3
// and prints the answer that quotes the tool's output.
func TestAgentsToolLoop(t *testing.T) {
	_, tok := tiny(t)
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			m := newAgentK3(tok, ac.tool, ac.args)
			base := serveForAgent(t, m, 0)
			stdout, stderr, err := ac.run(t, base)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, answerPrefix+toolOutput, "the agent prints the model's answer after the tool ran\nstderr:\n%s", stderr)
			m.mu.Lock()
			defer m.mu.Unlock()
			ran := false
			for _, p := range m.prompts {
				for _, r := range toolResultRE.FindAllStringSubmatch(p, -1) {
					ran = ran || strings.Contains(r[1], toolOutput)
				}
			}
			require.True(t, ran, "a prompt held the tool's result")
		})
	}
}
