package kernels

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

type renamed struct {
	Backend
	name string
}

func (r renamed) Name() string { return r.name }

// Registered backends open once, on first use (and may call Default while
// opening); only those that opened are Available, after the CPU backends.
func TestRegisteredBackends(t *testing.T) {
	t.Cleanup(func() { unregister("reg-ok"); unregister("reg-none") })
	opens := 0
	Register("reg-ok", func() (Backend, error) {
		opens++
		return renamed{Default(), "reg-ok"}, nil
	})
	errNone := errors.New("no such device")
	Register("reg-none", func() (Backend, error) { return nil, errNone })

	av := Available()
	require.Contains(t, av, "reg-ok")
	require.NotContains(t, av, "reg-none")
	require.Equal(t, "ref", av[len(av)-1])
	require.Equal(t, Default().Name(), av[0], "auto never picks a registered backend")

	b, err := ByName("reg-ok")
	require.NoError(t, err)
	require.Equal(t, "reg-ok", b.Name())
	_, err = Open("reg-ok", 3)
	require.NoError(t, err)
	require.Equal(t, 1, opens)

	_, err = ByName("reg-none")
	require.ErrorIs(t, err, errNone)
	require.Contains(t, err.Error(), "reg-none")

	g, err := ByName("gpu")
	require.NoError(t, err)
	require.Equal(t, "reg-ok+"+Default().Name(), g.Name(), "gpu: the first registered backend that opens for prefill, the CPU for decode")

	require.Panics(t, func() { Register("reg-ok", nil) })
	require.Panics(t, func() { Register("auto", nil) })
	unregister("reg-ok")
	require.NotContains(t, Available(), "reg-ok")
	g, err = ByName("gpu")
	require.NoError(t, err)
	require.Equal(t, Default(), g, "without a GPU backend, gpu is the CPU default")
}
