//go:build slow

package conformance

// slow: the build tag slow (make test) adds the cases that take minutes on
// this project's 2-core machine or on a software GPU: the whole lm_head and
// a K3-sized layer of experts through ExpertsFFN.
const slow = true
