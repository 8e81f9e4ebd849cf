package app

import (
	"fmt"
	"os/exec"
	"strconv"
)

// keepAwakeArgv blocks idle and sleep through logind with systemd-inhibit
// for as long as a child runs that exits with pid (tail --pid).
func keepAwakeArgv(reason string, pid int) ([]string, error) {
	inhibit, err := exec.LookPath("systemd-inhibit")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoKeepAwake, err)
	}
	return []string{inhibit, "--what=idle:sleep", "--who=Deltafin", "--why=" + reason, "--mode=block",
		"tail", "--pid=" + strconv.Itoa(pid), "-f", "/dev/null"}, nil
}
