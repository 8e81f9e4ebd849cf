package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deltafin/deltafin/downloader"
)

// The slice as an installed model: `deltafin setup` leaves a mirror (the
// repository's files at their offsets, .deltafin/manifest.json and a
// presence map per file) that app.OpenModel reads through the mirror's
// Sources, whose Ensure the expert store calls before its direct reads. The
// Mirror runs measure that path over the same bytes as the plain-file runs.

// mirrorRepo and mirrorRevision name the slice's mirror (no hub serves it:
// every byte is present, so nothing is ever fetched).
const (
	mirrorRepo     = "deltafin/bench-slice"
	mirrorRevision = "0000000000000000000000000000000000000000"
)

// installMirror lays the slice in dir out as a full install in
// dir+"-mirror": its files hard-linked (the same bytes on the same disk, no
// copy) and recorded complete by downloader.AdoptComplete. It returns the
// mirror, open; the caller closes it.
func installMirror(dir string) (*downloader.Mirror, error) {
	mdir := dir + "-mirror"
	if err := os.RemoveAll(mdir); err != nil {
		return nil, fmt.Errorf("bench: mirror: %w", err)
	}
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: mirror: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: mirror: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "bench-") || strings.HasSuffix(name, ".jsonl") {
			continue // the slice's own bookkeeping, the runs' heat and traces
		}
		if err := os.Link(filepath.Join(dir, name), filepath.Join(mdir, name)); err != nil {
			return nil, fmt.Errorf("bench: mirror: %w", err)
		}
	}
	opts := downloader.Options{Dir: mdir, HubOptions: downloader.HubOptions{Repo: mirrorRepo, Revision: mirrorRevision},
		AllowUnverified: true} // AdoptComplete hashes nothing
	if err := downloader.AdoptComplete(opts); err != nil {
		return nil, err
	}
	return downloader.Open(opts)
}

// benchMirror runs the engine decode under o.Plan and, with o.Prefill, the
// prompt over the slice installed as a mirror, into r.
func (o SliceBenchOptions) benchMirror(ctx context.Context, r *SliceReport, heat string, logf func(string, ...any)) error {
	m, err := installMirror(o.Dir)
	if err != nil {
		return err
	}
	defer m.Close()
	mo := o
	mo.Dir, mo.open = m.Dir(), m.OpenSource()
	os.Remove(heat) // a fresh histogram, as the plain-file natural run had
	d, err := mo.engineDecode(ctx, o.Plan, heat, "mirror")
	if err != nil {
		return err
	}
	a := r.Bandwidth[0].GBPerSecond
	d.Ratio = d.DiskGBPerSecond / a
	r.MirrorDecode = &d
	logf("(b) decode, engine forward over the slice installed as a mirror (its own plan): %.3f s/token, %.1f MB/token from disk, %.2f GB/s = %.2f of (a); disk idle %.1f%%; cache hits %.0f%%, prefetch hits %.0f%%",
		d.SecondsPerToken, d.DiskBytesPerToken/1e6, d.DiskGBPerSecond, d.Ratio, 100*d.DiskIdle, 100*d.CacheHitRate, 100*d.PrefetchHitRate)
	if o.Prefill > 0 {
		p, err := mo.enginePrefill(ctx, o.Plan)
		if err != nil {
			return err
		}
		r.MirrorPrefill = &p
		logf("prefill, engine forward over the mirror: %d tokens, time to first token %.2f s (%.2f× the reads alone); amplification %.4f; waiting for experts %.2f s, compute %.2f s",
			p.Tokens, p.TimeToFirstToken, p.TTFTRatio, p.ReadAmplification, p.ExpertWait, p.Compute)
	}
	return nil
}
