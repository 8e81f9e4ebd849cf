package engine

import (
	"fmt"
	"math"
)

// The drafter's rotary embedding. Unlike K3's own MLA (NoPE), the EAGLE-3
// drafter's layer is vLLM's DeepseekV2MLAAttention, which rotates the
// qk_rope_head_dim slice of the query and the shared rotary key with
// DeepSeek's YaRN (DeepseekScalingRotaryEmbedding) in GPT-J style: adjacent
// pairs (x[2i], x[2i+1]) turn by the angle pos·inv_freq[i].

// yarnRope is the rotary schedule; yarn false is plain RoPE.
type yarnRope struct {
	yarn                 bool
	dim                  int // qk_rope_head_dim
	theta                float64
	factor               float64
	origMax              int
	betaFast, betaSlow   float64
	mscale, mscaleAllDim float64
	attnFactor           float64
	invFreq              []float64 // [dim/2], built by freqs
	cosSinScale          float64   // YaRN's mscale on cos and sin
}

// parseYarn reads rope_theta and rope_scaling (or the newer
// rope_parameters) with vLLM's defaults for the fields left out.
func parseYarn(r rawDrafterConfig) (yarnRope, error) {
	y := yarnRope{theta: 10000, betaFast: 32, betaSlow: 1, mscale: 1, mscaleAllDim: 0, attnFactor: 1}
	if r.RopeTheta != nil {
		y.theta = *r.RopeTheta
	}
	s := r.RopeScaling
	if s == nil {
		s = r.RopeParameters
	}
	if s != nil {
		if s.Theta != nil {
			y.theta = *s.Theta
		}
		kind := s.RopeType
		if kind == "" {
			kind = s.Type
		}
		switch kind {
		case "yarn", "deepseek_yarn":
			y.yarn = true
		case "default", "":
		default:
			return y, fmt.Errorf("rope type %q: only yarn and default are supported", kind)
		}
		if y.yarn {
			y.factor, y.origMax = s.Factor, s.OrigMax
			if s.BetaFast != nil {
				y.betaFast = *s.BetaFast
			}
			if s.BetaSlow != nil {
				y.betaSlow = *s.BetaSlow
			}
			if s.Mscale != nil {
				y.mscale = *s.Mscale
			}
			if s.MscaleAllDim != nil {
				y.mscaleAllDim = *s.MscaleAllDim
			}
			if s.AttentionFctr != nil {
				y.attnFactor = *s.AttentionFctr
			}
			if !(y.factor >= 1) || y.origMax <= 0 || !(y.betaFast > 0) || !(y.betaSlow > 0) {
				return y, fmt.Errorf("rope_scaling yarn needs factor ≥ 1, original_max_position_embeddings > 0 and positive betas (got %v, %d, %v, %v)",
					y.factor, y.origMax, y.betaFast, y.betaSlow)
			}
		}
	}
	if !(y.theta > 1) || math.IsInf(y.theta, 0) {
		return y, fmt.Errorf("rope_theta %v is not above 1", y.theta)
	}
	return y, nil
}

// yarnMscale is DeepSeek's yarn_get_mscale: 0.1·m·ln(s) + 1 above s = 1.
func yarnMscale(scale, m float64) float64 {
	if scale <= 1 {
		return 1
	}
	return 0.1*m*math.Log(scale) + 1
}

// freqs builds invFreq and the cos/sin scale, as vLLM's
// DeepseekScalingRotaryEmbedding._compute_inv_freq does (extrapolation
// factor 1): the low-frequency pairs are interpolated by the factor, the
// high-frequency ones kept, and a linear ramp between the correction
// dimensions of beta_fast and beta_slow blends the two.
func (y *yarnRope) freqs() {
	half := y.dim / 2
	y.invFreq = make([]float64, half)
	y.cosSinScale = 1
	for i := range half {
		y.invFreq[i] = 1 / math.Pow(y.theta, float64(2*i)/float64(y.dim))
	}
	if !y.yarn {
		return
	}
	corr := func(rot float64) float64 {
		return float64(y.dim) * math.Log(float64(y.origMax)/(rot*2*math.Pi)) / (2 * math.Log(y.theta))
	}
	low := max(math.Floor(corr(y.betaFast)), 0)
	high := min(math.Ceil(corr(y.betaSlow)), float64(y.dim-1))
	if low == high {
		high += 0.001
	}
	for i, extra := range y.invFreq {
		ramp := min(max((float64(i)-low)/(high-low), 0), 1)
		mask := 1 - ramp // 1: keep the extrapolated (original) frequency
		y.invFreq[i] = extra/y.factor*(1-mask) + extra*mask
	}
	y.cosSinScale = yarnMscale(y.factor, y.mscale) / yarnMscale(y.factor, y.mscaleAllDim) * y.attnFactor
}

// rotate turns x ([dim], adjacent pairs) to position pos in place.
func (y *yarnRope) rotate(x []float32, pos int) {
	for i, f := range y.invFreq {
		// vLLM's cache is fp32: pos·inv_freq rounded to fp32, then cos.
		a := float64(float32(float64(pos)) * float32(f))
		cs, sn := float32(math.Cos(a)*y.cosSinScale), float32(math.Sin(a)*y.cosSinScale)
		e, o := x[2*i], x[2*i+1]
		x[2*i] = e*cs - o*sn
		x[2*i+1] = o*cs + e*sn
	}
}
