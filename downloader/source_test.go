package downloader

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/checkpoint/sourcetest"
)

// TestSourceConformance runs the engine's Source contract against the
// mirror's Source over the fake hub: in a stream install (the shard's
// experts missing, fetched with HTTP range requests; the HTTP-backed source
// the product has; its reads checked against the shard's Xet hash, or not
// where the hub has none) and in a full install (every byte present).
func TestSourceConformance(t *testing.T) {
	t.Parallel()
	const shard = "model-00002-of-000004.safetensors"
	for _, tc := range []struct {
		mode  Mode
		noXet bool
	}{{Stream, false}, {Stream, true}, {Full, false}} {
		mode := tc.mode
		name := string(mode)
		if tc.noXet {
			name += " without Xet"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sourcetest.Run(t, func(t *testing.T) sourcetest.Fixture {
				h := newFakeHub(t)
				h.NoXet = tc.noXet
				dir := t.TempDir()
				opts := options(h, dir)
				opts.AllowUnverified = tc.noXet // the contract of bytes allowed unverified (TestNoXetOnDemandIsRefused: refused otherwise)
				m, p := setup(t, t.Context(), opts, mode)
				src, err := m.Source(shard)
				require.NoError(t, err)
				f := sourcetest.Fixture{Src: src, Path: filepath.Join(dir, shard), Want: h.Files[shard].Data, Fetches: h.Requests.Load}
				if mode == Stream {
					for _, e := range p.Experts() {
						if e.File == shard {
							f.Missing = [2]int64{e.Start, e.Len()}
							break
						}
					}
					require.NotZero(t, f.Missing[1], "%s holds experts", shard)
				}
				return f
			})
		})
	}
}
