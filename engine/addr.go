package engine

import "unsafe"

// addrOf returns the address of b's first byte, for alignment arithmetic only.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
