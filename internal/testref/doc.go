// Package testref reads the reference outputs that testdata holds for the
// tiny models (reference.safetensors, written by implementations we did not
// write; see testdata/PROVENANCE.md), and copies a tiny model for a test to
// damage or write beside (CopyModel). Only tests import it.
package testref
