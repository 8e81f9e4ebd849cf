package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/deltafin/deltafin/chat"
)

// BenchmarkServerOverhead compares a completion through the HTTP server
// (validation, tokenizing, the gate, decoding, JSON over loopback) with the
// same generation run directly on the engine, in the same run, and reports
// the ratio: the server's cost over the engine's.
func BenchmarkServerOverhead(b *testing.B) {
	_, base := startServer(b, func(o *Options) { o.MemoEntries = 0 })
	prompt := []int{1008, 10, 318, 383, 387}
	const n = 16
	body := fmt.Sprintf(`{"model":%q,"temperature":0,"prompt":%s,"max_tokens":%d}`, tinyID, "[1008,10,318,383,387]", n)
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

// BenchmarkResponsesOverhead is BenchmarkServerOverhead for a stored
// response (the job queue, the renderer, the store's writes): its engine
// time against the same chat turn run directly.
func BenchmarkResponsesOverhead(b *testing.B) {
	_, withSt := withStore(b)
	_, base := startServer(b, func(o *Options) { withSt(o); o.MemoEntries = 0 })
	_, tok := tiny(b)
	segs, err := chat.Render([]chat.Message{{Role: "user", Content: "Hello there"}}, chat.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	prompt := chat.Tokenize(tok, segs)
	const n = 16
	body := fmt.Sprintf(`{"model":%q,"temperature":0,"input":"Hello there","max_output_tokens":%d}`, tinyID, n)
	var engineTime, served time.Duration
	for b.Loop() {
		t0 := time.Now()
		direct(b, prompt, n, chat.StopTokens(tok))
		t1 := time.Now()
		code, _, resp := post(b, base+"/v1/responses", body)
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
