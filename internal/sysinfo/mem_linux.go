package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

func readMemory() (Memory, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Memory{}, fmt.Errorf("sysinfo: %w", err)
	}
	return parseMeminfo(b)
}

// parseMeminfo reads MemTotal and MemAvailable (kB) from /proc/meminfo.
func parseMeminfo(b []byte) (Memory, error) {
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(f[0]) {
		case "MemTotal:":
			m.Total = v << 10
		case "MemAvailable:":
			m.Available = v << 10
		}
	}
	if m.Total == 0 || m.Available == 0 {
		return m, fmt.Errorf("sysinfo: /proc/meminfo has no MemTotal or MemAvailable")
	}
	return m, nil
}
