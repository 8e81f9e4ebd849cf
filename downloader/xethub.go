package downloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/deltafin/deltafin/downloader/xet"
)

// The hub's Xet storage, as far as checking a range of a file goes
// (huggingface.co/docs/xet): a HEAD of a file's resolve URL, not followed,
// names its Xet hash (X-Xet-Hash) and the token route (Link rel="xet-auth",
// GET /api/models/{repo}/xet-read-token/{rev} with the hub token, which
// answers {accessToken, exp, casUrl}); the CAS answers
// GET {casUrl}/v2/file-chunk-hashes/{file hash} with the X-Range-Dirty
// ranges widened to whole chunks (windows) and a Merkle subtree of each
// part of the file between them. The access token goes to the CAS only,
// and is exchanged again a minute before it expires or when the CAS
// refuses it.

// xetState is the hub's Xet knowledge: each file's hash ("" when the hub
// keeps it without Xet) and the current CAS token.
type xetState struct {
	files map[string]xetFile
	token *casToken
}

type xetFile struct {
	hash    string // the file's Xet hash; "" when it has none
	refresh string // the token route
}

type casToken struct {
	access, casURL string
	exp            time.Time
}

// xetTokenMargin: a token this close to its expiry is exchanged again.
const xetTokenMargin = time.Minute

// ErrXet: the hub's Xet storage answered in a way it never should.
var ErrXet = errors.New("downloader: unexpected answer from the hub's Xet storage")

// errNoChunkHashes: the CAS has no file-chunk-hashes endpoint (an older
// CAS): the file's held bytes stay present, not verified.
var errNoChunkHashes = errors.New("downloader: the hub's Xet storage does not publish chunk hashes")

// xetFileOf returns the file's Xet hash and token route, asking the hub
// once per file (hash "" when the hub has no Xet for it).
func (h *hub) xetFileOf(ctx context.Context, file string) (xetFile, error) {
	h.mu.Lock()
	x, ok := h.xet.files[file]
	h.mu.Unlock()
	if ok {
		return x, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, h.resolveURL(file), nil)
	if err != nil {
		return x, permanent(fmt.Errorf("downloader: %s: %w", file, err))
	}
	h.authorize(req)
	c := *h.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return x, fmt.Errorf("downloader: HEAD %s: %w", withoutQuery(req.URL), err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return x, h.statusError(resp, file)
	}
	if v := resp.Header.Get("X-Xet-Hash"); v != "" {
		if _, err := xet.ParseHash(v); err != nil {
			return x, permanent(fmt.Errorf("%w: %s: X-Xet-Hash: %v", ErrXet, file, err))
		}
		x.hash = v
		x.refresh = fmt.Sprintf("%s/api/models/%s/xet-read-token/%s", h.opts.Endpoint, h.opts.Repo, url.PathEscape(h.opts.Revision))
		if l := linkRel(resp.Header.Get("Link"), "xet-auth"); l != "" {
			u, err := req.URL.Parse(l)
			if err != nil || !strings.HasPrefix(u.String(), h.opts.Endpoint+"/") {
				return x, permanent(fmt.Errorf("%w: %s: the token route %q is not on the hub", ErrXet, file, l))
			}
			x.refresh = u.String()
		}
	}
	h.mu.Lock()
	if h.xet.files == nil {
		h.xet.files = map[string]xetFile{}
	}
	h.xet.files[file] = x
	h.mu.Unlock()
	return x, nil
}

// casTokenFor returns a CAS token valid for a while yet, exchanging the
// hub token for one when there is none, it is about to expire, or renew
// (the CAS refused it).
func (h *hub) casTokenFor(ctx context.Context, refresh string, renew bool) (*casToken, error) {
	h.mu.Lock()
	t := h.xet.token
	h.mu.Unlock()
	if t != nil && !renew && h.now().Add(xetTokenMargin).Before(t.exp) {
		return t, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, refresh, nil)
	if err != nil {
		return nil, permanent(fmt.Errorf("downloader: xet token: %w", err))
	}
	h.authorize(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloader: xet token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, h.statusError(resp, "xet-read-token")
	}
	var body struct {
		AccessToken string `json:"accessToken"`
		Exp         int64  `json:"exp"`
		CasURL      string `json:"casUrl"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || body.AccessToken == "" || body.Exp <= 0 {
		return nil, permanent(fmt.Errorf("%w: the token exchange gave no accessToken and exp", ErrXet))
	}
	cas, err := url.Parse(body.CasURL)
	if err != nil || (cas.Scheme != "https" && cas.Scheme != "http") || cas.Host == "" {
		return nil, permanent(fmt.Errorf("%w: the token exchange gave the CAS URL %q", ErrXet, body.CasURL))
	}
	t = &casToken{access: body.AccessToken, casURL: strings.TrimRight(body.CasURL, "/"), exp: time.Unix(body.Exp, 0)}
	h.mu.Lock()
	h.xet.token = t
	h.mu.Unlock()
	return t, nil
}

// chunkHashes is the CAS's answer to one dirty range: the window of whole
// chunks around it and the subtrees of the parts before and after.
type chunkHashes struct {
	FileSize int64 `json:"fileSize"`
	Windows  []struct {
		DirtyByteRange [2]int64 `json:"dirtyByteRange"`
	} `json:"windows"`
	HashRanges []*xet.Subtree `json:"hashRanges"`
}

// fileChunkHashes asks the CAS about r of the file whose Xet hash is x.
// A refused token is exchanged again once.
func (h *hub) fileChunkHashes(ctx context.Context, file string, x xetFile, r Range) (*chunkHashes, error) {
	for renew := false; ; renew = true {
		t, err := h.casTokenFor(ctx, x.refresh, renew)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.casURL+"/v2/file-chunk-hashes/"+x.hash, nil)
		if err != nil {
			return nil, permanent(fmt.Errorf("downloader: %s: %w", file, err))
		}
		req.Header.Set("Authorization", "Bearer "+t.access)
		req.Header.Set("X-Range-Dirty", fmt.Sprintf("bytes=%d-%d", r.Start, r.End-1))
		req.Header.Set("User-Agent", "deltafin/1 (huggingface_hub compatible)")
		resp, err := h.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloader: chunk hashes of %s: %w", file, err)
		}
		if resp.StatusCode == http.StatusUnauthorized && !renew {
			resp.Body.Close()
			continue // expired or revoked early: exchange again
		}
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			resp.Body.Close()
			return nil, permanent(fmt.Errorf("%w (%s answered %d)", errNoChunkHashes, t.casURL, resp.StatusCode))
		}
		if resp.StatusCode != http.StatusOK {
			err := h.statusError(resp, file+" (Xet chunk hashes)")
			resp.Body.Close()
			return nil, err
		}
		var ch chunkHashes
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&ch)
		resp.Body.Close()
		if err != nil {
			return nil, permanent(fmt.Errorf("%w: chunk hashes of %s: %v", ErrXet, file, err))
		}
		return &ch, nil
	}
}
