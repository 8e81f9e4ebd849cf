package engine

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// k3-tiny's arithmetic, written out from its config.json: hidden 128, 10
// layers (MLA at 4, 8, 10 counting from 1, KDA elsewhere), layer 1 dense.
func TestInfoCountsK3TinyFLOPs(t *testing.T) {
	t.Parallel()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	require.NoError(t, err)
	defer m.Close()
	const H, P, d, nh = 128, 4 * 32, 32, 4
	kda := 3*P*H + d*H + P*d + nh*H + P*H + H*P // q k v, f_a f_b, b, g, o
	mla := 48*H + 4*24*48 + 40*H + 4*32*32 + 4*16*H + H*4*16
	res := 2 * H // the two attention-residual projections of [1, H]
	dense := 3 * 256 * H
	moe := 32*H + 64*H + H*64 + 3*128*H + 4*3*64*64 // router, latent down/up, 2 shared, top-4 routed
	token := 2*(7*kda+3*mla+10*res+H+dense+9*moe) + 7*7*nh*d*d
	info := m.Info()
	require.Equal(t, int64(token), info.TokenFLOPs)
	require.Equal(t, int64(2*1024*H), info.HeadFLOPs)
	require.Equal(t, int64(3*2*4*(16+8+16)), info.PairFLOPs)
}
