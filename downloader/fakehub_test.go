package downloader

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testRepo = "moonshotai/Kimi-K3"
	testRev  = "c5d1dd4c428bd1ce8b88c5044f3b6ccde9e3b721"
)

// fakeFile is one file of the fake repository.
type fakeFile struct {
	path string
	data []byte
	lfs  bool
}

// fault lets a test change how the CDN answers one range request. It returns
// true when it has written the whole answer itself.
type fault func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool

// fakeHub serves testdata/k3-tiny as the Hugging Face hub does: the tree
// API (paginated, LFS sha256 for large files, git blob ids for small ones),
// /resolve/ URLs that answer small files directly and redirect LFS files to
// a CDN on another host, and a CDN that serves Range requests.
type fakeHub struct {
	t        *testing.T
	hub, cdn *httptest.Server
	files    map[string]*fakeFile
	order    []string
	token    string // required when set
	gated    bool
	pageSize int

	mu    sync.Mutex
	fault fault

	requests atomic.Int64 // CDN range requests
	served   atomic.Int64 // bytes the CDN sent
	lists    atomic.Int64
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	h := &fakeHub{t: t, files: map[string]*fakeFile{}, pageSize: 4}
	dir := filepath.Join("..", "testdata", "k3-tiny")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "reference.") {
			continue // test oracles, not part of a hub repository
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		lfs := strings.HasSuffix(e.Name(), ".safetensors") || strings.HasSuffix(e.Name(), ".model")
		h.add(&fakeFile{path: e.Name(), data: b, lfs: lfs})
	}
	// Code in the repository that the downloader must not fetch.
	h.add(&fakeFile{path: "modeling_kimi_k3.py", data: []byte("import torch\n")})
	h.add(&fakeFile{path: "docs/notes.md", data: []byte("# notes\n")})
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(h.hub.Close)
	t.Cleanup(h.cdn.Close)
	return h
}

func (h *fakeHub) add(f *fakeFile) {
	h.files[f.path] = f
	h.order = append(h.order, f.path)
}

func (h *fakeHub) setFault(f fault) {
	h.mu.Lock()
	h.fault = f
	h.mu.Unlock()
}

func (h *fakeHub) options(dir string) Options {
	return Options{
		HubOptions:   HubOptions{Endpoint: h.hub.URL, Repo: testRepo, Revision: testRev, Token: h.token},
		Dir:          dir,
		Jobs:         4,
		ChunkSize:    64 << 10,
		Attempts:     6,
		BackoffBase:  time.Millisecond,
		BackoffMax:   20 * time.Millisecond,
		StallTimeout: 5 * time.Second,
	}
}

func (h *fakeHub) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.token == "" || r.Header.Get("Authorization") == "Bearer "+h.token {
		return true
	}
	if h.gated && r.Header.Get("Authorization") != "" {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+testRepo+" is restricted and you are not in the authorized list.")
		http.Error(w, `{"error":"gated"}`, http.StatusForbidden)
		return false
	}
	w.Header().Set("X-Error-Code", "RepoNotFound")
	w.Header().Set("X-Error-Message", "Invalid username or password.")
	http.Error(w, `{"error":"Invalid username or password."}`, http.StatusUnauthorized)
	return false
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	treePrefix := "/api/models/" + testRepo + "/tree/"
	resolvePrefix := "/" + testRepo + "/resolve/"
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/models/") && !strings.HasPrefix(r.URL.Path, treePrefix),
		!strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, resolvePrefix):
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	if !h.authorized(w, r) {
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, treePrefix); ok {
		h.lists.Add(1)
		if rest != testRev || r.URL.Query().Get("recursive") != "true" {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		h.serveTree(w, r)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, resolvePrefix)
	rev, name, _ := strings.Cut(rest, "/")
	if rev != testRev {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	f, ok := h.files[name]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, `{"error":"Entry not found"}`, http.StatusNotFound)
		return
	}
	if !f.lfs {
		cw := &countingWriter{ResponseWriter: w}
		http.ServeContent(cw, r, name, time.Time{}, strings.NewReader(string(f.data)))
		h.served.Add(cw.n)
		return
	}
	sum := sha256.Sum256(f.data)
	w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
	http.Redirect(w, r, h.cdn.URL+"/xet/"+hex.EncodeToString(sum[:])+"?name="+name+"&sig=ok", http.StatusFound)
}

type fakeTreeEntry struct {
	Type string `json:"type"`
	OID  string `json:"oid"`
	Size int64  `json:"size"`
	Path string `json:"path"`
	LFS  *struct {
		OID         string `json:"oid"`
		Size        int64  `json:"size"`
		PointerSize int    `json:"pointerSize"`
	} `json:"lfs,omitempty"`
}

func (h *fakeHub) serveTree(w http.ResponseWriter, r *http.Request) {
	var all []fakeTreeEntry
	all = append(all, fakeTreeEntry{Type: "directory", OID: strings.Repeat("d", 40), Path: "docs"})
	for _, p := range h.order {
		f := h.files[p]
		blob := sha1.New()
		fmt.Fprintf(blob, "blob %d\x00", len(f.data))
		blob.Write(f.data)
		e := fakeTreeEntry{Type: "file", OID: hex.EncodeToString(blob.Sum(nil)), Size: int64(len(f.data)), Path: p}
		if f.lfs {
			sum := sha256.Sum256(f.data)
			e.LFS = &struct {
				OID         string `json:"oid"`
				Size        int64  `json:"size"`
				PointerSize int    `json:"pointerSize"`
			}{hex.EncodeToString(sum[:]), int64(len(f.data)), 134}
		}
		all = append(all, e)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+h.pageSize, len(all))
	if end < len(all) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(end))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, h.hub.URL, r.URL.Path, q.Encode()))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all[start:end])
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "the CDN must not receive the hub token", http.StatusBadRequest)
		return
	}
	f, ok := h.files[r.URL.Query().Get("name")]
	if !ok || r.URL.Query().Get("sig") != "ok" {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	size := int64(len(f.data))
	var start, last int64
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &start, &last); err != nil || start > last || last >= size {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		http.Error(w, "bad range", http.StatusRequestedRangeNotSatisfiable)
		return
	}
	end := last + 1
	h.requests.Add(1)
	h.mu.Lock()
	fl := h.fault
	h.mu.Unlock()
	if fl != nil && fl(w, r, f, start, end) {
		return
	}
	writeRange(w, f, start, end, size)
	h.served.Add(end - start)
}

func writeRange(w http.ResponseWriter, f *fakeFile, start, end, size int64) {
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, size))
	w.Header().Set("Content-Length", strconv.FormatInt(end-start, 10))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(f.data[start:end])
}

// requireIdentical checks that every file the mirror should hold equals the
// source byte for byte.
func (h *fakeHub) requireIdentical(t *testing.T, dir string) {
	t.Helper()
	for _, p := range h.order {
		if !isMetadata(p) && !isShard(p) {
			_, err := os.Stat(filepath.Join(dir, p))
			require.True(t, os.IsNotExist(err), "%s must not be fetched", p)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, p))
		require.NoError(t, err)
		require.True(t, string(got) == string(h.files[p].data), "%s differs from the source", p)
	}
}

// countingWriter counts the body bytes of an answer.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}
