// Package synthckpt writes small synthetic shards for the tests of the
// packages that read checkpoints (engine, experts): named tensors in a given
// physical order, filled with seeded pseudo-random bytes shaped so that a
// kernel reading them meets finite values. Only tests import it; package
// bench writes the K3-size slice with its own resumable writer.
package synthckpt
