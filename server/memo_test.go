package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoKeyDistinguishesInputs(t *testing.T) {
	base := keyOf([]int{1, 2, 3}, 10, []int{770})
	require.Equal(t, base, keyOf([]int{1, 2, 3}, 10, []int{770}))
	for _, tc := range []struct {
		name string
		key  memoKey
	}{
		{"prompt", keyOf([]int{1, 2, 4}, 10, []int{770})},
		{"limit", keyOf([]int{1, 2, 3}, 11, []int{770})},
		{"stop", keyOf([]int{1, 2, 3}, 10, nil)},
		{"boundary", keyOf([]int{1, 2}, 3, []int{10, 770})},
	} {
		t.Run(tc.name, func(t *testing.T) { require.NotEqual(t, base, tc.key) })
	}
}

func TestMemoBounds(t *testing.T) {
	tests := []struct {
		name       string
		maxEntries int
		maxBytes   int64
		puts       int
		tokens     int
		wantLen    int
	}{
		{"entries bound", 3, 1 << 20, 5, 4, 3},
		{"bytes bound", 100, 2 * (memoEntryOverhead + 8*10), 5, 10, 2},
		{"disabled", 0, 1 << 20, 5, 4, 0},
		{"entry larger than budget", 10, memoEntryOverhead + 8, 3, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemo(tc.maxEntries, tc.maxBytes)
			for i := range tc.puts {
				m.put(keyOf([]int{i}, 1, nil), memoValue{tokens: make([]int, tc.tokens), finish: "length"})
			}
			n, bytes := m.len()
			require.Equal(t, tc.wantLen, n)
			require.LessOrEqual(t, bytes, tc.maxBytes)
			for i := range tc.puts {
				_, ok := m.get(keyOf([]int{i}, 1, nil))
				// The most recent entries survive.
				require.Equal(t, i >= tc.puts-tc.wantLen, ok, "entry %d", i)
			}
		})
	}
}

func TestMemoLRU(t *testing.T) {
	m := newMemo(2, 1<<20)
	a, b, c := keyOf([]int{1}, 1, nil), keyOf([]int{2}, 1, nil), keyOf([]int{3}, 1, nil)
	m.put(a, memoValue{tokens: []int{10}, finish: "stop"})
	m.put(b, memoValue{tokens: []int{20}, finish: "stop"})
	got, ok := m.get(a) // a is now the most recent
	require.True(t, ok)
	require.Equal(t, memoValue{tokens: []int{10}, finish: "stop"}, got)
	m.put(c, memoValue{tokens: []int{30}, finish: "length"})
	_, ok = m.get(b)
	require.False(t, ok, "b was least recently used")
	_, ok = m.get(a)
	require.True(t, ok)

	// Replacing an entry keeps the byte count exact.
	m.put(c, memoValue{tokens: []int{1, 2, 3}, finish: "length"})
	n, bytes := m.len()
	require.Equal(t, 2, n)
	require.Equal(t, int64(2*memoEntryOverhead+8*(1+3)), bytes)

	// The memo keeps its own copy.
	toks := []int{7}
	m.put(b, memoValue{tokens: toks, finish: "stop"})
	toks[0] = 8
	got, _ = m.get(b)
	require.Equal(t, []int{7}, got.tokens)
}
