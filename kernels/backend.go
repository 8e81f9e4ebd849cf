package kernels

// Default returns the fastest backend this build contains for this CPU. Until
// a SIMD backend is compiled in it is the reference.
func Default() Backend { return Ref() }

// Available lists the backends compiled into this build, fastest first, for
// `deltafin doctor`.
func Available() []string { return []string{Ref().Name()} }
