// Package sysinfo reads the facts about this machine that Deltafin plans
// with: physical and available RAM, free disk space at a path, and the CPU
// features the kernels dispatch on. It is a leaf: `doctor` prints these, the
// engine's RAM budget and the downloader's disk check consume them.
//
// Platform code is one unexported function per fact in a _linux.go or
// _darwin.go file; the darwin file is compile-checked on Linux by the darwin
// vet in `make test` but runs only on a Mac.
package sysinfo
