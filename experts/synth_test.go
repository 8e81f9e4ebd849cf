package experts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/safetensors"
	"github.com/deltafin/deltafin/internal/synthckpt"
)

// Synthetic shards for the store and index tests (internal/synthckpt).

func writeSyntheticShard(t testing.TB, path string, ts []safetensors.Tensor, seed uint64) {
	t.Helper()
	require.NoError(t, synthckpt.WriteShard(path, ts, seed))
}

var syntheticExperts = synthckpt.Experts
