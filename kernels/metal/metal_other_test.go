//go:build !(darwin && cgo)

package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

func TestOpenUnsupported(t *testing.T) {
	b, err := Open()
	require.ErrorIs(t, err, ErrUnsupported)
	require.Nil(t, b)
	d, err := OpenDevice()
	require.ErrorIs(t, err, ErrUnsupported)
	require.Nil(t, d)
	_, err = kernels.ByName("metal")
	require.ErrorIs(t, err, kernels.ErrUnknownBackend, "metal is not registered off the Mac")
}
