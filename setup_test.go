package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

func TestSetupCommands(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t, filepath.Join("testdata", "k3-tiny"))
	env := map[string]string{"HF_ENDPOINT": h.URL()}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"dry run", []string{"setup", "--dry-run", "--data-dir", dir}, 0, ""},
		{"two modes", []string{"setup", "--stream", "--full", "--data-dir", dir}, 2, ""},
		{"bad jobs", []string{"setup", "--jobs", "0", "--data-dir", dir}, 1, "--jobs 0 is outside 1..64"},
		{"unknown repository", []string{"setup", "--dry-run", "--repo", "moonshotai/Nope", "--data-dir", dir}, 1, "check --repo and --revision"},
		{"fetch-experts dry run", []string{"fetch-experts", "--layers", "1-3", "--dry-run", "--data-dir", dir}, 0, ""},
		{"fetch-experts bad layers", []string{"fetch-experts", "--layers", "3-1", "--data-dir", dir}, 1, `"3-1" is not a range`},
		{"warm without traces", []string{"warm", "--data-dir", dir}, 1, "warm has nothing to rank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runArgs(t, env, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.stderr)
		})
	}
}
