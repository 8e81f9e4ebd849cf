package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/stretchr/testify/require"
)

func runArgs(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runArgs(t, nil, "--help")
	require.Equal(t, 0, code)
	for _, c := range commands() {
		require.Contains(t, out, c.Name)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.Name, func(t *testing.T) {
			code, _, _ := runArgs(t, nil, c.Name, "--help")
			require.Equal(t, 0, code)
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, nil, "frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "frobnicate"`)
}

func TestBadFlag(t *testing.T) {
	t.Parallel()
	code, _, _ := runArgs(t, nil, "doctor", "--no-such-flag")
	require.Equal(t, 2, code)
}

func TestDoctorUsesDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errOut := runArgs(t, map[string]string{"DELTAFIN_HOME": "/nonexistent/elsewhere"}, "doctor", "--data-dir", dir)
	require.Equal(t, 0, code, errOut)
}

func TestBenchTargets(t *testing.T) {
	t.Parallel()
	// bench slice writes a checkpoint larger than RAM: only its refusals
	// run in a test.
	code, _, errOut := runArgs(t, map[string]string{"DELTAFIN_HOME": t.TempDir()}, "bench", "slice", "--moe-layers", "93")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "a slice has 1 to 92 MoE layers")
	code, _, _ = runArgs(t, nil, "bench") // the target is missing
	require.Equal(t, 2, code)
	code, _, _ = runArgs(t, nil, "bench", "disk")
	require.Equal(t, 2, code)
	code, _, errOut = runArgs(t, map[string]string{"DELTAFIN_KERNELS": "cuda"}, "bench", "kernels")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `unknown backend "cuda"`)
}

func TestRunBadIDs(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, nil, "run", "--model", "testdata/k3-tiny", "--ids", "1,x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--ids: "x" is not a token id`)
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := runArgs(t, nil, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^deltafin 0\.1\.0 \(.*, go1\.\d+.* [a-z0-9]+/[a-z0-9]+\)\n$`, out)
	plist, err := os.ReadFile("Info.plist")
	require.NoError(t, err)
	require.Contains(t, string(plist), "<key>CFBundleShortVersionString</key>\n\t<string>"+app.Version+"</string>",
		"Info.plist and app.Version name the same release")
}

func TestAppKeepFreeFlag(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, nil, "app", "--keep-free", "-1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--keep-free -1 is not a disk size in GB")
}

// TestFlagsWithoutACommandStartTheApp: deltafin --port N, --data-dir X and
// the app's other flags without a command are the app's (the default
// command), not an unknown command "--port"; the app takes --api-key.
func TestFlagsWithoutACommandStartTheApp(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, nil, "--data-dir", t.TempDir(), "--keep-free", "-1")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "--keep-free -1 is not a disk size in GB", "the app's own validation ran")
	code, _, errOut = runArgs(t, nil, "--port", "9000", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "Usage: deltafin app")
	require.Contains(t, errOut, "-api-key")
	require.NotContains(t, errOut, "unknown command")
}

// TestBenchHelpListsEveryTarget: bench --help names each subcommand.
func TestBenchHelpListsEveryTarget(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, nil, "bench", "--help")
	require.Equal(t, 0, code)
	for _, target := range []string{"kernels", "slice", "prefill", "project", "heat"} {
		require.Regexp(t, `(?m)^  `+target+` `, errOut)
	}
}

// TestRunFallsBackToTheDemo: with nothing installed, run uses the demo
// model as serve and the app do, and says so.
func TestRunFallsBackToTheDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := runArgs(t, map[string]string{"DELTAFIN_HOME": t.TempDir()}, "run", "--prompt", "Hello", "--max-new", "2")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "running the demo model")
	require.NotEmpty(t, out)
}
