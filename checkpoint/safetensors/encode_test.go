package safetensors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeParsesBack(t *testing.T) {
	t.Parallel()
	ts := []Tensor{{Name: "a", DType: "I8", Shape: []int64{3, 5}}, {Name: "a_scale", DType: "F16", Shape: []int64{3}}, {Name: "b", DType: "F32", Shape: []int64{2}}}
	h := Encode(ts)
	require.Zero(t, len(h)%8, "the data section starts on 8 bytes")
	got, err := Parse(h[8:], ts[2].End())
	require.NoError(t, err)
	require.Equal(t, int64(len(h)), got.DataStart)
	for _, want := range ts {
		x, ok := got.Lookup(want.Name)
		require.True(t, ok, want.Name)
		require.Equal(t, want, x)
	}
	require.Equal(t, []int64{15, 6, 8}, []int64{ts[0].Size, ts[1].Size, ts[2].Size})
}
