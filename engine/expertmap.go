package engine

import ()

// ExpertMap is where every routed expert is, for a status page (the web
// page's picture of the experts): plain flags and counts, no weights.
// Cells are [len(Layers), Experts], row-major.
type ExpertMap struct {
	Layers  []int // the MoE layers' numbers, in order
	Experts int   // routed experts per MoE layer
	OnDisk  []bool
	Cached  []bool    // in the RAM expert cache now
	Heat    []float32 // the heat histogram's decayed selection counts
}

// ExpertMap returns the experts' places now. A model loaded whole into RAM
// has every expert on disk and in RAM.
func (m *Model) ExpertMap() ExpertMap {
	em := ExpertMap{Experts: m.cfg.Experts}
	for i := range m.cfg.Layers {
		if m.cfg.IsMoE(i) {
			em.Layers = append(em.Layers, i)
		}
	}
	n := len(em.Layers) * em.Experts
	em.OnDisk, em.Cached, em.Heat = make([]bool, n), make([]bool, n), make([]float32, n)
	em.OnDisk, em.Cached, em.Heat = m.experts.places(em.Layers, em.Experts)
	return em
}
