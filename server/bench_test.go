package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkServerOverhead compares a completion through the HTTP server
// (validation, tokenizing, the gate, decoding, JSON over loopback) with the
// same generation run directly on the engine, in the same run, and reports
// the ratio: the server's cost over the engine's.
func BenchmarkServerOverhead(b *testing.B) {
	_, base := startServer(b, func(o *Options) { o.MemoEntries = 0 })
	prompt := []int{1008, 10, 318, 383, 387}
	const n = 16
	body := fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":%d}`, tinyID, "[1008,10,318,383,387]", n)
	var engineTime, served time.Duration
	for b.Loop() {
		t0 := time.Now()
		direct(b, prompt, n, nil)
		t1 := time.Now()
		code, _, resp := post(b, base+"/v1/completions", body)
		served += time.Since(t1)
		engineTime += t1.Sub(t0)
		if code != http.StatusOK {
			b.Fatalf("status %d: %s", code, resp)
		}
	}
	b.ReportMetric(float64(engineTime.Nanoseconds())/float64(b.N), "direct-ns/op")
	b.ReportMetric(float64(served.Nanoseconds())/float64(b.N), "served-ns/op")
	b.ReportMetric(float64(served)/float64(engineTime), "served/direct")
}
