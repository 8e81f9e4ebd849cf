package sysinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// readMemory uses hw.memsize and the VM page counters. Runs only on macOS;
// compile-checked on Linux by the darwin vet.
func readMemory() (Memory, error) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return Memory{}, fmt.Errorf("sysinfo: hw.memsize: %w", err)
	}
	page, err := unix.SysctlUint32("vm.pagesize")
	if err != nil {
		return Memory{}, fmt.Errorf("sysinfo: vm.pagesize: %w", err)
	}
	var pages uint64
	for _, name := range []string{"vm.page_free_count", "vm.page_purgeable_count"} {
		n, err := unix.SysctlUint32(name)
		if err != nil {
			return Memory{}, fmt.Errorf("sysinfo: %s: %w", name, err)
		}
		pages += uint64(n)
	}
	return Memory{Total: total, Available: min(total, pages*uint64(page))}, nil
}
