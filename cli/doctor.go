package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/internal/sysinfo"
	"github.com/deltafin/deltafin/kernels"
)

// Doctor is `deltafin doctor`: this machine, the data directory, the backends.
func Doctor(ctx context.Context, c *Call) error {
	cfg := &c.Config
	fs := c.flags("")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	return doctor(ctx, *cfg, c.Stdout, *asJSON)
}

// Report is what `deltafin doctor` found about this machine.
type Report struct {
	OS          string   `json:"os"`
	Arch        string   `json:"arch"`
	CPUs        int      `json:"cpus"`
	CPUFeatures []string `json:"cpu_features"`
	RAMTotal    uint64   `json:"ram_total_bytes"`
	RAMAvail    uint64   `json:"ram_available_bytes"`
	DataDir     string   `json:"data_dir"`
	DataDirNote string   `json:"data_dir_state"`
	DiskFree    uint64   `json:"disk_free_bytes"`
	Backends    []string `json:"backends"`
	Model       string   `json:"model"`
	MenuBar     string   `json:"menu_bar"`
	LogFile     string   `json:"log_file"`
	Version     string   `json:"version"`
	Problems    []string `json:"problems,omitempty"`
}

// diagnose gathers the report. Problems are recorded in the report rather
// than returned, so that doctor shows everything it could find.
func diagnose(ctx context.Context, cfg app.Config) Report {
	r := Report{
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: sysinfo.NumCPU(),
		CPUFeatures: sysinfo.CPUFeatures(), DataDir: cfg.DataDir,
		Backends: kernels.Available(),
		Model:    app.DescribeInstall(ctx, cfg), MenuBar: app.DescribeDesktop(ctx, cfg),
		LogFile: app.LogPath(cfg), Version: app.VersionLine(),
	}
	if m, err := sysinfo.ReadMemory(); err != nil {
		r.Problems = append(r.Problems, app.UserText(err))
	} else {
		r.RAMTotal, r.RAMAvail = m.Total, m.Available
	}
	// Free space is measured at the nearest existing ancestor, so doctor
	// works before the data directory has been created.
	dir := cfg.DataDir
	switch st, err := os.Stat(dir); {
	case err == nil && st.IsDir():
		r.DataDirNote = "exists"
	case err == nil:
		r.DataDirNote = "not a directory"
		r.Problems = append(r.Problems, fmt.Sprintf("data directory %s is a file", dir))
	case errors.Is(err, fs.ErrNotExist):
		r.DataDirNote = "not created yet"
	default:
		r.DataDirNote = "unreadable"
		r.Problems = append(r.Problems, app.UserText(err))
	}
	for probe := dir; ; {
		free, err := sysinfo.FreeDisk(probe)
		if err == nil {
			r.DiskFree = free
			break
		}
		parent := parentDir(probe)
		if parent == probe {
			r.Problems = append(r.Problems, app.UserText(err))
			break
		}
		probe = parent
	}
	return r
}

func parentDir(p string) string {
	i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Doctor writes the report as text, or as JSON with asJSON.
func doctor(ctx context.Context, cfg app.Config, w io.Writer, asJSON bool) error {
	r := diagnose(ctx, cfg)
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	feat := strings.Join(r.CPUFeatures, ", ")
	if feat == "" {
		feat = "none the kernels use"
	}
	fmt.Fprintf(w, "system        %s/%s, %d CPUs\n", r.OS, r.Arch, r.CPUs)
	fmt.Fprintf(w, "cpu features  %s\n", feat)
	fmt.Fprintf(w, "ram           %s total, %s available\n", app.FormatBytes(r.RAMTotal), app.FormatBytes(r.RAMAvail))
	fmt.Fprintf(w, "data dir      %s (%s)\n", r.DataDir, r.DataDirNote)
	fmt.Fprintf(w, "disk free     %s\n", app.FormatBytes(r.DiskFree))
	fmt.Fprintf(w, "backends      %s\n", strings.Join(r.Backends, ", "))
	fmt.Fprintf(w, "model         %s\n", r.Model)
	fmt.Fprintf(w, "menu bar      %s\n", r.MenuBar)
	fmt.Fprintf(w, "log file      %s\n", r.LogFile)
	fmt.Fprintf(w, "version       %s\n", r.Version)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem       %s\n", p)
	}
	return nil
}
