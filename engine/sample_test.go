package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// chi2Crit001 is the chi-square distribution's upper 0.001 quantile for
// dof degrees of freedom (1 to 120), from the regularised incomplete gamma
// function: a correct sampler exceeds it once in a thousand seeded runs,
// and the seeds are fixed, so the test is deterministic.
func chi2Crit001(t *testing.T, dof int) float64 {
	table := []float64{
		0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877,
		29.588, 31.264, 32.909, 34.528, 36.123, 37.697, 39.252, 40.790, 42.312, 43.820,
		45.315, 46.797, 48.268, 49.728, 51.179, 52.620, 54.052, 55.476, 56.892, 58.301,
		59.703, 61.098, 62.487, 63.870, 65.247, 66.619, 67.985, 69.346, 70.703, 72.055,
		73.402, 74.745, 76.084, 77.419, 78.750, 80.077, 81.400, 82.720, 84.037, 85.351,
		86.661, 87.968, 89.272, 90.573, 91.872, 93.168, 94.461, 95.751, 97.039, 98.324,
		99.607, 100.888, 102.166, 103.442, 104.716, 105.988, 107.258, 108.526, 109.791, 111.055,
		112.317, 113.577, 114.835, 116.092, 117.346, 118.599, 119.850, 121.100, 122.348, 123.594,
		124.839, 126.083, 127.324, 128.565, 129.804, 131.041, 132.277, 133.512, 134.745, 135.978,
		137.208, 138.438, 139.666, 140.893, 142.119, 143.344, 144.567, 145.789, 147.010, 148.230,
		149.449, 150.667, 151.884, 153.099, 154.314, 155.528, 156.740, 157.952, 159.162, 160.372,
		161.581, 162.788, 163.995, 165.201, 166.406, 167.610, 168.813, 170.016, 171.217, 172.418,
		173.617,
	}
	require.True(t, dof >= 1 && dof < len(table), "no critical value for %d degrees of freedom", dof)
	return table[dof]
}

// exactDist is the distribution the sampler must draw from, written from
// the definitions independently of sample.go: the normalised softmax of
// logits/T in float64, then top_k, top_p and min_p on probabilities
// renormalised after each cut, most likely first, ties by token id.
func exactDist(logits []float32, o Sampling) []float64 {
	n := len(logits)
	p := make([]float64, n)
	hi := math.Inf(-1)
	for _, l := range logits {
		hi = math.Max(hi, float64(l))
	}
	sum := 0.0
	for i, l := range logits {
		p[i] = math.Exp((float64(l) - hi) / o.Temperature)
		sum += p[i]
	}
	ids := make([]int, n)
	for i := range p {
		p[i] /= sum
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return p[ids[a]] > p[ids[b]] }) // stable: ids ascending on ties
	keep := ids
	renorm := func() {
		s := 0.0
		for _, i := range keep {
			s += p[i]
		}
		for _, i := range keep {
			p[i] /= s
		}
	}
	if o.TopK > 0 && o.TopK < n {
		keep = keep[:o.TopK]
		renorm()
	}
	if o.TopP > 0 && o.TopP < 1 {
		c := 0.0
		for k, i := range keep {
			c += p[i]
			if c >= o.TopP {
				keep = keep[:k+1]
				break
			}
		}
		renorm()
	}
	if o.MinP > 0 {
		top := p[keep[0]]
		var kept []int
		for _, i := range keep {
			if p[i] >= o.MinP*top {
				kept = append(kept, i)
			}
		}
		keep = kept
		renorm()
	}
	out := make([]float64, n)
	for _, i := range keep {
		out[i] = p[i]
	}
	return out
}

// chiSquare compares counts of draws with the expected probabilities,
// pooling the categories expected fewer than 5 times into one; it returns
// the statistic and the degrees of freedom.
func chiSquare(counts []int, want []float64, draws int) (float64, int) {
	var stat, poolE float64
	poolO, bins := 0, 0
	for i, p := range want {
		e := p * float64(draws)
		if e < 5 {
			poolE += e
			poolO += counts[i]
			continue
		}
		d := float64(counts[i]) - e
		stat += d * d / e
		bins++
	}
	if poolE > 0 {
		d := float64(poolO) - poolE
		stat += d * d / poolE
		bins++
	}
	return stat, bins - 1
}

// TestSamplerChiSquare draws thousands of seeded tokens from fixed logits
// under several settings and tests the counts against the exact
// distribution with Pearson's chi-square at p = 0.001. A token the
// settings exclude must never be drawn. The same counts are also tested
// against a neighbouring wrong distribution, which they must fail: the
// test can tell a subtly wrong sampler from a right one.
func TestSamplerChiSquare(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 4))
	wide := make([]float32, 200) // a vocabulary-like row: a few likely tokens, a long tail
	for i := range wide {
		wide[i] = float32(rng.NormFloat64() * 2.5)
	}
	for _, tc := range []struct {
		name   string
		logits []float32
		opts   Sampling
		wrong  Sampling // a neighbouring setting the draws must not fit
	}{
		{"softmax T=1", []float32{2, 1, 0.5, 0, -1, 3, 1, -2}, Sampling{Temperature: 1}, Sampling{Temperature: 1.15}},
		{"T=0.7 top_k=5", []float32{0.3, 1.2, -0.4, 2.2, 1.9, 0.1, 1.2, -1, 0.8, 1.5, 0, 0.2}, Sampling{Temperature: 0.7, TopK: 5}, Sampling{Temperature: 0.7, TopK: 6}},
		{"top_p=0.8 with ties at the edge", []float32{1, 2, 2, 0.5, 1, 1, 0, -0.5, 2}, Sampling{Temperature: 1, TopP: 0.8}, Sampling{Temperature: 1, TopP: 0.9}},
		{"T=1.3 min_p=0.1", []float32{4, 3.5, 2, 1, 0.5, 0, -1, 3, 2.7, 1.8}, Sampling{Temperature: 1.3, MinP: 0.1}, Sampling{Temperature: 1.3, MinP: 0.05}},
		{"model card on 200 tokens", wide, Sampling{Temperature: 1, TopP: 0.95}, Sampling{Temperature: 1, TopP: 1}},
		{"everything at once", wide, Sampling{Temperature: 0.8, TopK: 30, TopP: 0.9, MinP: 0.05}, Sampling{Temperature: 0.8, TopK: 30, TopP: 0.9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const draws = 20000
			want := exactDist(tc.logits, tc.opts)
			counts := make([]int, len(tc.logits))
			for i := range draws {
				// Positions and seeds both vary: the stream is keyed by both.
				z := &sampler{opts: tc.opts}
				z.opts.Seed = uint64(1 + i/1000)
				counts[z.pick(tc.logits, i%1000)]++
			}
			for i, p := range want {
				if p == 0 {
					require.Zero(t, counts[i], "token %d is excluded but was drawn", i)
				}
			}
			stat, dof := chiSquare(counts, want, draws)
			require.Greater(t, dof, 0)
			crit := chi2Crit001(t, dof)
			t.Logf("%s: chi-square %.2f, dof %d, critical %.3f (p=0.001), %d draws", tc.name, stat, dof, crit, draws)
			require.Less(t, stat, crit, "the draws do not fit the exact distribution")
			wrongStat, wrongDof := chiSquare(counts, exactDist(tc.logits, tc.wrong), draws)
			require.Greater(t, wrongStat, chi2Crit001(t, wrongDof), "the draws also fit a wrong distribution: the test has no power")
		})
	}
}

// TestUniform: the stream is a pure function of (seed, position), in
// [0,1), different at neighbouring positions and seeds, and uniform
// across seeds at one position (chi-square over 20 bins).
func TestUniform(t *testing.T) {
	t.Parallel()
	require.Equal(t, uniform(42, 7), uniform(42, 7))
	require.NotEqual(t, uniform(42, 7), uniform(42, 8))
	require.NotEqual(t, uniform(42, 7), uniform(43, 7))
	const n, bins = 20000, 20
	counts := make([]int, bins)
	want := make([]float64, bins)
	for i := range bins {
		want[i] = 1.0 / bins
	}
	for s := range n {
		u := uniform(uint64(s), 1000)
		require.True(t, u >= 0 && u < 1, "u = %v", u)
		counts[int(u*bins)]++
	}
	stat, dof := chiSquare(counts, want, n)
	t.Logf("uniform across seeds: chi-square %.2f, dof %d, critical %.3f", stat, dof, chi2Crit001(t, dof))
	require.Less(t, stat, chi2Crit001(t, dof))
}

// TestSamplerGreedy: temperature 0 and top_k 1 are argmax with its tie
// rule (the first index), whatever the other settings and the seed.
func TestSamplerGreedy(t *testing.T) {
	t.Parallel()
	row := []float32{0.5, 3, -1, 3, 2}
	for _, o := range []Sampling{{}, {TopP: 0.3, Seed: 9}, {Temperature: 1.5, TopK: 1, Seed: 77}, {MinP: 0.9}} {
		for pos := range 50 {
			require.Equal(t, 1, (&sampler{opts: o}).pick(row, pos), "%+v", o)
		}
	}
	// A tiny temperature concentrates on the maxima, ties included.
	seen := map[int]bool{}
	for pos := range 200 {
		seen[(&sampler{opts: Sampling{Temperature: 1e-6, Seed: 3}}).pick(row, pos)] = true
	}
	require.Equal(t, map[int]bool{1: true, 3: true}, seen)
}

func TestSamplingCheck(t *testing.T) {
	t.Parallel()
	require.NoError(t, Sampling{}.Check())
	require.NoError(t, Sampling{Temperature: 2, TopP: 1, TopK: 40, MinP: 1}.Check())
	for _, o := range []Sampling{{Temperature: -0.1}, {Temperature: 2.5}, {Temperature: math.NaN()},
		{TopP: 1.1}, {TopP: -1}, {TopK: -1}, {MinP: 1.5}, {MinP: -0.1}} {
		require.ErrorIs(t, o.Check(), ErrSampling, "%+v", o)
	}
	_, err := openK3Tiny(t).NewSession().Generate(t.Context(), []int{1, 2}, GenerateOptions{MaxNew: 2, Sampling: Sampling{TopK: -3}}, collect(new([]int)))
	require.ErrorIs(t, err, ErrSampling)
}

func TestDefaultSampling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := defaultSampling(dir)
	require.NoError(t, err)
	require.Equal(t, Sampling{Temperature: 1, TopP: 0.95}, s, "no file: the model card")
	s, err = defaultSampling(filepath.Join("..", "testdata", "k3-tiny"))
	require.NoError(t, err)
	require.Equal(t, Sampling{Temperature: 1, TopP: 0.95}, s, "do_sample alone changes nothing")
	gc := filepath.Join(dir, "generation_config.json")
	require.NoError(t, os.WriteFile(gc, []byte(`{"temperature": 0.6, "top_k": 20, "do_sample": true}`), 0o644))
	s, err = defaultSampling(dir)
	require.NoError(t, err)
	require.Equal(t, Sampling{Temperature: 0.6, TopP: 0.95, TopK: 20}, s)
	require.NoError(t, os.WriteFile(gc, []byte(`{"top_p": 7}`), 0o644))
	_, err = defaultSampling(dir)
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "top_p")
}

// TestSampledDecoding runs k3-tiny with sampling over many seeds: the
// same seed gives the same tokens with and without speculation, and when
// the conversation is run again from a prefix of its output in a fresh
// session (a resumed job) except at a near-tie draw (requireNearTie);
// on every CPU backend; temperature 0 picks each row's argmax, as
// greedy decoding does; different seeds give different outputs.
func TestSampledDecoding(t *testing.T) {
	t.Parallel()
	eachCPUBackend(t, testSampledDecoding)
}

func testSampledDecoding(t *testing.T, be kernels.Backend) {
	dir := filepath.Join("..", "testdata", "k3-tiny")
	plain, err := Open(t.Context(), dir, Options{NoSpec: true, Backend: be})
	require.NoError(t, err)
	defer plain.Close()
	spec, err := Open(t.Context(), dir, Options{Backend: be})
	require.NoError(t, err)
	defer spec.Close()
	var prompt []int
	for range 4 {
		prompt = append(prompt, 5, 6, 7)
	}
	outputs := map[string]bool{}
	const seeds = 24
	for seed := range uint64(seeds) {
		for _, o := range []Sampling{{Temperature: 0.3, Seed: seed}, {Temperature: 1, TopP: 0.95, Seed: seed}, {Temperature: 0.7, TopK: 8, MinP: 0.05, Seed: seed}} {
			want, _ := sampleRun(t, plain, nil, prompt, o, 24)
			got, _ := sampleRun(t, spec, nil, prompt, o, 24)
			require.Equal(t, want, got, "%+v: speculation changed the tokens", o)
			cut := int(seed % 20)
			resumed := append(append([]int(nil), prompt...), want[:cut]...)
			rest, _ := sampleRun(t, spec, nil, resumed, o, 24-cut)
			if !slices.Equal(want[cut:], rest) {
				requireNearTie(t, plain, prompt, resumed, want, rest, o)
			}
			outputs[fmt.Sprint(o.TopK, want)] = true
		}
	}
	require.Greater(t, len(outputs), seeds, "seeds give different outputs")

	// Temperature 0: each token is its row's argmax, with any seed.
	s := spec.NewSession()
	var toks []int
	var rows [][]float32
	_, err = s.Generate(t.Context(), prompt, GenerateOptions{MaxNew: 16, Sampling: Sampling{TopP: 0.5, Seed: 11},
		Logits: func(r []float32) error { rows = append(rows, append([]float32(nil), r...)); return nil }}, collect(&toks))
	require.NoError(t, err)
	steps := rows[len(prompt)-1:]
	for i, tok := range toks {
		require.Equal(t, argmax(steps[i]), tok, "token %d", i)
	}
	greedy, _ := sampleRun(t, plain, nil, prompt, Sampling{}, 16)
	require.Equal(t, greedy, toks)
}

// TestSampledSpeculation makes the drafter guess under sampling: the
// random-weight fixture seldom repeats itself, so the session's history
// (which only the drafter reads) starts with the conversation the
// no-speculation run produced, every fifth output token altered. The
// drafter then guesses the sampled token most of the time and a wrong one
// at the altered places: guesses are accepted and rejected, and the
// tokens are those decoded without speculation.
func TestSampledSpeculation(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	plain, err := Open(t.Context(), dir, Options{NoSpec: true})
	require.NoError(t, err)
	defer plain.Close()
	spec, err := Open(t.Context(), dir, Options{})
	require.NoError(t, err)
	defer spec.Close()
	V := spec.Info().VocabSize
	prompt := []int{3, 14, 15, 92, 65, 35, 89, 79}
	var total SpecStats
	for seed := range uint64(8) {
		o := Sampling{Temperature: 0.9, TopP: 0.95, Seed: seed}
		want, _ := sampleRun(t, plain, nil, prompt, o, 40)
		fake := append([]int(nil), prompt...)
		for i, tok := range want {
			if i%5 == 4 {
				tok = (tok + 1) % V
			}
			fake = append(fake, tok)
		}
		got, st := sampleRun(t, spec, fake, prompt, o, 40)
		require.Equal(t, want, got, "seed %d", seed)
		total.Passes += st.Passes
		total.Accepted += st.Accepted
	}
	t.Logf("sampled speculation: %d passes, %d accepted", total.Passes, total.Accepted)
	require.Positive(t, total.Accepted, "guesses accepted under sampling")
	require.Less(t, total.Accepted, total.Passes, "guesses rejected under sampling")
}

// requireNearTie explains a resumed run that left the uninterrupted one:
// the resumed run prefills the earlier output in one batch, whose products
// sum in another order than the decode steps' (spec.go's rowByRow), so
// its rows, and those of every step after it, differ from the
// uninterrupted run's by rounding (TestPrefillEqualsPerTokenPath bounds
// it). Nothing else parts them: with the products one row at a time
// (rowByRow) a prefill gives the decode steps' logits bit for bit on every
// CPU backend (measured on k3-tiny with the short conv kernel), and on
// ref, whose products are per row, they never part. A draw whose uniform lies
// that close to a boundary between two tokens may then land on either.
// It passes only when the first differing token is such a draw: the two
// rows at that position differ by no more than the prefill's own
// batched-against-per-token distance allows (selfTol of it, as the
// exactness tests derive their bounds), and the sampler picks each run's
// token from its own row, so nothing but those rounding-sized differences
// parted them.
func requireNearTie(t *testing.T, m *Model, prompt, resumed, want, rest []int, o Sampling) {
	t.Helper()
	cut := len(resumed) - len(prompt)
	j := 0
	for j < len(rest) && rest[j] == want[cut+j] {
		j++
	}
	require.Less(t, j, len(rest))
	rows := func(p []int, n int) [][]float32 {
		var r [][]float32
		_, err := m.NewSession().Generate(t.Context(), p, GenerateOptions{MaxNew: n, Sampling: o,
			Logits: func(row []float32) error { r = append(r, append([]float32(nil), row...)); return nil }}, func(int) error { return nil })
		require.NoError(t, err)
		return r
	}
	a := rows(prompt, cut+j+1)[len(prompt)-1+cut+j]
	b := rows(resumed, j+1)[len(resumed)-1+j]
	// The prefill's own rounding: the resumed prompt batched against one
	// token at a time, in this model's kernels.
	batched, err := m.NewSession().Forward(t.Context(), resumed, true)
	require.NoError(t, err)
	s := m.NewSession()
	e := 0.0
	for i, id := range resumed {
		row, err := s.Forward(t.Context(), []int{id}, false)
		require.NoError(t, err)
		d, _ := maxAbsDiff(row[0], batched[i])
		e = max(e, d)
	}
	d, _ := maxAbsDiff(a, b)
	pos := len(resumed) + j
	z := &sampler{opts: o}
	t.Logf("%+v: resumed after %d tokens parts at output %d (%d vs %d): rows %.3g apart, prefill batched vs per token %.3g",
		o, cut, cut+j, want[cut+j], rest[j], d, e)
	require.Equal(t, want[cut+j], z.pick(a, pos), "%+v: the uninterrupted row's draw", o)
	require.Equal(t, rest[j], z.pick(b, pos), "%+v: the resumed row's draw", o)
	require.LessOrEqual(t, d, selfTol(e), "%+v: resumed after %d tokens: rows further apart than rounding", o, cut)
}

// sampleRun generates n tokens from prompt in a fresh session whose
// drafting history starts with hist.
func sampleRun(t *testing.T, m *Model, hist, prompt []int, o Sampling, n int) ([]int, SpecStats) {
	t.Helper()
	s := m.NewSession()
	s.hist = append(s.hist, hist...)
	var toks []int
	_, err := s.Generate(t.Context(), prompt, GenerateOptions{MaxNew: n, Sampling: o}, collect(&toks))
	require.NoError(t, err)
	return toks, s.SpecStats()
}

// BenchmarkSampleK3Vocab picks one token from a row of K3's 163,840
// logits with the model card's sampling, and reports it as a multiple of
// the argmax over the same row measured in the same run (greedy's whole
// cost): the price of sampling per decoded token.
func BenchmarkSampleK3Vocab(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]float32, 163840)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 3)
	}
	z := &sampler{opts: Sampling{Temperature: 1, TopP: 0.95, Seed: 5}}
	const argmaxRuns = 64
	start := time.Now()
	for range argmaxRuns {
		argmax(row)
	}
	perArgmax := time.Since(start) / argmaxRuns
	b.ResetTimer()
	for i := range b.N {
		z.pick(row, i)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(perArgmax), "x-argmax")
}

// drawFullSort is sample.go's steps 2–7 the plain way: every candidate
// sorted, no threshold.
func drawFullSort(row []float32, o Sampling, u float64) int {
	hi := float64(row[argmax(row)])
	w := make([]float64, len(row))
	var c []candidate
	for i, l := range row {
		if x := math.Exp((float64(l) - hi) / o.Temperature); x > 0 {
			w[i] = x
			c = append(c, candidate{i, x})
		}
	}
	sort.Slice(c, func(a, b int) bool { return before(c[a], c[b]) })
	if o.TopK > 0 && o.TopK < len(c) {
		c = c[:o.TopK]
	}
	if o.TopP > 0 && o.TopP < 1 {
		kept := make([]bool, len(w))
		for _, x := range c {
			kept[x.id] = true
		}
		total := 0.0
		for i := range w { // id order
			if kept[i] {
				total += w[i]
			}
		}
		sum := 0.0
		for k, x := range c {
			sum += x.w
			if sum >= o.TopP*total {
				c = c[:k+1]
				break
			}
		}
	}
	return pickFrom(c, o.MinP, u)
}

// TestDrawMatchesFullSort: the thresholded sort picks exactly the token
// the full sort does, on rows peaked and flat, with ties, at every
// setting, including a K3-sized row.
func TestDrawMatchesFullSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	settings := []Sampling{{Temperature: 1}, {Temperature: 1, TopP: 0.95}, {Temperature: 0.6, TopK: 40}, {Temperature: 1.7, TopP: 0.5, TopK: 3},
		{Temperature: 1, MinP: 0.05}, {Temperature: 1, MinP: 1e-7}, {Temperature: 2, TopP: 0.999}, {Temperature: 0.05, TopP: 0.9, MinP: 0.3}, {Temperature: 1, TopK: 1000}}
	for n := range 120 {
		V := 1 + rng.IntN(2000)
		if n == 0 {
			V = 163840
		}
		row := make([]float32, V)
		scale := []float64{0.01, 1, 4, 30}[n%4]
		for i := range row {
			row[i] = float32(rng.NormFloat64() * scale)
			if n%3 == 0 {
				row[i] = float32(math.Round(float64(row[i]))) // many ties
			}
		}
		z := &sampler{}
		for _, o := range settings {
			z.opts = o
			for range 4 {
				u := rng.Float64()
				require.Equal(t, drawFullSort(row, o, u), z.draw(row, u), "V=%d scale=%g %+v u=%v", V, scale, o, u)
			}
		}
	}
}
