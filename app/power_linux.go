package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sysfsPower reads the kernel's power-supply class: on AC when a mains
// supply (or USB-C/USB PD adapter) is online, or when there is no battery
// at all (a desktop).
type sysfsPower struct{ root string }

func newPowerSource() PowerSource { return sysfsPower{root: "/sys/class/power_supply"} }

func (p sysfsPower) OnAC(context.Context) (bool, error) {
	entries, err := os.ReadDir(p.root)
	if err != nil {
		if os.IsNotExist(err) {
			return true, nil // no power-supply class: not a laptop
		}
		return false, fmt.Errorf("%w: %v", ErrPowerUnknown, err)
	}
	battery, discharging := false, false
	for _, e := range entries {
		dir := filepath.Join(p.root, e.Name())
		switch read(dir, "type") {
		case "Mains", "USB", "USB_C", "USB_PD":
			if read(dir, "online") == "1" {
				return true, nil
			}
		case "Battery":
			if read(dir, "scope") == "Device" {
				continue // a mouse's or headset's battery
			}
			battery = true
			if read(dir, "status") == "Discharging" {
				discharging = true
			}
		}
	}
	return !battery || !discharging, nil
}

func read(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
