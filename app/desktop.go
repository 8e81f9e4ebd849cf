package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/gen2brain/beeep"
)

// ErrDesktop wraps failures of the desktop helpers (clipboard, opening a
// folder, notifications).
var ErrDesktop = errors.New("app: desktop")

// NewDesktop returns this platform's clipboard and opener: pbcopy and open
// on macOS; wl-copy, xclip or xsel and xdg-open on Linux.
func NewDesktop() Desktop {
	return cmdDesktop{copy: copyCommands(), open: openCommands(), confirm: confirmCommands(), choose: folderCommands()}
}

// ErrNoDialog: the desktop has no dialog tool (zenity or kdialog on Linux).
var ErrNoDialog = errors.New("app: no dialog tool")

// cmdDesktop runs the first of each list of commands that is installed.
// confirm's commands take the title, the text and the OK label as their
// last three arguments (confirmArgv) and exit 0 for yes, 1 for no.
type cmdDesktop struct {
	copy, open, confirm [][]string
	choose              [][]string // folder dialogs (drives_menu.go)
}

func (d cmdDesktop) Confirm(ctx context.Context, title, text, ok string) (bool, error) {
	argv, err := firstInstalled(d.confirm)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrNoDialog, err)
	}
	cmd := exec.CommandContext(ctx, argv[0], confirmArgv(argv, title, text, ok)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil // the user said no, or closed the dialog
	}
	return false, fmt.Errorf("%w: %s: %v: %s", ErrDesktop, argv[0], err, strings.TrimSpace(stderr.String()))
}

func (d cmdDesktop) CopyText(ctx context.Context, text string) error {
	argv, err := firstInstalled(d.copy)
	if err != nil {
		return fmt.Errorf("%w: clipboard: %v", ErrDesktop, err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(text)
	return runCmd(cmd)
}

func (d cmdDesktop) Open(ctx context.Context, path string) error {
	argv, err := firstInstalled(d.open)
	if err != nil {
		return fmt.Errorf("%w: open: %v", ErrDesktop, err)
	}
	return runCmd(exec.CommandContext(ctx, argv[0], append(argv[1:], path)...))
}

func firstInstalled(cands [][]string) ([]string, error) {
	var names []string
	for _, argv := range cands {
		if p, err := exec.LookPath(argv[0]); err == nil {
			return append([]string{p}, argv[1:]...), nil
		}
		names = append(names, argv[0])
	}
	return nil, fmt.Errorf("none of %s is installed", strings.Join(names, ", "))
}

func runCmd(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Clipboard owners like xclip fork a child that keeps the selection;
	// don't wait for its pipes.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The command exited 0 and its child still holds the pipe: that
		// child is the clipboard owner, and the copy worked.
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrDesktop, cmd.Args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// beeep names the sender of every notification by its package variable
// AppName, which each notification's goroutine reads (Notify, below, may
// leave one running past its ctx). So it is set once, before any
// goroutine, rather than by NewNotifier: writing it there raced with a
// notification still in flight (go test -race, TestLongAnswerNotification).
func init() { beeep.AppName = "Deltafin" }

// NewNotifier returns desktop notifications through beeep, from
// "Deltafin": the notification centre on macOS (as the app bundle), and
// org.freedesktop.Notifications over the session bus on Linux.
func NewNotifier() Notifier { return beeepNotifier{} }

type beeepNotifier struct{}

// Notify gives up when ctx ends: beeep cannot be cancelled, and a broken
// notification daemon can block it (beeep#70), so it runs on its own
// goroutine, which finishes when the call does.
func (beeepNotifier) Notify(ctx context.Context, title, body string) error {
	done := make(chan error, 1)
	go func() { done <- beeep.Notify(title, body, "") }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: notify: %v", ErrDesktop, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: notify %q: %v", ErrDesktop, title, ctx.Err())
	}
}
