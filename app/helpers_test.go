package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

// hubConfig is a validated configuration whose model source is the fake hub
// h and whose data directory is a fresh temporary one.
func hubConfig(t *testing.T, h *hubtest.Hub) Config {
	env := map[string]string{"HF_ENDPOINT": h.URL() + "/", "HF_TOKEN": h.Token}
	cfg := DefaultConfig(func(k string) string { return env[k] })
	cfg.DataDir = t.TempDir()
	require.NoError(t, cfg.Validate())
	return cfg
}
