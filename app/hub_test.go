package app

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/downloader"
	"github.com/stretchr/testify/require"
)

func TestHubConfigFromEnvironment(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache", "huggingface"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cache", "huggingface", "token"), []byte("hf_file\n"), 0o600))
	hfHome := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_hfhome"), 0o600))
	for _, tc := range []struct {
		name            string
		env             map[string]string
		endpoint, token string
	}{
		{"defaults", map[string]string{}, DefaultHFEndpoint, ""},
		{"HF_TOKEN wins", map[string]string{"HF_TOKEN": "hf_env", "HUGGING_FACE_HUB_TOKEN": "hf_old", "HOME": home}, DefaultHFEndpoint, "hf_env"},
		{"legacy variable", map[string]string{"HUGGING_FACE_HUB_TOKEN": "hf_old"}, DefaultHFEndpoint, "hf_old"},
		{"token file in ~/.cache", map[string]string{"HOME": home}, DefaultHFEndpoint, "hf_file"},
		{"token file in HF_HOME", map[string]string{"HOME": home, "HF_HOME": hfHome}, DefaultHFEndpoint, "hf_hfhome"},
		{"HF_ENDPOINT mirror", map[string]string{"HF_ENDPOINT": "https://hf-mirror.example/"}, "https://hf-mirror.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig(func(k string) string { return tc.env[k] })
			require.Equal(t, tc.endpoint, c.HFEndpoint)
			require.Equal(t, tc.token, c.HFToken)
			require.Equal(t, DefaultRepo, c.Repo)
			require.Equal(t, DefaultRevision, c.Revision)
		})
	}
}

func TestHubConfigValidation(t *testing.T) {
	base := DefaultConfig(func(string) string { return "" })
	for _, tc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"repo without owner", func(c *Config) { c.Repo = "Kimi-K3" }},
		{"repo escaping", func(c *Config) { c.Repo = "../x/y" }},
		{"revision with slash", func(c *Config) { c.Revision = "a/../../b" }},
		{"zero jobs", func(c *Config) { c.Jobs = 0 }},
		{"endpoint not http", func(c *Config) { c.HFEndpoint = "ftp://x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			require.Error(t, c.validateHub())
		})
	}
}

// TestUnreachableHubSaysWhatToDo: no hub at the endpoint gives a message
// that names it and says what to check.
func TestUnreachableHubSaysWhatToDo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	cfg := DefaultConfig(func(k string) string { return map[string]string{"HF_ENDPOINT": "http://" + addr}[k] })
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	cfg.Revision = "main" // a branch must be resolved over the network
	_, _, err = OpenPlan(t.Context(), cfg, downloader.Options{})
	require.ErrorIs(t, err, ErrUnreachable)
	require.ErrorContains(t, err, "app: cannot reach the hub at http://"+addr+" (set HF_ENDPOINT or check the network)")
}
