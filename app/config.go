package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/adrg/xdg"
)

// Config is every setting Deltafin has, filled once by main.go from flags and
// environment variables. Packages below app receive the parts they need as
// options; nothing below reads the environment.
type Config struct {
	// DataDir holds the model mirror, presence maps, heat histogram and app
	// state. Default: $XDG_DATA_HOME/deltafin (~/Library/Application
	// Support/deltafin on macOS); DELTAFIN_HOME or --data-dir override it.
	DataDir string

	// Server is `deltafin serve` and the app's embedded server (issue 8).
	Server ServerConfig

	// envErrs are environment values that did not parse; Validate reports them.
	envErrs []error
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
	// Queue is how many requests may wait while one generates (--queue);
	// 0 answers them 429 at once.
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
}

// Getenv is the shape of os.Getenv, so tests can pass a map lookup.
type Getenv func(string) string

// DefaultConfig returns the configuration before flags, with the environment
// applied.
func DefaultConfig(getenv Getenv) Config {
	c := Config{DataDir: filepath.Join(xdg.DataHome, "deltafin")}
	if v := getenv("DELTAFIN_HOME"); v != "" {
		c.DataDir = v
	}
	c.Server = ServerConfig{Host: "127.0.0.1", Port: 8000, MemoEntries: 32, APIKey: getenv("DELTAFIN_API_KEY")}
	if v := getenv("DELTAFIN_SERVER_MAX_TOKENS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("app: DELTAFIN_SERVER_MAX_TOKENS=%q is not a number", v))
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
	if err := errors.Join(c.envErrs...); err != nil {
		return err
	}
	return c.Server.validate()
}

func (s *ServerConfig) validate() error {
	switch {
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
