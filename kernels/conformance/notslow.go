//go:build !slow

package conformance

// slow: without the build tag slow the suite fits go test's default
// timeout; see slow.go for what the tag adds.
const slow = false
