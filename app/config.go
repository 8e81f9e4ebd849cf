package app

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/adrg/xdg"

	"github.com/deltafin/deltafin/kernels"
)

// Config is every setting Deltafin has, filled once by main.go from flags and
// environment variables. Packages below app receive the parts they need as
// options; nothing below reads the environment.
type Config struct {
	// DataDir holds the model mirror, presence maps, heat histogram and app
	// state. Default: $XDG_DATA_HOME/deltafin (~/Library/Application
	// Support/deltafin on macOS); DELTAFIN_HOME or --data-dir override it.
	DataDir string
	// Kernels names the compute backend: "auto" (the fastest this build and
	// CPU have) or one of kernels.Available(), e.g. "ref" for the pure-Go
	// reference. DELTAFIN_KERNELS sets it.
	Kernels string

	// Model source (issue 7). HFEndpoint and HFToken follow huggingface_hub:
	// HF_ENDPOINT (default https://huggingface.co) and HF_TOKEN (else
	// HUGGING_FACE_HUB_TOKEN, else the token file at HF_TOKEN_PATH or
	// $HF_HOME/token). Repo and Revision: --repo, --revision.
	HFEndpoint string
	HFToken    string
	Repo       string
	Revision   string
	// Jobs is the number of parallel range requests (--jobs).
	Jobs int
	// Run holds `deltafin run`'s flags (run.go).
	Run RunConfig
	// RAMGB overrides the RAM the budget plans for, in GB (--ram-gb); 0
	// uses the machine's (MemAvailable on Linux, hw.memsize and the VM
	// statistics on macOS).
	RAMGB float64
	// Trace, when set, is a file that receives the router trace of the run
	// (--trace): one JSON line per token and MoE layer, for `deltafin warm`.
	Trace string
	// Spec turns the engine's n-gram speculation on (default; it never
	// changes the tokens). DELTAFIN_SPEC=0 turns it off.
	Spec    bool
	specErr error // a DELTAFIN_SPEC that is not a boolean
	// Spine picks the spine's weights: "bf16" (as published, exact; the
	// default) or "int8" (--spine int8: the per-row int8 copy written by
	// `deltafin convert-spine-int8`, half the bytes, NOT exact).
	Spine string
}

// Getenv is the shape of os.Getenv, so tests can pass a map lookup.
type Getenv func(string) string

// DefaultConfig returns the configuration before flags, with the environment
// applied.
func DefaultConfig(getenv Getenv) Config {
	c := Config{DataDir: filepath.Join(xdg.DataHome, "deltafin"), Kernels: "auto", Run: RunConfig{MaxNew: DefaultMaxNew}}
	if v := getenv("DELTAFIN_KERNELS"); v != "" {
		c.Kernels = v
	}
	if v := getenv("DELTAFIN_HOME"); v != "" {
		c.DataDir = v
	}
	c.Spec, c.Spine = true, "bf16"
	if v := getenv("DELTAFIN_SPEC"); v != "" {
		b, err := strconv.ParseBool(v)
		c.Spec = b
		if err != nil {
			c.Spec, c.specErr = true, fmt.Errorf("app: DELTAFIN_SPEC=%q: want 0 or 1", v)
		}
	}
	hubFromEnv(getenv, &c)
	return c
}

// Validate normalises paths and rejects settings that cannot work.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("app: empty data directory")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("app: data directory %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
	if c.RAMGB < 0 || c.RAMGB > 1<<20 {
		return fmt.Errorf("app: --ram-gb %g is not a RAM size in GB", c.RAMGB)
	}
	if c.specErr != nil {
		return c.specErr
	}
	if c.Spine != "bf16" && c.Spine != "int8" {
		return fmt.Errorf("app: --spine %q: want bf16 or int8", c.Spine)
	}
	if _, err := kernels.ByName(c.Kernels); err != nil {
		return fmt.Errorf("app: DELTAFIN_KERNELS: %w", err)
	}
	return nil
}
