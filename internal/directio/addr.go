package directio

import "unsafe"

// Addr returns the address of b's first byte, for alignment arithmetic only.
func Addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
