package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestJobLife(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, s.Create(&Job{ID: id, Kind: "response", Request: json.RawMessage(`{"x":1}`)}))
	}
	require.Error(t, s.Create(&Job{ID: "a"}), "ids are unique")
	require.NoError(t, s.Start("a"))
	require.NoError(t, s.AppendTokens("a", []int{1, 2}))
	require.NoError(t, s.AppendTokens("a", []int{3}))
	j, toks, err := s.Get("a")
	require.NoError(t, err)
	require.Equal(t, InProgress, j.State)
	require.Equal(t, []int{1, 2, 3}, toks)
	require.JSONEq(t, `{"x":1}`, string(j.Request))

	require.NoError(t, s.Finish("b", Completed, []int{9}, json.RawMessage(`"done"`), ""))
	require.Error(t, s.Finish("b", InProgress, nil, nil, ""), "not a final state")
	p, err := s.Pending()
	require.NoError(t, err)
	require.Len(t, p, 2)
	require.Equal(t, "a", p[0].ID, "arrival order")
	require.Equal(t, "c", p[1].ID)

	// Reopened, everything is there.
	require.NoError(t, s.Close())
	s = open(t, path)
	j, toks, err = s.Get("b")
	require.NoError(t, err)
	require.Equal(t, Completed, j.State)
	require.Equal(t, []int{9}, toks)
	require.JSONEq(t, `"done"`, string(j.Result))

	require.NoError(t, s.Delete("c"))
	_, _, err = s.Get("c")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete("c"), ErrNotFound)

	now := time.Now()
	s.now = func() time.Time { return now.Add(time.Hour) }
	n, err := s.Expire(now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, n, "only b is finished and old")
	_, _, err = s.Get("a")
	require.NoError(t, err, "a pending job never expires")
	require.NoError(t, s.Check())
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	open(t, path)
	_, err := Open(path)
	require.ErrorIs(t, err, ErrLocked, "one process at a time")

	bad := filepath.Join(t.TempDir(), FileName)
	require.NoError(t, os.WriteFile(bad, []byte("not a database, just some bytes that bbolt must refuse ............"), 0o600))
	s, err := Open(bad)
	require.NoError(t, err, "a file that is no database is moved aside, not used or deleted")
	require.NotNil(t, s.Recovered())
	require.FileExists(t, s.Recovered().MovedTo)
	require.NoError(t, s.Close())
}

// TestKill9Anywhere kills a child process (this test binary, re-executed)
// that creates jobs and appends their tokens as fast as it can, at seeded
// random points; after each kill the store opens, checks clean, and holds
// every transaction the child reported committed, each job's tokens a
// whole prefix of what was written.
func TestKill9Anywhere(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	exe, err := os.Executable()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(17, 4))
	for round := range 5 {
		at := 5 + rng.IntN(60) // commits before the kill
		cmd := exec.Command(exe, "-test.run=^TestKill9Child$")
		cmd.Env = append(os.Environ(), "DELTAFIN_STORE_CHILD="+path, "DELTAFIN_STORE_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		var last string
		for n := 0; n < at && sc.Scan(); n++ {
			last = sc.Text()
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.NotEmpty(t, last, "the child committed nothing")

		s, err := Open(path)
		require.NoError(t, err)
		require.NoError(t, s.Check())
		var id string
		var want int
		_, err = fmt.Sscanf(last, "%s %d", &id, &want)
		require.NoError(t, err)
		_, toks, err := s.Get(id)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(toks), want, "a committed append was lost")
		for i, tok := range toks {
			require.Equal(t, i, tok, "tokens are a whole prefix")
		}
		require.NoError(t, s.Close())
	}
}

// TestKill9Child is TestKill9Anywhere's child: it prints "ID N" after each
// committed append of token N-1; run alone it does nothing.
func TestKill9Child(t *testing.T) {
	path := os.Getenv("DELTAFIN_STORE_CHILD")
	if path == "" {
		return
	}
	s, err := Open(path)
	require.NoError(t, err)
	for j := 0; ; j++ {
		id := fmt.Sprintf("r%s-%d", os.Getenv("DELTAFIN_STORE_ROUND"), j)
		require.NoError(t, s.Create(&Job{ID: id, Kind: "response", Request: json.RawMessage(`{}`)}))
		for n := 0; n < 20; n++ {
			require.NoError(t, s.AppendTokens(id, []int{n}))
			fmt.Printf("%s %d\n", id, n+1)
		}
		require.NoError(t, s.Finish(id, Completed, nil, json.RawMessage(`{}`), ""))
	}
}
