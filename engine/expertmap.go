package engine

import ckpt "github.com/deltafin/deltafin/checkpoint"

// Presence is the optional capability of a Source that can say, without
// reading, whether a byte range is on disk (a stream install's sparse
// shard). A Source without it is a complete local file.
type Presence interface {
	Present(off, n int64) bool
}

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
	se, ok := m.experts.(*streamExperts)
	if !ok {
		for i := range n {
			em.OnDisk[i], em.Cached[i] = true, true
		}
		return em
	}
	s := se.store
	for li, layer := range em.Layers {
		for e := range em.Experts {
			id, k := ckpt.ExpertID{Layer: layer, Expert: e}, li*em.Experts+e
			em.Heat[k] = s.heat.Score(id)
			sp, ok := s.spans[id]
			if !ok {
				continue
			}
			em.OnDisk[k] = true
			if sf := s.shards[sp.Shard]; sf != nil && sf.ensure != nil {
				if p, ok := sf.ensure.(Presence); ok {
					em.OnDisk[k] = p.Present(sp.Offset, sp.Size)
				}
			}
		}
	}
	pos := make(map[int]int, len(em.Layers))
	for li, layer := range em.Layers {
		pos[layer] = li
	}
	s.mu.Lock()
	for id, e := range s.entries {
		if li, ok := pos[id.Layer]; ok && e.cache && !e.gone && id.Expert < em.Experts {
			em.Cached[li*em.Experts+id.Expert] = true
		}
	}
	s.mu.Unlock()
	return em
}
