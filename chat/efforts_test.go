package chat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEffortsAreAcceptedAndFresh(t *testing.T) {
	t.Parallel()
	e := Efforts()
	for _, x := range e {
		require.NoError(t, CheckEffort(x), x)
	}
	e[0] = "medium"
	require.Equal(t, []string{"low", "high", "max"}, Efforts(), "a caller cannot change the list")
	require.ErrorIs(t, CheckEffort("medium"), ErrEffort)
}
