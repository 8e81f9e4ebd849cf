package hubtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deltafin/deltafin/downloader/xet"
)

// The fake hub's Xet storage, as much of it as a client verifying a file
// it holds in part uses (huggingface.co/docs/xet): the resolve URL of an
// LFS file names its Xet hash (X-Xet-Hash) and the token route (Link,
// rel="xet-auth"); GET /api/models/{repo}/xet-read-token/{rev} exchanges
// the hub token for a CAS access token with its expiry and the CAS URL;
// and the CAS answers GET /v2/file-chunk-hashes/{file hash} with the
// windows around the X-Range-Dirty ranges and subtrees summarising the
// rest. The chunks are the files' real content-defined chunks.

// xetFile is the CAS's record of an LFS file: its chunks and hash.
type xetFile struct {
	chunks []xet.Chunk
	hash   string
}

func newXetFile(data []byte, c xet.Chunker) *xetFile {
	chunks := c.Chunks(data)
	return &xetFile{chunks: chunks, hash: xet.FileHash(chunks).String()}
}

// ChunkLegacy makes the CAS hold the files as a client before xet-core's
// September 2025 chunker uploaded them (xet.Legacy); call it before use.
func (h *Hub) ChunkLegacy() {
	for _, f := range h.Files {
		if f.LFS {
			h.xetFiles[f.Path] = newXetFile(f.Data, xet.Legacy)
		}
	}
}

// XetHash is the Xet hash the hub publishes for an LFS file.
func (h *Hub) XetHash(path string) string { return h.xetFiles[path].hash }

// setXetHeaders adds the Xet headers of a resolve answer.
func (h *Hub) setXetHeaders(w http.ResponseWriter, f *File) {
	if h.NoXet || !f.LFS {
		return
	}
	x := h.xetFiles[f.Path]
	w.Header().Set("X-Xet-Hash", x.hash)
	w.Header().Set("Link", fmt.Sprintf(`<%s/api/models/%s/xet-read-token/%s>; rel="xet-auth", <%s/v1/reconstructions/%s>; rel="xet-reconstruction-info"`,
		h.hub.URL, Repo, Revision, h.cas.URL, x.hash))
}

// casToken is an access token the hub handed out.
type casToken struct {
	exp  time.Time
	uses int
}

// serveXetToken is the token exchange: the hub token (checked by the
// caller) for a CAS access token.
func (h *Hub) serveXetToken(w http.ResponseWriter, rev string) {
	if h.NoXet {
		http.Error(w, `{"error":"Xet is not enabled for this repository"}`, http.StatusNotFound)
		return
	}
	if rev != Revision && rev != "main" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	h.TokenExchanges.Add(1)
	var b [16]byte
	rand.Read(b[:])
	tok := "xet_" + hex.EncodeToString(b[:])
	h.mu.Lock()
	ttl := h.TokenTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	exp := time.Now().Add(ttl)
	h.tokens[tok] = &casToken{exp: exp}
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"accessToken": tok, "exp": exp.Unix(), "casUrl": h.cas.URL})
}

// SetCASFault lets f answer the CAS's chunk hash requests itself
// (returning true when it wrote the answer).
func (h *Hub) SetCASFault(f func(w http.ResponseWriter) bool) {
	h.mu.Lock()
	h.casFault = f
	h.mu.Unlock()
}

// SetTokenTTL changes TokenTTL while the hub serves.
func (h *Hub) SetTokenTTL(d time.Duration) {
	h.mu.Lock()
	h.TokenTTL = d
	h.mu.Unlock()
}

// casAuthorized checks a CAS request's access token: issued, not expired,
// and (with TokenUses) not used up.
func (h *Hub) casAuthorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tokens[tok]
	if !ok || t == nil || time.Now().After(t.exp) {
		return false
	}
	t.uses++
	return h.TokenUses <= 0 || t.uses <= h.TokenUses
}

func (h *Hub) serveCAS(w http.ResponseWriter, r *http.Request) {
	defer h.track()()
	if !h.casAuthorized(r) {
		http.Error(w, `{"error":"invalid or expired token"}`, http.StatusUnauthorized)
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/v2/file-chunk-hashes/")
	if h.NoChunkHashes {
		ok = false
	}
	var x *xetFile
	for _, f := range h.xetFiles {
		if f.hash == id {
			x = f
		}
	}
	if !ok || x == nil {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	dirty, err := parseDirty(r.Header.Get("X-Range-Dirty"))
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusBadRequest)
		return
	}
	h.CASRequests.Add(1)
	h.mu.Lock()
	cf := h.casFault
	h.mu.Unlock()
	if cf != nil && cf(w) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(chunkHashes(x.chunks, dirty))
}

// parseDirty reads "bytes=a-b,c-d" (inclusive ends) into sorted, disjoint
// half-open ranges.
func parseDirty(v string) ([][2]int64, error) {
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok {
		return nil, fmt.Errorf("X-Range-Dirty %q is not a list of bytes=a-b ranges", v)
	}
	var out [][2]int64
	for _, part := range strings.Split(spec, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "-")
		start, err1 := strconv.ParseInt(a, 10, 64)
		last, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || last < start || (len(out) > 0 && start < out[len(out)-1][1]) {
			return nil, fmt.Errorf("X-Range-Dirty %q: bad range %q", v, part)
		}
		out = append(out, [2]int64{start, last + 1})
	}
	return out, nil
}

type chunkWindow struct {
	DirtyByteRange [2]int64 `json:"dirtyByteRange"`
}

type chunkHashesResponse struct {
	TotalChunks     int            `json:"totalChunks"`
	FileSize        int64          `json:"fileSize"`
	Windows         []chunkWindow  `json:"windows"`
	HashRanges      []*xet.Subtree `json:"hashRanges"`
	GapVerification []string       `json:"gapVerification"`
}

// chunkHashes is the CAS's answer (xet-core's build_file_chunk_hashes_response):
// each dirty range widened to the chunks it touches, then on to a stable
// boundary (two chunks in a row of a size only a hash match cuts), ranges
// that meet merged, and a subtree of each gap between the windows.
func chunkHashes(chunks []xet.Chunk, dirty [][2]int64) chunkHashesResponse {
	var size int64
	for _, c := range chunks {
		size += c.Len
	}
	resp := chunkHashesResponse{TotalChunks: len(chunks), FileSize: size, GapVerification: []string{}}
	var gap []xet.Chunk
	first := true // the gap being collected starts the file
	closeGap := func(atEnd bool) {
		var s *xet.Subtree
		if len(gap) > 0 {
			s = xet.NewSubtree(first, gap, atEnd)
		}
		resp.HashRanges = append(resp.HashRanges, s)
		gap = nil
	}
	overlaps := func(i int, s, e int64) bool { return i < len(dirty) && e > dirty[i][0] && s < dirty[i][1] }
	di, inWindow := 0, false
	var prevStable bool
	pos := int64(0)
	for _, c := range chunks {
		s, e := pos, pos+c.Len
		pos = e
		switch {
		case !inWindow && overlaps(di, s, e):
			closeGap(false)
			resp.Windows = append(resp.Windows, chunkWindow{[2]int64{s, e}})
			inWindow, prevStable = true, false
		case !inWindow:
			gap = append(gap, c)
			continue
		case overlaps(di, s, e) || overlaps(di+1, s, e):
			if !overlaps(di, s, e) {
				di++
			}
			resp.Windows[len(resp.Windows)-1].DirtyByteRange[1] = e
			prevStable = false
		default:
			resp.Windows[len(resp.Windows)-1].DirtyByteRange[1] = e
			stable := xet.StableChunk(c.Len)
			if prevStable && stable {
				di++
				first, inWindow, prevStable = false, false, false
				continue
			}
			prevStable = stable
			continue
		}
		for di+1 < len(dirty) && e > dirty[di+1][0] {
			di++
		}
	}
	closeGap(true)
	return resp
}
