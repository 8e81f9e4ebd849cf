package engine

import (
	"context"
	"runtime"
	"sync"
)

// Attention heads are independent, and the per-head loops of the delta rule
// are plain Go: at K3's 96 heads they are worth spreading over the cores.
// Each head's arithmetic is unchanged, so the results are bit-identical
// whatever the number of workers. (MLA's softmax attention runs in
// kernels.Attention, which splits heads × query blocks the same way.)

// minHeadWork is the work (in multiply-adds, roughly) below which a layer's
// heads run on the caller's goroutine: the tiny test models stay serial.
const minHeadWork = 1 << 18

// headSplit is how a model spreads a layer's heads over the cores; the
// zero value uses them all. serial forces one worker: the tests' and
// benchmarks' baseline, set on their own model.
type headSplit struct{ serial bool }

// workers is the number of goroutines for work multiply-adds.
func (h headSplit) workers(work int) int {
	if work < minHeadWork || h.serial {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// ctxBlock is how many tokens of the delta rule run between two checks of
// the context (attention checks before every block of query rows): a cancelled request frees the engine within one block of one
// layer, not at the end of a layer pass that takes minutes on a long prompt.
const ctxBlock = 64

// stopped reports, without blocking, whether ctx has ended.
func stopped(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// parallelHeads calls f over [0, nh) split into at most workers ranges.
func parallelHeads(nh, workers int, f func(h0, h1 int)) {
	workers = max(1, min(workers, nh))
	if workers == 1 {
		f(0, nh)
		return
	}
	var wg sync.WaitGroup
	per := (nh + workers - 1) / workers
	for h0 := 0; h0 < nh; h0 += per {
		wg.Add(1)
		go func(h0, h1 int) {
			defer wg.Done()
			f(h0, h1)
		}(h0, min(h0+per, nh))
	}
	wg.Wait()
}
