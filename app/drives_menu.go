package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/deltafin/deltafin/drives"
)

// FolderChooser is the desktop's folder dialog (the menu's "Expert
// drives…"). A Desktop without one cannot add drives from the menu.
type FolderChooser interface {
	// ChooseFolder returns the folder chosen, or "" when the user
	// cancelled.
	ChooseFolder(ctx context.Context, title string) (string, error)
}

// folderCommands are the folder dialogs: AppleScript's choose folder on
// macOS, zenity or kdialog elsewhere.
func folderCommands() [][]string {
	if runtime.GOOS == "darwin" {
		return [][]string{{"/usr/bin/osascript"}}
	}
	return [][]string{{"zenity"}, {"kdialog"}}
}

// folderArgv is argv's arguments for a folder dialog titled title.
func folderArgv(argv []string, title string) []string {
	args := argv[1:]
	switch filepath.Base(argv[0]) {
	case "osascript":
		return append(args, "-e", fmt.Sprintf(`POSIX path of (choose folder with prompt %q)`, title))
	case "kdialog":
		return append(args, "--title", title, "--getexistingdirectory")
	}
	return append(args, "--file-selection", "--directory", "--title", title)
}

func (d cmdDesktop) ChooseFolder(ctx context.Context, title string) (string, error) {
	argv, err := firstInstalled(d.choose)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoDialog, err)
	}
	cmd := exec.CommandContext(ctx, argv[0], folderArgv(argv, title)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return strings.TrimSpace(stdout.String()), nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", nil // cancelled
	}
	return "", fmt.Errorf("%w: %s: %v: %s", ErrDesktop, argv[0], err, strings.TrimSpace(stderr.String()))
}

// chooseDrive is the menu's "Expert drives…": a folder dialog; a folder
// already added is offered for removal (its copies deleted), any other for
// adding, filled with as many of the hottest experts as fit. A model
// already open reads from the new set of drives when it is next opened.
func (a *App) chooseDrive(ctx context.Context) {
	fc, ok := a.deps.Desktop.(FolderChooser)
	if !ok {
		a.problem(subDesktop, "Expert drives", fmt.Errorf("%w: this desktop has no folder dialog; use deltafin drives add PATH", ErrNoDialog))
		return
	}
	path, err := fc.ChooseFolder(ctx, "Choose a folder on another drive to hold copies of the hottest experts")
	if err != nil {
		a.problem(subDesktop, "Expert drives", err)
		return
	}
	if path == "" {
		return
	}
	entries, err := ExpertDrives(a.cfg)
	if err != nil {
		a.problem(subDesktop, "Expert drives", err)
		return
	}
	abs, _ := filepath.Abs(path)
	if slices.ContainsFunc(entries, func(e DriveEntry) bool { return e.Path == abs }) {
		yes, err := a.deps.Desktop.Confirm(ctx, "Remove expert drive", fmt.Sprintf("Stop reading experts from %s and delete its copies? The model's own copy stays complete.", abs), "Remove")
		if err != nil || !yes {
			if err != nil {
				a.problem(subDesktop, "Expert drives", err)
			}
			return
		}
		if _, err := RemoveExpertDrive(a.cfg, abs); err != nil {
			a.problem(subDesktop, "Expert drives", err)
			return
		}
		if err := drives.Remove(abs); err != nil {
			a.problem(subDesktop, "Expert drives", err)
			return
		}
		a.solved(subDesktop)
		a.notify("Expert drive removed", abs)
		return
	}
	yes, err := a.deps.Desktop.Confirm(ctx, "Add expert drive", fmt.Sprintf("Copy the hottest experts to %s, as many as fit (2 GB stay free)? The model's own copy stays complete; Deltafin then reads from both.", abs), "Copy")
	if err != nil || !yes {
		if err != nil {
			a.problem(subDesktop, "Expert drives", err)
		}
		return
	}
	m, done, err := a.driveMirror(ctx)
	if err != nil {
		a.problem(subDesktop, "Expert drives", err)
		return
	}
	defer done()
	e, res, err := FillDrive(ctx, a.cfg, m, DriveEntry{Path: abs, Share: 1}, false, 0, DriveProgress{})
	if err != nil {
		a.problem(subDesktop, "Expert drive", err)
		return
	}
	a.solved(subDesktop)
	a.notify("Expert drive added", fmt.Sprintf("%s holds %d experts (%.1f GB)", e.Path, res.Held, float64(res.Bytes)/1e9))
}

// driveMirror is DriveMirror through the app's own mirror when it holds
// one (the mirror is locked to one user at a time).
func (a *App) driveMirror(ctx context.Context) (drives.Mirror, func(), error) {
	mi, ok := a.deps.Downloader.(*mirrorInstall)
	if !ok {
		return DriveMirror(ctx, a.cfg, "")
	}
	mm, err := mi.mirror(ctx)
	if err != nil {
		return drives.Mirror{}, nil, err
	}
	m, err := drives.OpenMirror(ctx, mm.Dir(), MirrorSource(mm))
	return m, func() {}, err
}
