//go:build darwin

package metal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels/conformance"
)

// TestConformance holds the Metal device to the reference through the
// suite every backend runs (kernels/conformance). NOT RUN HERE: it needs a
// Mac (darwin and cgo); Linux only compiles it (make darwin-vet).
func TestConformance(t *testing.T) {
	b, err := Open()
	if errors.Is(err, ErrUnsupported) {
		t.Skip("built without cgo: there is no Metal backend to test")
	}
	require.NoError(t, err, "a Metal 3 (Apple7 / Mac2) GPU")
	t.Logf("device %s", b.Device())
	conformance.Run(t, b)
}
