package shaders

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEveryShaderHasSPIRVAndMSL(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			spv, err := SPIRV(name)
			require.NoError(t, err)
			require.Zero(t, len(spv)%4)
			msl, err := MSL(name)
			require.NoError(t, err)
			require.Contains(t, msl, "kernel void main0(")
			// Storage buffers are Metal buffers 1..n, push constants buffer 0.
			require.Contains(t, msl, "[[buffer(0)]]")
			require.Contains(t, msl, fmt.Sprintf("[[buffer(%d)]]", Bindings(name)))
			require.NotContains(t, msl, fmt.Sprintf("[[buffer(%d)]]", Bindings(name)+1))
		})
	}
}

// Names is every embedded shader: one compiled but not listed would never
// get a pipeline.
func TestNamesListsEveryEmbeddedShader(t *testing.T) {
	t.Parallel()
	var embedded []string
	ents, err := files.ReadDir(".")
	require.NoError(t, err)
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".spv"); ok {
			embedded = append(embedded, name)
		}
	}
	require.ElementsMatch(t, embedded, Names())
	for _, name := range Names() {
		require.Positive(t, Bindings(name), name)
	}
}

func TestUnknownShader(t *testing.T) {
	t.Parallel()
	_, err := SPIRV("nope")
	require.ErrorIs(t, err, ErrUnknown)
	_, err = MSL("nope")
	require.ErrorIs(t, err, ErrUnknown)
	require.True(t, strings.Contains(err.Error(), "nope"))
	require.Zero(t, Bindings("nope"))
}
