package kernels

import (
	"fmt"
	"sync"
)

// Backends that other packages provide (the GPU backends in kernels/vulkan
// and kernels/metal import kernels, so they register themselves here from
// their init instead of kernels importing them). A registered backend is
// opened at most once, on first use; it appears in Available after the CPU
// backends when it opened, and "auto" never picks it: the engine asks for a
// GPU backend by name.
var (
	regMu    sync.Mutex
	regNames []string
	regOpen  = map[string]func() (Backend, error){}
	regDone  = map[string]regResult{}
)

type regResult struct {
	b   Backend
	err error
}

// Register adds a backend under name; open runs once, when the backend is
// first asked for. A second registration of a name panics: it is a
// programming error in an init function.
func Register(name string, open func() (Backend, error)) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := regOpen[name]; dup || name == "auto" || name == "ref" {
		panic(fmt.Sprintf("kernels: backend %q registered twice", name))
	}
	regNames = append(regNames, name)
	regOpen[name] = open
}

// openRegistered returns the registered backend name, opening it on first
// use; ok is false when no backend of that name is registered.
func openRegistered(name string) (b Backend, ok bool, err error) {
	regMu.Lock()
	defer regMu.Unlock()
	open, ok := regOpen[name]
	if !ok {
		return nil, false, nil
	}
	r, done := regDone[name]
	if !done {
		r.b, r.err = open()
		regDone[name] = r
	}
	return r.b, true, r.err
}

// registeredAvailable lists the registered backends that open.
func registeredAvailable() []string {
	regMu.Lock()
	names := append([]string(nil), regNames...)
	regMu.Unlock()
	var out []string
	for _, n := range names {
		if _, _, err := openRegistered(n); err == nil {
			out = append(out, n)
		}
	}
	return out
}
