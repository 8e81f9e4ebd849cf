package kernels

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// ErrUnknownBackend reports a backend name that this build or CPU lacks.
var ErrUnknownBackend = errors.New("kernels: unknown backend")

// Default returns the fastest CPU backend this build contains for this CPU,
// using every core: the C kernels (avx512, avx2, neon or portable c) when
// built with cgo, the pure-Go reference otherwise.
func Default() Backend {
	b, err := Open("cpu", 0)
	if err != nil {
		return Ref() // unreachable: "cpu" always resolves
	}
	return b
}

// Available lists the backends compiled into this build that this CPU can
// run, fastest first, then the registered (GPU) backends that opened; "ref"
// is always last.
func Available() []string {
	var names []string
	for _, i := range fastISAs() {
		names = append(names, i.name)
	}
	names = append(names, registeredAvailable()...)
	return append(names, Ref().Name())
}

// ByName returns the named backend with every core: "auto" (a hardware GPU
// registered with RegisterAccelerator, through Accelerate, beside the
// fastest CPU backend; Default when there is none), "cpu" (= Default), "ref",
// "gpu" (the first registered GPU backend that opens for prefill and Default
// for decode, see Split; Default alone when no GPU backend opens: the
// automatic CPU fallback), or one of Available(). The engine's configuration (DELTAFIN_KERNELS) picks
// it; kernels itself reads no environment.
func ByName(name string) (Backend, error) { return Open(name, 0) }

var (
	openMu sync.Mutex
	opened = map[openKey]Backend{}
)

type openKey struct {
	name    string
	threads int
}

// Check reports whether name is a backend this build can give, as ByName
// would, without opening what needs no opening: "auto", "cpu", "ref" and
// "gpu" always resolve (a GPU that fails to open leaves the CPU), so they
// are accepted without touching a GPU; a GPU backend asked for by name is
// opened, so that a missing device is reported at once.
func Check(name string) error {
	switch name {
	case "", "auto", "cpu", "ref", "gpu":
		return nil
	}
	_, err := ByName(name)
	return err
}

// Open returns the named backend (as ByName) running on threads goroutines,
// the caller included; threads <= 0 means one per CPU. Backends are created
// once per (name, threads) and shared, so their worker pools are started
// once for the life of the process.
func Open(name string, threads int) (Backend, error) {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	isas := fastISAs()
	switch name {
	case "ref":
		return Ref(), nil
	case "gpu":
		if reg := registeredAvailable(); len(reg) > 0 {
			b, _, err := openRegistered(reg[0])
			if err != nil {
				return nil, err
			}
			return Split(b, Default()), nil
		}
		return Default(), nil
	case "auto", "":
		if acc, ok := openAccelerator(); ok {
			cpu, err := Open("cpu", threads)
			if err != nil {
				return nil, err
			}
			beside, err := Open("cpu", BesideThreads(threads))
			if err != nil {
				return nil, err
			}
			return WithBeside(Accelerate(acc, cpu, DefaultAccelOptions()), beside), nil
		}
		fallthrough
	case "cpu":
		if len(isas) == 0 {
			return Ref(), nil
		}
		name = isas[0].name
	}
	if b, ok, err := openRegistered(name); ok {
		if err != nil {
			return nil, fmt.Errorf("kernels: backend %q: %w", name, err)
		}
		return b, nil
	}
	for _, info := range isas {
		if info.name != name {
			continue
		}
		openMu.Lock()
		defer openMu.Unlock()
		k := openKey{name, threads}
		if b, ok := opened[k]; ok {
			return b, nil
		}
		b := newFast(info, threads)
		opened[k] = b
		return b, nil
	}
	return nil, fmt.Errorf("%w %q: this build and CPU have %s and auto", ErrUnknownBackend, name, strings.Join(Available(), ", "))
}

// Threads reports how many goroutines b splits an operation over (1 for ref).
func Threads(b Backend) int {
	if t, ok := b.(interface{ Threads() int }); ok {
		return t.Threads()
	}
	return 1
}
