package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/adrg/xdg"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
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
	// Kernels names the compute backend: "auto" (a hardware GPU where
	// kernels.Accelerate's rule favours it, beside the fastest CPU kernels;
	// the CPU kernels alone without one), "cpu", or one of
	// kernels.Available(), e.g. "ref" for the pure-Go reference, "vulkan" or
	// "metal" for a GPU, or "gpu" (any GPU for batches, CPU decode; the CPU
	// alone without a GPU). DELTAFIN_KERNELS sets it.
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
	// DrafterRepo and DrafterRevision are the drafter's hub repository
	// (setup --drafter; drafter.go). Drafter picks the drafter run, serve
	// and the app draft with: "auto" (the installed one, when there is
	// one and it fits the model; the default), "off", or a directory.
	// DELTAFIN_DRAFTER sets it.
	DrafterRepo, DrafterRevision string
	Drafter                      string
	// mirrorsDrafter: this copy of the config mirrors the drafter's
	// repository (drafterHub), into drafterDir.
	mirrorsDrafter bool
	// KeepFreeGB is the free disk, in GB, every download leaves (setup and
	// fetch-experts --keep-free, and the menu's downloads); 0: a tenth of
	// the model's full size, 1 to 100 GB (downloader.HeadroomFor).
	KeepFreeGB float64
	// Run holds `deltafin run`'s flags (run.go).
	Run RunConfig
	// RAMGB overrides the RAM the budget plans for, in GB (--ram-gb); 0
	// uses the machine's (MemAvailable on Linux, hw.memsize and the VM
	// statistics on macOS).
	RAMGB float64
	// AllowUnverified lets run, serve and the app use bytes of the install
	// that could not be verified against the hub (--allow-unverified);
	// without it they are refused with ErrUnverified.
	AllowUnverified bool
	// Trace, when set, is a file that receives the router trace of the run
	// (--trace): one JSON line per token and MoE layer, for `deltafin warm`.
	Trace string
	// Spec turns the engine's n-gram speculation on (default; it never
	// changes the tokens). DELTAFIN_SPEC=0 turns it off.
	Spec    bool
	specErr error // a DELTAFIN_SPEC that is not a boolean
	// Draft is --draft: "ngram" (the default: n-gram speculation, when
	// Spec), "off", or "oracle:R" (run and bench only: the target's own
	// answer, computed first, each token wrong with probability 1 − R).
	Draft string
	// Spine picks the spine's weights: "bf16" (as published, exact; the
	// default) or "int8" (--spine int8: the per-row int8 copy written by
	// `deltafin convert-spine-int8`, half the bytes, NOT exact).
	Spine string
	// Server is `deltafin serve` and the app's embedded server (issue 8).
	Server ServerConfig

	// Menu-bar app (issue 9).
	// NotifyAfter: answers that take longer get a notification (0: never).
	NotifyAfter time.Duration
	// WarmIdleAfter: overnight warming starts after this long without
	// user input, on AC power.
	WarmIdleAfter time.Duration
	// WarmPoll: how often warming checks idle time and power (0: 30 s).
	WarmPoll time.Duration
	// HubStall is how long the app waits for the hub to answer a listing
	// before it says so (60 s; the downloader's stall timeout for file
	// bodies is the same).
	HubStall time.Duration
	// SessionBus is DBUS_SESSION_BUS_ADDRESS and RuntimeDir is
	// XDG_RUNTIME_DIR: on Linux the tray and notifications need a
	// session bus, and the app refuses to start without one.
	SessionBus, RuntimeDir string
}

// ServerConfig configures the OpenAI-compatible server.
type ServerConfig struct {
	// Host and Port to listen on (--host, --port): 127.0.0.1:8000. A
	// non-loopback host exposes the model to the network: set APIKey.
	Host string
	Port int
	// ModelDir is the model directory to serve (--model): config.json,
	// the safetensors shards, tiktoken.model and tokenizer_config.json.
	ModelDir string
	// MaxTokens is a hard cap on generated tokens per request, chat and
	// completions alike (--max-tokens, DELTAFIN_SERVER_MAX_TOKENS); 0 = none.
	MaxTokens int
	// Queue is how many jobs may wait while one generates (--queue, 32);
	// beyond it they get 429, and 0 answers them 429 at once.
	Queue int
	// MemoEntries bounds the exact response memo (--memo-entries; 0
	// disables it); it also holds at most 64 MiB.
	MemoEntries int
	// APIKey, when set, is required as "Authorization: Bearer KEY"
	// (--api-key, DELTAFIN_API_KEY).
	APIKey string
	// CORSOrigins are the browser origins allowed to call the API
	// (--cors-origin, repeatable); none = CORS off.
	CORSOrigins []string
	// Demo is set when the model served is the built-in demo (random
	// weights): the API names it deltafin-demo and says so.
	Demo bool
	// AddrGiven is set when Host or Port came from a flag or from
	// DELTAFIN_HOST / DELTAFIN_PORT; otherwise the menu-bar app uses the
	// address it remembered (RememberedAddress).
	AddrGiven bool

	// envErr is an environment value that did not parse; Validate reports
	// it, so that it only stops the commands that serve.
	envErr error
}

// Getenv is the shape of os.Getenv, so tests can pass a map lookup.
type Getenv func(string) string

// DefaultConfig returns the configuration before flags, with the environment
// applied.
func DefaultConfig(getenv Getenv) Config {
	c := Config{
		DataDir:     filepath.Join(xdg.DataHome, "deltafin"),
		Kernels:     "auto",
		Run:         RunConfig{MaxNew: DefaultMaxNew},
		NotifyAfter: 30 * time.Second, WarmIdleAfter: 10 * time.Minute, WarmPoll: 30 * time.Second, HubStall: time.Minute,
		SessionBus: getenv("DBUS_SESSION_BUS_ADDRESS"), RuntimeDir: getenv("XDG_RUNTIME_DIR"),
	}
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
	c.DrafterRepo, c.DrafterRevision, c.Drafter = DefaultDrafterRepo, DefaultDrafterRevision, "auto"
	if v := getenv("DELTAFIN_DRAFTER"); v != "" {
		c.Drafter = v
	}
	c.Server = ServerConfig{Host: "127.0.0.1", Port: 8000, Queue: 32, MemoEntries: 32, APIKey: getenv("DELTAFIN_API_KEY")}
	if v := getenv("DELTAFIN_HOST"); v != "" {
		c.Server.Host, c.Server.AddrGiven = v, true
	}
	if v := getenv("DELTAFIN_PORT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.Server.envErr = fmt.Errorf("app: DELTAFIN_PORT=%q is not a port number", v)
		}
		c.Server.Port, c.Server.AddrGiven = n, true
	}
	if v := getenv("DELTAFIN_SERVER_MAX_TOKENS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.Server.envErr = fmt.Errorf("app: DELTAFIN_SERVER_MAX_TOKENS=%q is not a number", v)
		}
		c.Server.MaxTokens = n
	}
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
	if c.NotifyAfter < 0 || c.WarmIdleAfter < 0 {
		return fmt.Errorf("app: negative duration (notify after %v, warm idle after %v)", c.NotifyAfter, c.WarmIdleAfter)
	}
	if c.HubStall <= 0 {
		c.HubStall = time.Minute
	}
	if c.WarmPoll < 0 {
		return fmt.Errorf("app: negative warm poll interval %v", c.WarmPoll)
	}
	if c.KeepFreeGB < 0 || c.KeepFreeGB > 1<<30 {
		return fmt.Errorf("app: --keep-free %g is not a disk size in GB", c.KeepFreeGB)
	}
	if c.RAMGB < 0 || c.RAMGB > 1<<20 {
		return fmt.Errorf("app: --ram-gb %g is not a RAM size in GB", c.RAMGB)
	}
	if c.specErr != nil {
		return c.specErr
	}
	if _, err := engine.ParseDraft(c.Draft); err != nil {
		return err
	}
	if c.Spine == "" {
		c.Spine = "bf16"
	}
	if c.Spine != "bf16" && c.Spine != "int8" {
		return fmt.Errorf("app: --spine %q: want bf16 or int8", c.Spine)
	}
	// Check, not ByName: validating a command's settings must not open the
	// GPU that "auto" would take (Metal compiles every shader when it opens).
	if err := kernels.Check(c.Kernels); err != nil {
		return fmt.Errorf("app: DELTAFIN_KERNELS: %w", err)
	}
	return nil
}

// Validate rejects server settings that cannot work; Serve calls it.
func (s *ServerConfig) Validate() error {
	switch {
	case s.envErr != nil:
		return s.envErr
	case s.Host == "":
		return fmt.Errorf("app: empty server host")
	case s.Port < 0 || s.Port > 65535:
		return fmt.Errorf("app: server port %d out of range", s.Port)
	case s.MaxTokens < 0:
		return fmt.Errorf("app: negative max tokens %d", s.MaxTokens)
	case s.Queue < 0:
		return fmt.Errorf("app: negative queue length %d", s.Queue)
	case s.MemoEntries < 0:
		return fmt.Errorf("app: negative memo entries %d", s.MemoEntries)
	}
	if s.ModelDir != "" {
		abs, err := filepath.Abs(s.ModelDir)
		if err != nil {
			return fmt.Errorf("app: model directory %q: %w", s.ModelDir, err)
		}
		s.ModelDir = abs
	}
	return nil
}

// RunConfig is `deltafin run`: one generation from the command line.
type RunConfig struct {
	Model  string // model directory (config.json + safetensors)
	IDs    []int  // prompt as token ids (no tokenizer needed)
	Prompt string // prompt as text (needs the tokenizer)
	Chat   bool   // wrap Prompt as a chat turn; stops at eos_token_id
	// NoThinking (--thinking=false) answers a --chat turn without the
	// think channel; Effort is the thinking effort, low, high or max
	// ("" = max).
	NoThinking bool
	Effort     string
	MaxNew     int // tokens to generate
	// Temperature, TopP, TopK, MinP and Seed are the sampling flags; one
	// not given (nil) takes the model's default (K3's model card:
	// temperature 1.0, top_p 0.95), and without a seed one is drawn and
	// reported. Temperature 0 is greedy.
	Temperature, TopP, MinP *float64
	TopK                    *int
	Seed                    *int64
	JSON                    bool   // print one JSON object at the end
	LogitsOut               string // file for little-endian float32 logits rows
	// Notify, when set, is told of an answer that took longer than
	// Config.NotifyAfter (cmd_run sets the desktop notifier).
	Notify Notifier
}

// DefaultMaxNew is --max-new's default.
const DefaultMaxNew = 16

// Validate checks the flags of one run before anything is opened.
func (r RunConfig) Validate() error {
	switch {
	case len(r.IDs) > 0 && r.Prompt != "":
		return errors.New("app: give either --ids or --prompt, not both")
	case len(r.IDs) == 0 && r.Prompt == "":
		return errors.New("app: run needs --ids or --prompt")
	case r.Chat && r.Prompt == "":
		return errors.New("app: --chat needs --prompt")
	case chat.CheckEffort(r.Effort) != nil:
		return fmt.Errorf("app: --effort: %w", chat.CheckEffort(r.Effort))
	case r.MaxNew < 1:
		return fmt.Errorf("app: --max-new %d, want at least 1", r.MaxNew)
	case r.Temperature != nil && !(*r.Temperature >= 0 && *r.Temperature <= 2):
		return fmt.Errorf("app: --temperature %g, want 0 (greedy) to 2", *r.Temperature)
	case r.TopP != nil && !(*r.TopP > 0 && *r.TopP <= 1):
		return fmt.Errorf("app: --top-p %g, want more than 0 and at most 1", *r.TopP)
	case r.TopK != nil && *r.TopK < 0:
		return fmt.Errorf("app: --top-k %d, want 0 (off) or more", *r.TopK)
	case r.MinP != nil && !(*r.MinP >= 0 && *r.MinP <= 1):
		return fmt.Errorf("app: --min-p %g, want 0 to 1", *r.MinP)
	}
	return nil
}
