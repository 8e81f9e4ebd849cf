package kernels

import (
	"fmt"
	"sync"
)

// Backends that other packages provide (the GPU backends in kernels/vulkan
// and kernels/metal import kernels, so they register themselves here from
// their init instead of kernels importing them). A registered backend is
// opened at most once, on first use; it appears in Available after the CPU
// backends when it opened. "auto" picks only accelerators
// (RegisterAccelerator): hardware GPUs, never a software rasteriser.
var (
	regMu    sync.Mutex
	regNames []string
	regs     = map[string]*registered{}
)

type registered struct {
	open func() (Backend, error)
	once sync.Once // open runs without regMu held: it may call Default
	b    Backend
	err  error
}

// Register adds a backend under name; open runs once, when the backend is
// first asked for. A second registration of a name panics: it is a
// programming error in an init function.
func Register(name string, open func() (Backend, error)) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := regs[name]; dup || name == "auto" || name == "cpu" || name == "ref" || name == "gpu" {
		panic(fmt.Sprintf("kernels: backend %q registered twice", name))
	}
	regNames = append(regNames, name)
	regs[name] = &registered{open: open}
}

// openRegistered returns the registered backend name, opening it on first
// use; ok is false when no backend of that name is registered.
func openRegistered(name string) (b Backend, ok bool, err error) {
	regMu.Lock()
	r, ok := regs[name]
	regMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	b, err = r.get()
	return b, true, err
}

// get opens the backend on first use and returns it, or why it did not open.
// It runs without regMu held: open may call Default.
func (r *registered) get() (Backend, error) {
	r.once.Do(func() { r.b, r.err = r.open() })
	return r.b, r.err
}

// Accelerators are GPU backends that "auto" may pick: an open that fails
// when the machine has no hardware GPU, cheaply.
var (
	accelNames []string
	accels     = map[string]*registered{}
)

// RegisterAccelerator adds a hardware GPU backend that "auto" uses (for
// prefill, and for decode of resident weights: see Accelerate) when its
// open succeeds; the first that opens, in registration order, wins. open
// runs once, on first use.
func RegisterAccelerator(name string, open func() (Backend, error)) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := accels[name]; dup {
		panic(fmt.Sprintf("kernels: accelerator %q registered twice", name))
	}
	accelNames = append(accelNames, name)
	accels[name] = &registered{open: open}
}

// openAccelerator returns the first registered accelerator that opens.
func openAccelerator() (Backend, bool) {
	regMu.Lock()
	names := append([]string(nil), accelNames...)
	regMu.Unlock()
	for _, n := range names {
		regMu.Lock()
		r := accels[n]
		regMu.Unlock()
		if b, err := r.get(); err == nil && b != nil {
			return b, true
		}
	}
	return nil, false
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

// unregister removes a backend (tests register their own).
func unregister(name string) {
	regMu.Lock()
	defer regMu.Unlock()
	delete(regs, name)
	for i, n := range regNames {
		if n == name {
			regNames = append(regNames[:i], regNames[i+1:]...)
			break
		}
	}
}

// Registered lists the registered (GPU) backends that open on this machine,
// in registration order.
func Registered() []string { return registeredAvailable() }
