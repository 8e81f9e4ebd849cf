package cli

import (
	"testing"

	"github.com/deltafin/deltafin/app"
	"github.com/stretchr/testify/require"
)

func TestValidateRAMGB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ramGB   float64
		wantErr string
	}{
		{"measured", 0, ""},
		{"override", 64, ""},
		{"negative", -1, "--ram-gb -1 is not a RAM size in GB"},
		{"absurd", 1e9, "is not a RAM size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.Config{DataDir: t.TempDir(), RAMGB: tc.ramGB}
			err := c.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
