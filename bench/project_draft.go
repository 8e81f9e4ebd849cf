package bench

import "fmt"

// Drafting in the projection. A verify pass of T positions reads the
// streamed spine once and the union of its positions' experts, which grows
// by a share g of a position's experts per further position (the experts
// not already chosen: about 69% for K3's consecutive tokens, docs/MODEL.md
// §10), and computes every position one row at a time (each row has a
// decode step's bits, so the compute is T times a step's). It gives
// 1 + a + … + a^(T−1) tokens on average at a per-draft acceptance a:
//
//	disk(T)    = max((S + X·(1 + (T−1)·g)) ÷ all drives, S ÷ the mirror's drive)
//	compute(T) = T · (spine + experts compute of a step)
//	s/token    = max(disk(T), compute(T)) ÷ Σ_{i<T} a^i     (serial: the sum)
//
// with S the streamed spine bytes and X the expert bytes from disk per
// token of the plan. T = 0 picks the T of 1..DraftMaxT with the least
// s/token.

// DraftMaxT is the most positions a projected verify pass holds (the
// engine's 7 drafted tokens and the pending one).
const DraftMaxT = 8

// DraftOptions are the drafting figures a projection assumes.
type DraftOptions struct {
	Accept float64 // a, 0 to 1
	T      int     // positions per pass; 0: the best
	Growth float64 // g; 0: 0.69
}

// DraftProjection is a Projection with drafting.
type DraftProjection struct {
	Accept        float64 `json:"accept"`
	Growth        float64 `json:"union_growth"`
	T             int     `json:"positions_per_pass"`
	TokensPerPass float64 `json:"tokens_per_pass"`
	DiskBytes     float64 `json:"disk_bytes_per_pass"`
	DiskSeconds   float64 `json:"disk_s_per_pass"`
	Compute       float64 `json:"compute_s_per_pass"`
	Overlapped    float64 `json:"s_per_token"`
	Serial        float64 `json:"serial_s_per_token"`
	// Speedup is the plain projection's s/token ÷ this one's.
	Speedup float64 `json:"speedup"`
}

// ProjectDraft adds drafting to p.
func ProjectDraft(p Projection, d DraftOptions) (DraftProjection, error) {
	if !(d.Accept >= 0 && d.Accept <= 1) || d.T < 0 || d.T > DraftMaxT || !(d.Growth >= 0 && d.Growth <= 1) {
		return DraftProjection{}, fmt.Errorf("bench: drafting: acceptance %g (0 to 1), T %d (0 to %d), union growth %g (0 to 1)", d.Accept, d.T, DraftMaxT, d.Growth)
	}
	if d.Growth == 0 {
		d.Growth = 0.69
	}
	if d.T > 0 {
		return draftAt(p, d, d.T), nil
	}
	best := draftAt(p, d, 1)
	for T := 2; T <= DraftMaxT; T++ {
		if q := draftAt(p, d, T); q.Overlapped < best.Overlapped {
			best = q
		}
	}
	return best, nil
}

func draftAt(p Projection, d DraftOptions, T int) DraftProjection {
	var sum float64
	for _, g := range p.DriveGBps {
		sum += g
	}
	S, X := float64(p.Plan.StreamedSpineBytes), float64(p.Plan.ExpertBytesPerToken)
	q := DraftProjection{Accept: d.Accept, Growth: d.Growth, T: T}
	q.DiskBytes = S + X*(1+float64(T-1)*d.Growth)
	q.DiskSeconds = max(q.DiskBytes/(sum*1e9), S/(p.DriveGBps[0]*1e9))
	q.Compute = float64(T) * p.ComputeSeconds()
	for i, a := 0, 1.0; i < T; i, a = i+1, a*d.Accept {
		q.TokensPerPass += a
	}
	q.Overlapped = max(q.DiskSeconds, q.Compute) / q.TokensPerPass
	q.Serial = (q.DiskSeconds + q.Compute) / q.TokensPerPass
	q.Speedup = p.Overlapped / q.Overlapped
	return q
}

// OriginalM1Max is the original Deltafin's measured chat decode of K3 on
// the 64 GB M1 Max without and with its EAGLE-3.1 drafter (byte-identical
// output), s/token: what the projection is set beside.
var OriginalM1Max = [2]float64{11.38, 5.62}
