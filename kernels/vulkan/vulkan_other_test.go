//go:build !(linux && cgo)

package vulkan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenUnsupported(t *testing.T) {
	b, err := Open()
	require.ErrorIs(t, err, ErrUnsupported)
	require.Nil(t, b)
}
