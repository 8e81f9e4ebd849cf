package downloader

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/stretchr/testify/require"
)

func TestRangeSet(t *testing.T) {
	t.Parallel()
	var s rangeSet
	s = s.add(Range{10, 20}).add(Range{30, 40}).add(Range{20, 25})
	require.Equal(t, rangeSet{{10, 25}, {30, 40}}, s)
	require.Equal(t, []Range{{0, 10}, {25, 30}, {40, 50}}, s.missing(Range{0, 50}))
	require.True(t, s.covers(Range{12, 24}))
	require.Equal(t, int64(7), s.overlap(Range{20, 32}))
	s = s.add(Range{0, 100})
	require.Equal(t, rangeSet{{0, 100}}, s)
	require.True(t, s.valid(100))
	require.False(t, s.valid(99))
	require.False(t, rangeSet{{5, 10}, {10, 12}}.valid(20), "adjacent ranges are merged, never stored apart")
}

func TestChoose(t *testing.T) {
	t.Parallel()
	const GB = 1_000_000_000
	stream := Totals{Total: 120 * GB, Present: 10 * GB}
	full := Totals{Total: 1600 * GB, Present: 10 * GB}
	for _, tc := range []struct {
		name      string
		requested Mode
		free      int64
		want      Mode
		err       string
	}{
		{"auto picks full with room", Auto, 1700 * GB, Full, ""},
		{"auto falls back to stream", Auto, 1000 * GB, Stream, ""},
		{"auto refuses with the shortfall", Auto, 78 * GB, "", "free 132 GB more for stream mode"},
		{"full refuses and suggests stream", Full, 1000 * GB, "", "free 690 GB more for full mode"},
		{"stream fits exactly", Stream, 210 * GB, Stream, ""},
		{"shortfall rounds up", Stream, 210*GB - 1, "", "free 1 B more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Choose(tc.requested, stream, full, tc.free, DefaultHeadroom)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrNoSpace)
				require.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseLayers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"1-3,45", []int{1, 2, 3, 45}, false},
		{"7", []int{7}, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"1,,2", nil, true},
		{"0-999999999", nil, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLayers(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for _, l := range tc.want {
				require.True(t, got[l])
			}
		})
	}
}

func TestReadTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     string
		routes int
		err    string
	}{
		{"two tokens", `{"token":0,"layer":1,"experts":[3,4]}` + "\n\n" + `{"token":1,"layer":1,"experts":[3]}` + "\n", 3, ""},
		{"not JSON", "{\"token\":0,\"layer\":1,\"experts\":[1]}\nnope\n", 1, "line 2"},
		{"missing layer", `{"token":0,"experts":[1]}`, 0, "want {"},
		{"negative expert", `{"token":0,"layer":2,"experts":[-1]}`, 0, "negative expert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[checkpoint.ExpertID]float64{}
			n, err := ReadTrace(strings.NewReader(tc.in), "t.jsonl", counts)
			require.Equal(t, tc.routes, n)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 2.0, counts[checkpoint.ExpertID{Layer: 1, Expert: 3}])
		})
	}
}

func TestRankMissing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	counts := map[checkpoint.ExpertID]float64{}
	_, err := ReadTrace(strings.NewReader(`{"token":0,"layer":2,"experts":[5,6,7]}
{"token":1,"layer":2,"experts":[6,7]}
{"token":1,"layer":3,"experts":[7,99]}
`), "trace", counts)
	require.NoError(t, err)
	require.NoError(t, ReadHeat(strings.NewReader(`{"layer":3,"expert":7,"heat":0.5}`), "heat", counts))
	e := p.Experts()
	var l2e7 Expert
	for _, x := range e {
		if x.ExpertID == (checkpoint.ExpertID{Layer: 2, Expert: 7}) {
			l2e7 = x
		}
	}
	require.NoError(t, m.Ensure(ctx, l2e7.File, l2e7.Start, l2e7.Len())) // cached: not a candidate
	ranked, unknown, err := m.RankMissing(p, counts)
	require.NoError(t, err)
	require.Equal(t, 1, unknown, "layer 3 expert 99 is not in the model")
	var got []checkpoint.ExpertID
	for _, c := range ranked {
		got = append(got, c.ExpertID)
	}
	require.Equal(t, []checkpoint.ExpertID{{Layer: 2, Expert: 6}, {Layer: 3, Expert: 7}, {Layer: 2, Expert: 5}}, got)
	cached, total, err := m.ExpertsCached(p)
	require.NoError(t, err)
	require.Equal(t, 1, cached)
	require.Equal(t, 9*32, total)
}

// TestPlanRefusesABrokenExpertLayout: a shard whose routed expert is not one
// span in the canonical order is refused at plan time (checkpoint.IndexExperts
// is the one reader of the layout), naming the file and the expert.
func TestPlanRefusesABrokenExpertLayout(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	const shard = "model-00001-of-000001.safetensors"
	var hdr strings.Builder
	hdr.WriteString(`{`)
	order := []int{0, 2, 1, 3, 4, 5} // w2 packed before w1 scale
	for i, part := range order {
		if i > 0 {
			hdr.WriteString(",")
		}
		name := checkpoint.ExpertName(checkpoint.ExpertID{Layer: 1, Expert: 4}, part)
		fmt.Fprintf(&hdr, `%q:{"dtype":"U8","shape":[4],"data_offsets":[%d,%d]}`, name, 4*i, 4*i+4)
	}
	hdr.WriteString(`}`)
	data := binary.LittleEndian.AppendUint64(nil, uint64(hdr.Len()))
	data = append(append(data, hdr.String()...), make([]byte, 24)...)
	require.NoError(t, os.WriteFile(filepath.Join(src, shard), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "config.json"), []byte(`{}`), 0o644))
	h := hubtest.New(t, src)
	m, err := Open(options(h, t.TempDir()))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	_, err = m.Plan(t.Context())
	require.ErrorIs(t, err, ErrLayout)
	require.ErrorIs(t, err, checkpoint.ErrExpertLayout)
	require.ErrorContains(t, err, shard)
	require.ErrorContains(t, err, "layer 1 expert 4")
}

// TestHeadroomForScalesWithTheModel: the default free-disk margin is a
// tenth of the model, 1 to 100 GB, so a 3 MB model installs on a disk with
// 76 GB free (a fixed 100 GB refused it) and K3 keeps its 100 GB.
func TestHeadroomForScalesWithTheModel(t *testing.T) {
	t.Parallel()
	const MB, GB = 1_000_000, 1_000_000_000
	for _, tc := range []struct {
		size, want int64
	}{{3 * MB, 1 * GB}, {215 * GB, 21.5 * GB}, {1700 * GB, 100 * GB}} {
		require.Equal(t, tc.want, HeadroomFor(tc.size), "model of %d bytes", tc.size)
	}
	tiny := Totals{Total: 3 * MB}
	got, err := Choose(Auto, tiny, tiny, 76*GB, 0)
	require.NoError(t, err, "a 3 MB model on a disk with 76 GB free")
	require.Equal(t, Full, got)
	_, err = Choose(Full, tiny, tiny, 76*GB, DefaultHeadroom)
	require.ErrorIs(t, err, ErrNoSpace, "an explicit margin still holds")
}
