package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpecFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env     string
		want    bool
		invalid bool
	}{
		{"", true, false},
		{"0", false, false},
		{"false", false, false},
		{"1", true, false},
		{"maybe", true, true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			c := DefaultConfig(func(k string) string {
				if k == "DELTAFIN_SPEC" {
					return tc.env
				}
				return ""
			})
			c.DataDir = t.TempDir()
			require.Equal(t, tc.want, c.Spec)
			err := c.Validate()
			if tc.invalid {
				require.ErrorContains(t, err, "DELTAFIN_SPEC")
			} else {
				require.NoError(t, err)
			}
		})
	}
}
