//go:build darwin

package metal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestAttentionConformance holds the Metal device's attention shader (the
// MSL that spirv-cross makes of attn.comp) to kernels.AttentionRef. NOT RUN
// HERE: it needs a Mac; Linux only compiles it (make darwin-vet).
func TestAttentionConformance(t *testing.T) {
	b, err := Open()
	if errors.Is(err, ErrUnsupported) {
		t.Skip("built without cgo: there is no Metal backend to test")
	}
	require.NoError(t, err, "a Metal 3 (Apple7 / Mac2) GPU")
	conformance.Attention(t, b)
	require.NoError(t, b.Err(), "an attention call fell back to the CPU")
}
