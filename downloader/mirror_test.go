package downloader

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deltafin/deltafin/checkpoint"
	"github.com/deltafin/deltafin/downloader/hubtest"
	"github.com/stretchr/testify/require"
)

func setup(t *testing.T, ctx context.Context, opts Options, mode Mode) (*Mirror, *Plan) {
	t.Helper()
	m, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	p, err := m.Plan(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Fetch(ctx, p, p.Work(mode)))
	return m, p
}

func TestStreamThenFull(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, p := setup(t, ctx, options(h, dir), Stream)

	// The plan: 4 shards, experts in layers 1..9 with 32 experts each, and
	// the metadata files, without code.
	var shards, meta int
	for _, f := range p.Files {
		if f.Kind == Shard {
			shards++
		} else {
			meta++
		}
	}
	require.Equal(t, 4, shards)
	require.Equal(t, 5, meta) // config, generation_config, index, tokenizer_config, tiktoken.model
	experts := p.Experts()
	require.Len(t, experts, 9*32)
	require.Equal(t, checkpoint.ExpertID{Layer: 1, Expert: 0}, experts[0].ExpertID)

	// Stream: spine and metadata present and identical, no expert byte.
	for _, f := range p.Files {
		src := h.Files[f.Path].Data
		for _, w := range p.Work(Stream) {
			if w.File != f.Path {
				continue
			}
			got := make([]byte, w.Len())
			require.NoError(t, m.ReadAt(ctx, f.Path, got, w.Start))
			require.True(t, bytes.Equal(src[w.Start:w.End], got))
		}
		for _, e := range f.Experts {
			n, err := m.Present(f.Path, e.Start, e.Len())
			require.NoError(t, err)
			require.Zero(t, n, "expert %v fetched in stream mode", e.ExpertID)
		}
	}
	stream, err := m.Totals(p.Work(Stream))
	require.NoError(t, err)
	require.Equal(t, stream.Total, stream.Present)
	full, err := m.Totals(p.Work(Full))
	require.NoError(t, err)
	require.Less(t, full.Present, full.Total)

	// On demand: one expert is one range request.
	e := experts[40]
	before := h.Requests.Load()
	require.NoError(t, m.Ensure(ctx, e.File, e.Start, e.Len()))
	require.Equal(t, before+1, h.Requests.Load())
	n, err := m.Present(e.File, e.Start, e.Len())
	require.NoError(t, err)
	require.Equal(t, e.Len(), n)

	// Upgrade to full, in a new process (a new Mirror on the same directory).
	require.NoError(t, m.Close())
	lists := h.Lists.Load()
	setup(t, ctx, options(h, dir), Full)
	require.Equal(t, lists, h.Lists.Load(), "the saved listing is reused")
	h.RequireIdentical(t, dir)
}

// waitingCtx reports, by closing waiting, the first time a caller waits on
// it: Ensure waits on its context's Done while another caller's request
// for the same bytes is in flight (or while it makes its own request).
type waitingCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitingCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

func TestEnsureCoalescesConcurrentCallers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	e := p.Experts()[7]
	// The first request is held in the hub until the other 7 callers wait.
	arrived, through := make(chan struct{}, 8), make(chan struct{})
	h.SetFault(func(w http.ResponseWriter, r *http.Request, f *fakeFile, start, end int64) bool {
		arrived <- struct{}{}
		<-through
		return false
	})
	before := h.Requests.Load()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	wg.Go(func() { errs[0] = m.Ensure(ctx, e.File, e.Start, e.Len()) })
	<-arrived
	for i := 1; i < len(errs); i++ {
		c := &waitingCtx{Context: ctx, waiting: make(chan struct{})}
		wg.Go(func() { errs[i] = m.Ensure(c, e.File, e.Start, e.Len()) })
		<-c.waiting
	}
	close(through)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, before+1, h.Requests.Load(), "8 callers, one request")
	got := make([]byte, e.Len())
	require.NoError(t, m.ReadAt(ctx, e.File, got, e.Start))
	require.True(t, bytes.Equal(h.Files[e.File].Data[e.Start:e.End], got))
}

func TestEnsureRejectsBadRanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	f := p.Files[len(p.Files)-1]
	for _, tc := range []struct {
		name   string
		file   string
		off, n int64
		want   error
	}{
		{"past the end", f.Path, f.Size - 1, 2, ErrProtocol},
		{"negative offset", f.Path, -1, 2, ErrProtocol},
		{"unknown file", "nope.safetensors", 0, 1, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, m.Ensure(ctx, tc.file, tc.off, tc.n), tc.want)
		})
	}
}

func TestHubErrorsAreExplained(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		setup   func(h *hubtest.Hub, o *Options)
		want    error
		message string
	}{
		{"no token for a private repository", func(h *hubtest.Hub, o *Options) { h.Token = "secret"; o.Token = "" }, ErrAuth, "this repository needs HF_TOKEN"},
		{"wrong token", func(h *hubtest.Hub, o *Options) { h.Token = "secret"; o.Token = "wrong" }, ErrAuth, "the hub rejected HF_TOKEN"},
		{"gated repository", func(h *hubtest.Hub, o *Options) { h.Token, h.Gated = "secret", true; o.Token = "other" }, ErrAuth, "is gated"},
		{"unknown revision", func(h *hubtest.Hub, o *Options) { o.Revision = "0123456789abcdef0123456789abcdef01234567" }, ErrNotFound, "revision 0123456789abcdef0123456789abcdef01234567 does not exist"},
		{"unknown repository", func(h *hubtest.Hub, o *Options) { o.Repo = "moonshotai/Nope" }, ErrNotFound, "check --repo and --revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHub(t)
			opts := options(h, t.TempDir())
			tc.setup(h, &opts)
			m, err := Open(opts)
			require.NoError(t, err)
			defer m.Close()
			_, err = m.Plan(t.Context())
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.message)
			require.Equal(t, int64(0), h.Requests.Load())
		})
	}
}

func TestTokenReachesHubNotCDN(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.Token = "secret"
	dir := t.TempDir()
	setup(t, t.Context(), options(h, dir), Full)
	h.RequireIdentical(t, dir)
}

func TestEntryNotFoundIsPermanent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	f := p.Files[0]
	delete(h.Files, f.Path)
	require.NoError(t, m.forget(mustFile(t, m, f.Path)))
	err := m.Ensure(ctx, f.Path, 0, f.Size)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "not in this revision")
}

func mustFile(t *testing.T, m *Mirror, name string) *fileState {
	fs, err := m.file(name)
	require.NoError(t, err)
	return fs
}

func TestSourceReadsThroughTheMirror(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	e := p.Experts()[100]
	src, err := m.Source(e.File)
	require.NoError(t, err)
	require.Equal(t, int64(len(h.Files[e.File].Data)), src.Size())
	// A read of missing bytes fetches exactly them, once.
	buf := make([]byte, 100)
	before := h.Requests.Load()
	require.NoError(t, src.ReadAt(ctx, buf, e.Start+10))
	require.Equal(t, h.Files[e.File].Data[e.Start+10:e.Start+110], buf)
	require.NoError(t, src.ReadAt(ctx, buf, e.Start+10))
	require.Equal(t, before+1, h.Requests.Load())
	require.ErrorIs(t, src.ReadAt(ctx, buf, src.Size()-50), ErrProtocol)
}

func TestMirrorIsLockedWhileOpen(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, err := Open(options(h, dir))
	require.NoError(t, err)
	_, err = Open(options(h, dir))
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorContains(t, err, "another deltafin process")
	require.NoError(t, m.Close())
	m, err = Open(options(h, dir))
	require.NoError(t, err)
	require.NoError(t, m.Close())
}

func TestLastExpertVerifiesTheShard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	m, p := setup(t, ctx, options(h, t.TempDir()), Stream)
	for _, f := range p.Files {
		if f.Kind == Shard {
			require.Empty(t, mustFile(t, m, f.Path).pres.Verified, "a stream-mode shard has holes: nothing to verify yet")
		}
	}
	// Fetching every expert (not the whole files) completes the shards,
	// which are then verified as a full download is.
	require.NoError(t, m.Fetch(ctx, p, p.ExpertWork(nil)))
	for _, f := range p.Files {
		require.Equal(t, digestOf(f.Entry), mustFile(t, m, f.Path).pres.Verified, f.Path)
		if f.Kind == Shard {
			require.Equal(t, "sha256:"+f.SHA256, digestOf(f.Entry))
		}
	}
}

func TestDamagedMirrorStateIsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newFakeHub(t)
	dir := t.TempDir()
	m, p := setup(t, ctx, options(h, dir), Full)
	require.NoError(t, m.Close())
	var shard File
	for _, f := range p.Files {
		if f.Kind == Shard {
			shard = f
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T)
	}{
		{"shard truncated", func(t *testing.T) { require.NoError(t, os.Truncate(filepath.Join(dir, shard.Path), 100)) }},
		{"shard deleted", func(t *testing.T) { require.NoError(t, os.Remove(filepath.Join(dir, shard.Path))) }},
		{"presence map garbled", func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, metaDir, "presence", shard.Path+".json"), []byte(`{"version":1,"size":5,"ranges":[[0,9]]}`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, shard.Path), make([]byte, shard.Size), 0o644))
		}},
		{"manifest garbled", func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, metaDir, "manifest.json"), []byte(`{`), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage(t)
			m, _ := setup(t, ctx, options(h, dir), Full)
			require.NoError(t, m.Close())
			h.RequireIdentical(t, dir)
		})
	}
}

func TestResolveRevision(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	for _, tc := range []struct {
		name, rev, want string
		err             error
	}{
		{"a commit needs no request", "0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567", nil},
		{"a branch resolves to its commit", "main", hubtest.Revision, nil},
		{"an unknown branch", "nope", "", ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveRevision(t.Context(), HubOptions{Endpoint: h.URL(), Repo: hubtest.Repo, Revision: tc.rev})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
