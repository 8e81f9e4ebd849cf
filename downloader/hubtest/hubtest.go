// Package hubtest is a fake Hugging Face hub for tests: it serves a model
// directory from testdata through the hub's real API shapes (paginated tree
// listing with LFS sha256, /resolve/ URLs redirecting large files to a CDN
// host that answers Range requests, and the parts of Xet storage that check
// a range of a file: Xet hashes, token exchange, chunk hashes; see xet.go),
// with hooks to inject faults. It sits
// beside the downloader in the data flow, on the network side.
package hubtest

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

	"github.com/deltafin/deltafin/downloader/xet"
	"github.com/stretchr/testify/require"
)

// The repository and revision the fake hub serves; the branch "main"
// resolves to Revision.
const (
	Repo     = "moonshotai/Kimi-K3"
	Revision = "c5d1dd4c428bd1ce8b88c5044f3b6ccde9e3b721"
)

// File is one file of the fake repository.
type File struct {
	Path string
	Data []byte
	LFS  bool

	sha256, gitOID string // computed once by add
}

// A Fault lets a test change how the CDN answers one range request. It returns
// true when it has written the whole answer itself.
type Fault func(w http.ResponseWriter, r *http.Request, f *File, start, end int64) bool

// Hub serves a model directory as the Hugging Face hub does: the tree
// API (paginated, LFS sha256 for large files, git blob ids for small ones),
// /resolve/ URLs that answer small files directly and redirect LFS files to
// a CDN on another host, and a CDN that serves Range requests.
type Hub struct {
	t             testing.TB
	hub, cdn, cas *httptest.Server
	Files         map[string]*File // by path
	Order         []string         // listing order
	Token         string           // required by the hub when set
	Gated         bool             // a wrong token gets 403 GatedRepo
	PageSize      int              // entries per tree page
	// SignedUses, when > 0, makes every CDN URL the hub hands out expire
	// after that many requests (403), as signed CDN URLs do.
	SignedUses int
	// WholeSmallFiles makes the hub ignore Range for files kept in git
	// (200 with the whole file), which a client must cope with.
	WholeSmallFiles bool
	// NoXet serves the files without Xet storage (no X-Xet-Hash, no token
	// exchange), as for repositories still on plain LFS.
	NoXet bool
	// NoChunkHashes makes the CAS answer 404 to file-chunk-hashes, as a
	// CAS without that endpoint does.
	NoChunkHashes bool
	// TokenTTL is how long a CAS access token is valid [1h]; TokenUses,
	// when > 0, makes each token expire after that many CAS requests.
	TokenTTL  time.Duration
	TokenUses int

	mu        sync.Mutex
	fault     Fault
	listFault func(w http.ResponseWriter) bool
	sigs      map[string]int // uses of each signed URL
	nsig      int
	active    int        // requests in a handler now
	idle      *sync.Cond // on mu: signalled when active drops to 0
	casFault  func(w http.ResponseWriter) bool
	xetFiles  map[string]*xetFile
	tokens    map[string]*casToken

	Requests atomic.Int64 // CDN range requests
	Served   atomic.Int64 // file bytes sent (CDN and hub)
	Lists    atomic.Int64 // tree listing requests
	// TokenExchanges counts xet-read-token requests; CASRequests the CAS's
	// chunk hash answers.
	TokenExchanges, CASRequests atomic.Int64
}

// New serves dir (a model directory such as ../testdata/k3-tiny) as Repo at
// Revision. Files named reference.* are left out (test oracles), and a code
// file and a nested document are added, which a downloader must not fetch.
func New(t testing.TB, dir string) *Hub {
	t.Helper()
	h := &Hub{t: t, Files: map[string]*File{}, PageSize: 4, xetFiles: map[string]*xetFile{}, tokens: map[string]*casToken{}}
	h.idle = sync.NewCond(&h.mu)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "reference.") {
			continue // test oracles, not part of a hub repository
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		lfs := strings.HasSuffix(e.Name(), ".safetensors") || strings.HasSuffix(e.Name(), ".model")
		h.add(&File{Path: e.Name(), Data: b, LFS: lfs})
	}
	// Code in the repository that the downloader must not fetch.
	h.add(&File{Path: "modeling_kimi_k3.py", Data: []byte("import torch\n")})
	h.add(&File{Path: "docs/notes.md", Data: []byte("# notes\n")})
	// Both fields are set before either server starts, so handlers read them
	// after the write (the race detector cannot see through the sockets).
	h.hub = httptest.NewUnstartedServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewUnstartedServer(http.HandlerFunc(h.serveCDN))
	h.cas = httptest.NewUnstartedServer(http.HandlerFunc(h.serveCAS))
	h.hub.Start()
	h.cdn.Start()
	h.cas.Start()
	t.Cleanup(h.hub.Close)
	t.Cleanup(h.cdn.Close)
	t.Cleanup(h.cas.Close)
	return h
}

func (h *Hub) add(f *File) {
	sum := sha256.Sum256(f.Data)
	f.sha256 = hex.EncodeToString(sum[:])
	blob := sha1.New()
	fmt.Fprintf(blob, "blob %d\x00", len(f.Data))
	blob.Write(f.Data)
	f.gitOID = hex.EncodeToString(blob.Sum(nil))
	if f.LFS {
		h.xetFiles[f.Path] = newXetFile(f.Data, xet.Current)
	}
	h.Files[f.Path] = f
	h.Order = append(h.Order, f.Path)
}

// WaitIdle returns once no request is in the hub's or the CDN's handlers:
// a test that counts Served from here on counts no byte of a request that
// an earlier, cancelled or killed, client had made.
func (h *Hub) WaitIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.active > 0 {
		h.idle.Wait()
	}
}

// track counts a request in a handler until the returned func is called.
func (h *Hub) track() func() {
	h.mu.Lock()
	h.active++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		if h.active--; h.active == 0 {
			h.idle.Broadcast()
		}
		h.mu.Unlock()
	}
}

func (h *Hub) SetFault(f Fault) {
	h.mu.Lock()
	h.fault = f
	h.mu.Unlock()
}

// SetListFault lets f answer tree listing requests itself (returning true
// when it wrote the answer), as a rate-limited hub does.
func (h *Hub) SetListFault(f func(w http.ResponseWriter) bool) {
	h.mu.Lock()
	h.listFault = f
	h.mu.Unlock()
}

// URL is the hub endpoint (HF_ENDPOINT).
func (h *Hub) URL() string { return h.hub.URL }

func (h *Hub) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.Token == "" || r.Header.Get("Authorization") == "Bearer "+h.Token {
		return true
	}
	if h.Gated && r.Header.Get("Authorization") != "" {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+Repo+" is restricted and you are not in the authorized list.")
		http.Error(w, `{"error":"gated"}`, http.StatusForbidden)
		return false
	}
	w.Header().Set("X-Error-Code", "RepoNotFound")
	w.Header().Set("X-Error-Message", "Invalid username or password.")
	http.Error(w, `{"error":"Invalid username or password."}`, http.StatusUnauthorized)
	return false
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	defer h.track()()
	treePrefix := "/api/models/" + Repo + "/tree/"
	resolvePrefix := "/" + Repo + "/resolve/"
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/models/") && !strings.HasPrefix(r.URL.Path, "/api/models/"+Repo+"/"),
		!strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, resolvePrefix):
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	if !h.authorized(w, r) {
		return
	}
	if rev, ok := strings.CutPrefix(r.URL.Path, "/api/models/"+Repo+"/revision/"); ok {
		if rev != "main" && rev != Revision {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": Repo, "sha": Revision})
		return
	}
	if rev, ok := strings.CutPrefix(r.URL.Path, "/api/models/"+Repo+"/xet-read-token/"); ok {
		h.serveXetToken(w, rev)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, treePrefix); ok {
		h.Lists.Add(1)
		h.mu.Lock()
		lf := h.listFault
		h.mu.Unlock()
		if lf != nil && lf(w) {
			return
		}
		if rest != Revision || r.URL.Query().Get("recursive") != "true" {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		h.serveTree(w, r)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, resolvePrefix)
	rev, name, _ := strings.Cut(rest, "/")
	if rev != Revision {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	f, ok := h.Files[name]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, `{"error":"Entry not found"}`, http.StatusNotFound)
		return
	}
	if !f.LFS {
		cw := &countingWriter{ResponseWriter: w}
		if h.WholeSmallFiles {
			r.Header.Del("Range")
		}
		http.ServeContent(cw, r, name, time.Time{}, strings.NewReader(string(f.Data)))
		h.Served.Add(cw.n)
		return
	}
	w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
	h.setXetHeaders(w, f)
	h.mu.Lock()
	h.nsig++
	sig := "s" + strconv.Itoa(h.nsig)
	h.mu.Unlock()
	http.Redirect(w, r, h.cdn.URL+"/xet/"+f.sha256+"?name="+name+"&sig="+sig, http.StatusFound)
}

type treeEntry struct {
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

func (h *Hub) serveTree(w http.ResponseWriter, r *http.Request) {
	var all []treeEntry
	all = append(all, treeEntry{Type: "directory", OID: strings.Repeat("d", 40), Path: "docs"})
	for _, p := range h.Order {
		f := h.Files[p]
		e := treeEntry{Type: "file", OID: f.gitOID, Size: int64(len(f.Data)), Path: p}
		if f.LFS {
			e.LFS = &struct {
				OID         string `json:"oid"`
				Size        int64  `json:"size"`
				PointerSize int    `json:"pointerSize"`
			}{f.sha256, int64(len(f.Data)), 134}
		}
		all = append(all, e)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+h.PageSize, len(all))
	if end < len(all) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(end))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, h.hub.URL, r.URL.Path, q.Encode()))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all[start:end])
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	defer h.track()()
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "the CDN must not receive the hub token", http.StatusBadRequest)
		return
	}
	f, ok := h.Files[r.URL.Query().Get("name")]
	sig := r.URL.Query().Get("sig")
	h.mu.Lock()
	if h.sigs == nil {
		h.sigs = map[string]int{}
	}
	h.sigs[sig]++
	expired := h.SignedUses > 0 && h.sigs[sig] > h.SignedUses
	h.mu.Unlock()
	if !ok || !strings.HasPrefix(sig, "s") || expired {
		http.Error(w, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>", http.StatusForbidden)
		return
	}
	size := int64(len(f.Data))
	var start, last int64
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &start, &last); err != nil || start > last || last >= size {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		http.Error(w, "bad range", http.StatusRequestedRangeNotSatisfiable)
		return
	}
	end := last + 1
	h.Requests.Add(1)
	h.mu.Lock()
	fl := h.fault
	h.mu.Unlock()
	if fl != nil && fl(w, r, f, start, end) {
		return
	}
	WriteRange(w, f, start, end, size)
	h.Served.Add(end - start)
}

// WriteRange answers a range request correctly (for faults that pass some requests on).
func WriteRange(w http.ResponseWriter, f *File, start, end, size int64) {
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, size))
	w.Header().Set("Content-Length", strconv.FormatInt(end-start, 10))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(f.Data[start:end])
}

// RequireIdentical checks that every configuration, tokenizer and
// safetensors file in dir equals the source byte for byte, and that code and
// nested files were not fetched.
func (h *Hub) RequireIdentical(t *testing.T, dir string) {
	t.Helper()
	for _, p := range h.Order {
		ext := filepath.Ext(p)
		if strings.Contains(p, "/") || (ext != ".json" && ext != ".model" && ext != ".safetensors") {
			_, err := os.Stat(filepath.Join(dir, p))
			require.True(t, os.IsNotExist(err), "%s must not be fetched", p)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, p))
		require.NoError(t, err)
		require.True(t, string(got) == string(h.Files[p].Data), "%s differs from the source", p)
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
