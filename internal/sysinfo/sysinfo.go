package sysinfo

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// Memory is the machine's RAM in bytes.
type Memory struct {
	Total     uint64
	Available uint64 // what can be allocated without swapping (Linux MemAvailable; macOS free+inactive+purgeable)
}

// ReadMemory returns the machine's total and available RAM.
func ReadMemory() (Memory, error) { return readMemory() }

// FreeDisk returns the bytes available to an unprivileged user on the
// filesystem holding path.
func FreeDisk(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("sysinfo: free disk at %s: %w", path, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// CPUFeatures lists the SIMD features the kernels can use on this CPU.
func CPUFeatures() []string {
	var f []string
	switch runtime.GOARCH {
	case "amd64":
		if cpu.X86.HasAVX2 {
			f = append(f, "AVX2")
		}
		if cpu.X86.HasFMA {
			f = append(f, "FMA")
		}
		if cpu.X86.HasAVX512F {
			f = append(f, "AVX512F")
		}
	case "arm64":
		// Every arm64 CPU has Advanced SIMD; x/sys/cpu reports it as ASIMD.
		if cpu.ARM64.HasASIMD || runtime.GOOS == "darwin" {
			f = append(f, "NEON")
		}
		if cpu.ARM64.HasASIMDDP {
			f = append(f, "DOTPROD")
		}
	}
	return f
}

// NumCPU is the number of logical CPUs the kernels' worker pool may use.
func NumCPU() int { return runtime.NumCPU() }
