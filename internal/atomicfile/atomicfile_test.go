package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		old  []byte // nil: no file before
		data []byte
		perm os.FileMode
	}{
		{"new file", nil, []byte("hello\n"), 0o644},
		{"replace", []byte("old content, longer than the new"), []byte("new"), 0o600},
		{"empty", []byte("x"), []byte{}, 0o644},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if tc.old != nil {
				require.NoError(t, os.WriteFile(path, tc.old, 0o644))
			}
			require.NoError(t, atomicfile.WriteFile(path, tc.data, tc.perm))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.data, got)
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, tc.perm, st.Mode().Perm())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file left behind")
		})
	}
}

// A write that fails at the rename (the target is a non-empty directory)
// must leave what was there untouched and no temporary file behind.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	require.NoError(t, os.Mkdir(path, 0o755))
	old := filepath.Join(path, "keep")
	require.NoError(t, os.WriteFile(old, []byte("old"), 0o644))

	err := atomicfile.WriteFile(path, []byte("new"), 0o644)
	require.ErrorIs(t, err, atomicfile.ErrWrite)
	require.ErrorContains(t, err, path)

	got, err := os.ReadFile(old)
	require.NoError(t, err)
	require.Equal(t, []byte("old"), got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "temporary file removed")
}

// A missing directory fails before anything is written and names the path.
func TestWriteFileMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "f")
	err := atomicfile.WriteFile(path, []byte("x"), 0o644)
	require.ErrorIs(t, err, atomicfile.ErrWrite)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}
