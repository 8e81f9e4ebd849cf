//go:build !unix

package conformance

import (
	"testing"

	"github.com/deltafin/deltafin/kernels"
)

// staysInside needs mmap and mprotect for its guard pages.
func staysInside(t *testing.T, _ []kernels.Backend) { t.Skip("guard pages need a unix system") }
