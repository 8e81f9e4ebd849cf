package downloader

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafin/deltafin/downloader/hubtest"
)

type fakeFile = hubtest.File

func newFakeHub(t *testing.T) *hubtest.Hub {
	return hubtest.New(t, filepath.Join("..", "testdata", "k3-tiny"))
}

// testOptions are small chunks and short waits, so that the tiny fixture
// spans many chunks and faults recover quickly.
func testOptions(endpoint, token, dir string) Options {
	return Options{
		HubOptions:   HubOptions{Endpoint: endpoint, Repo: hubtest.Repo, Revision: hubtest.Revision, Token: token},
		Dir:          dir,
		Jobs:         4,
		ChunkSize:    64 << 10,
		Attempts:     6,
		BackoffBase:  time.Millisecond,
		BackoffMax:   20 * time.Millisecond,
		StallTimeout: 5 * time.Second,
	}
}

func options(h *hubtest.Hub, dir string) Options { return testOptions(h.URL(), h.Token, dir) }
