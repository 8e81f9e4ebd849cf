package downloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors callers branch on. Every error this package returns that matches one
// of them also says, in words, what the user can do.
var (
	// ErrAuth: the hub refused access (401, 403): a token is missing, wrong
	// or lacks access to a gated repository.
	ErrAuth = errors.New("downloader: access denied by the hub")
	// ErrNotFound: the repository, revision or file does not exist (404).
	ErrNotFound = errors.New("downloader: not found on the hub")
	// ErrProtocol: the server answered in a way a correct hub never does
	// (wrong Content-Range, a short body, an unparseable listing).
	ErrProtocol = errors.New("downloader: unexpected answer from the hub")
	// ErrChecksum: a complete file did not match the hub's digest, twice.
	ErrChecksum = errors.New("downloader: checksum mismatch")
	// ErrDiskFull: the disk filled up; everything written so far is kept and
	// the transfer continues from there once space is freed.
	ErrDiskFull = errors.New("downloader: disk full")
	// ErrNoSpace: the chosen mode does not fit on the disk (checked before
	// any transfer starts).
	ErrNoSpace = errors.New("downloader: not enough free disk")
	// ErrLayout: a shard's tensors do not form the expected layout.
	ErrLayout = errors.New("downloader: unexpected checkpoint layout")
)

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// isPermanent reports whether err must not be retried (restic's
// IsPermanentError): 4xx answers, protocol violations, a full disk.
func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// HubOptions says where the model lives. Endpoint and Token come from
// HF_ENDPOINT and HF_TOKEN, read by package app as huggingface_hub reads them.
type HubOptions struct {
	Endpoint string // e.g. https://huggingface.co (no trailing slash needed)
	Repo     string // owner/name
	Revision string // a commit hash pins the content
	Token    string // sent as a Bearer token to the hub, never to the CDN
	// Client is the HTTP client; nil uses one with keep-alive connections
	// sized for the transfer's parallelism.
	Client *http.Client
}

// hub talks to the Hugging Face hub API: the tree listing, and file bytes
// through /{repo}/resolve/{revision}/{path}, which large files answer with a
// redirect to a CDN. The final URL of a file is remembered so that later
// range requests go straight to the CDN.
type hub struct {
	opts   HubOptions
	client *http.Client

	now      func() time.Time // reads Retry-After dates
	mu       sync.Mutex
	resolved map[string]string // file path -> URL after redirects
	xet      xetState
	// answered is set once any server answered a request: a hub that
	// answered before may come back, so after it a refused or
	// unresolvable host is retried (unreachable.go).
	answered atomic.Bool
}

func newHub(opts HubOptions, jobs int) *hub {
	opts.Endpoint = strings.TrimRight(opts.Endpoint, "/")
	var c http.Client
	if opts.Client != nil {
		c = *opts.Client
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = max(jobs, 2)
		c.Transport = t
	}
	h := &hub{opts: opts, client: &c, resolved: map[string]string{}, now: time.Now}
	c.Transport = answeredTransport{next: c.Transport, h: h}
	// The token is for the hub only. Go keeps Authorization on redirects to
	// the same host name on another port, so drop it ourselves whenever the
	// redirect leaves the endpoint.
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("downloader: more than 10 redirects")
		}
		if !strings.HasPrefix(req.URL.String(), h.opts.Endpoint+"/") {
			req.Header.Del("Authorization")
		}
		return nil
	}
	return h
}

// Entry is one file of the repository listing.
type Entry struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the LFS object id (the sha256 of the content) for files in
	// LFS; GitOID is the git blob id, the only digest the hub has for small
	// files kept in git.
	SHA256 string `json:"sha256,omitempty"`
	GitOID string `json:"git_oid,omitempty"`
}

type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

var hexRE = regexp.MustCompile(`^[0-9a-f]+$`)

// list returns every file of the repository at the revision, following the
// listing's pagination (a Link header with rel="next"), as huggingface_hub's
// list_repo_tree does.
func (h *hub) list(ctx context.Context) ([]Entry, error) {
	next := fmt.Sprintf("%s/api/models/%s/tree/%s?recursive=true&expand=false",
		h.opts.Endpoint, h.opts.Repo, url.PathEscape(h.opts.Revision))
	var out []Entry
	for pages := 0; next != ""; pages++ {
		if pages > 10000 {
			return nil, fmt.Errorf("%w: the tree listing did not end after 10000 pages", ErrProtocol)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, fmt.Errorf("downloader: list %s: %w", h.opts.Repo, err)
		}
		h.authorize(req)
		resp, err := h.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloader: list %s: %w", h.opts.Repo, err)
		}
		if resp.StatusCode != http.StatusOK {
			err := h.statusError(resp, "")
			resp.Body.Close()
			return nil, err
		}
		var page []treeEntry
		err = json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: tree listing of %s: %v", ErrProtocol, h.opts.Repo, err)
		}
		for _, e := range page {
			if e.Type != "file" {
				continue
			}
			if e.Path == "" || e.Size < 0 || strings.HasPrefix(e.Path, "/") || strings.Contains("/"+e.Path+"/", "/../") {
				return nil, fmt.Errorf("%w: tree listing has an unusable path %q", ErrProtocol, e.Path)
			}
			ent := Entry{Path: e.Path, Size: e.Size, GitOID: e.OID}
			if e.LFS != nil {
				if !hexRE.MatchString(e.LFS.OID) || len(e.LFS.OID) != 64 || e.LFS.Size != e.Size {
					return nil, fmt.Errorf("%w: tree listing gives %q an invalid LFS object", ErrProtocol, e.Path)
				}
				ent.SHA256 = e.LFS.OID
			}
			out = append(out, ent)
		}
		next = ""
		if link := nextLink(resp.Header.Get("Link")); link != "" {
			u, err := req.URL.Parse(link) // the hub sends absolute URLs; accept relative ones
			if err != nil {
				return nil, fmt.Errorf("%w: tree listing Link %q: %v", ErrProtocol, link, err)
			}
			next = u.String()
		}
	}
	return out, nil
}

// nextLink returns the rel="next" target of a Link header, or "".
func nextLink(h string) string { return linkRel(h, "next") }

// linkRel returns the target of a Link header with the given rel, or "".
func linkRel(h, rel string) string {
	for _, part := range strings.Split(h, ",") {
		fields := strings.Split(part, ";")
		if len(fields) < 2 {
			continue
		}
		u := strings.TrimSpace(fields[0])
		for _, p := range fields[1:] {
			if strings.ReplaceAll(strings.TrimSpace(p), " ", "") == `rel="`+rel+`"` && strings.HasPrefix(u, "<") && strings.HasSuffix(u, ">") {
				return u[1 : len(u)-1]
			}
		}
	}
	return ""
}

func (h *hub) resolveURL(file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", h.opts.Endpoint, h.opts.Repo, url.PathEscape(h.opts.Revision), strings.Join(segs, "/"))
}

// authorize adds the token to requests for the hub itself; the CDN URLs the
// hub redirects to are signed and must not receive it (Go's client also
// drops Authorization on redirects to another host).
func (h *hub) authorize(req *http.Request) {
	if h.opts.Token != "" && strings.HasPrefix(req.URL.String(), h.opts.Endpoint+"/") {
		req.Header.Set("Authorization", "Bearer "+h.opts.Token)
	}
	req.Header.Set("User-Agent", "deltafin/1 (huggingface_hub compatible)")
}

// openRange starts a GET of [off, end) of file of the given size and returns
// the body positioned at off. The caller closes it.
func (h *hub) openRange(ctx context.Context, file string, size, off, end int64) (io.ReadCloser, error) {
	h.mu.Lock()
	u, cached := h.resolved[file]
	h.mu.Unlock()
	if !cached {
		u = h.resolveURL(file)
	}
	resp, err := h.get(ctx, u, off, end)
	if err != nil {
		return nil, err
	}
	if cached && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized ||
		resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone) {
		// A signed CDN URL expired: ask the hub again.
		resp.Body.Close()
		h.mu.Lock()
		delete(h.resolved, file)
		h.mu.Unlock()
		if resp, err = h.get(ctx, h.resolveURL(file), off, end); err != nil {
			return nil, err
		}
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if err := checkContentRange(resp.Header.Get("Content-Range"), off, end, size); err != nil {
			resp.Body.Close()
			return nil, permanent(fmt.Errorf("%w: %s: %v", ErrProtocol, file, err))
		}
	case http.StatusOK:
		// A server may ignore Range and send the whole file. For a small
		// file skipping to off is cheap; for a shard it would cost gigabytes.
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			resp.Body.Close()
			return nil, permanent(fmt.Errorf("%w: %s: the server sent %d bytes for a %d-byte file", ErrProtocol, file, resp.ContentLength, size))
		}
		if off > 0 && size > maxIgnoredRange {
			resp.Body.Close()
			return nil, permanent(fmt.Errorf("%w: %s: the server ignored the range request bytes=%d-%d", ErrProtocol, file, off, end-1))
		}
		if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("downloader: %s: %w", file, err)
		}
	default:
		err := h.statusError(resp, file)
		resp.Body.Close()
		return nil, err
	}
	h.mu.Lock()
	h.resolved[file] = resp.Request.URL.String()
	h.mu.Unlock()
	return resp.Body, nil
}

// maxIgnoredRange is the largest file whose range requests may be answered
// with the whole file.
const maxIgnoredRange = 64 << 20

func (h *hub) get(ctx context.Context, u string, off, end int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, permanent(fmt.Errorf("downloader: %s: %w", u, err))
	}
	h.authorize(req)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, end-1))
	// identity: the bytes are written at their offsets, so no transparent
	// decompression may change their count.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := h.client.Do(req)
	if err != nil {
		// *url.Error would repeat the URL with its query; keep the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("downloader: GET %s: %w", withoutQuery(req.URL), err)
	}
	return resp, nil
}

// withoutQuery prints a URL without its query: a CDN URL's query is a
// signature that has no place in logs.
func withoutQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

func checkContentRange(v string, off, end, size int64) error {
	var a, b, total int64
	if _, err := fmt.Sscanf(v, "bytes %d-%d/%d", &a, &b, &total); err != nil {
		return fmt.Errorf("Content-Range %q is not bytes a-b/total", v)
	}
	if a != off || b != end-1 || total != size {
		return fmt.Errorf("asked for bytes %d-%d of %d, got Content-Range %q", off, end-1, size, v)
	}
	return nil
}

// statusError turns an HTTP error answer into an error that says what to
// do. 4xx answers are permanent; 5xx and 429 are retried.
func (h *hub) statusError(resp *http.Response, file string) error {
	what := h.opts.Repo + "@" + shortRev(h.opts.Revision)
	if file != "" {
		what += ": " + file
	}
	code := resp.Header.Get("X-Error-Code")
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		var body struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &body) == nil {
			msg = body.Error
		}
	}
	if msg != "" {
		msg = " (hub: " + msg + ")"
	}
	status := strconv.Itoa(resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusUnauthorized && h.opts.Token == "":
		return permanent(fmt.Errorf("%w: %s: this repository needs HF_TOKEN: the hub answered 401%s; set HF_TOKEN to a token of an account that can read it (or it does not exist)", ErrAuth, what, msg))
	case resp.StatusCode == http.StatusUnauthorized:
		return permanent(fmt.Errorf("%w: %s: the hub rejected HF_TOKEN (401)%s; check that the token is valid and can read this repository (or that it exists)", ErrAuth, what, msg))
	case resp.StatusCode == http.StatusForbidden && code == "GatedRepo":
		return permanent(fmt.Errorf("%w: %s: this repository is gated (403)%s; accept its conditions at %s/%s with the account whose HF_TOKEN you use", ErrAuth, what, msg, h.opts.Endpoint, h.opts.Repo))
	case resp.StatusCode == http.StatusForbidden && h.opts.Token == "":
		return permanent(fmt.Errorf("%w: %s: this repository needs HF_TOKEN: the hub answered 403%s", ErrAuth, what, msg))
	case resp.StatusCode == http.StatusForbidden:
		return permanent(fmt.Errorf("%w: %s: HF_TOKEN has no access to this repository (403)%s", ErrAuth, what, msg))
	case resp.StatusCode == http.StatusNotFound && code == "RevisionNotFound":
		return permanent(fmt.Errorf("%w: %s: revision %s does not exist (404)%s; check --revision", ErrNotFound, what, h.opts.Revision, msg))
	case resp.StatusCode == http.StatusNotFound && code == "EntryNotFound":
		return permanent(fmt.Errorf("%w: %s: the file is not in this revision (404)%s", ErrNotFound, what, msg))
	case resp.StatusCode == http.StatusNotFound:
		return permanent(fmt.Errorf("%w: %s: 404%s; check --repo and --revision (a private repository also needs HF_TOKEN)", ErrNotFound, what, msg))
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return permanent(fmt.Errorf("%w: %s: 416 range not satisfiable: the file is shorter than the listing says", ErrProtocol, what))
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return &hubBusyError{
			err:         fmt.Errorf("downloader: %s: hub answered %s%s", what, status, msg),
			after:       retryAfter(resp.Header.Get("Retry-After"), h.now()),
			rateLimited: resp.StatusCode == http.StatusTooManyRequests,
		}
	case resp.StatusCode >= 500:
		return fmt.Errorf("downloader: %s: hub answered %s%s", what, status, msg)
	}
	return permanent(fmt.Errorf("%w: %s: HTTP %s%s", ErrProtocol, what, status, msg))
}

func shortRev(rev string) string {
	if len(rev) == 40 && hexRE.MatchString(rev) {
		return rev[:12]
	}
	return rev
}

// IsCommit reports whether rev is a full commit hash, which pins content.
func IsCommit(rev string) bool { return len(rev) == 40 && hexRE.MatchString(rev) }

// ResolveRevision returns the commit a branch or tag points to now (a
// commit is returned as is, without a request), through
// GET {endpoint}/api/models/{repo}/revision/{rev} as huggingface_hub's
// model_info does. Mirrors are kept per commit, so a branch moving on gives
// a new mirror instead of mixing two revisions in one.
func ResolveRevision(ctx context.Context, opts HubOptions) (string, error) {
	if IsCommit(opts.Revision) {
		return opts.Revision, nil
	}
	h := newHub(opts, 1)
	u := fmt.Sprintf("%s/api/models/%s/revision/%s", h.opts.Endpoint, h.opts.Repo, url.PathEscape(h.opts.Revision))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("downloader: resolve %s: %w", opts.Revision, err)
	}
	h.authorize(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("downloader: resolve %s: %w", opts.Revision, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", h.statusError(resp, "")
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil || !IsCommit(info.SHA) {
		return "", fmt.Errorf("%w: revision %s of %s resolves to no commit", ErrProtocol, opts.Revision, opts.Repo)
	}
	return info.SHA, nil
}
