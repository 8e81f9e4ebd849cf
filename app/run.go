package app

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/engine/chat"
	"github.com/deltafin/deltafin/engine/tokenizer"
	"github.com/deltafin/deltafin/kernels"
)

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
	MaxNew     int    // tokens to generate
	JSON       bool   // print one JSON object at the end
	LogitsOut  string // file for little-endian float32 logits rows
	// Notify, when set, is told of an answer that took longer than
	// Config.NotifyAfter (cmd_run sets the desktop notifier).
	Notify Notifier
}

// DefaultMaxNew is --max-new's default.
const DefaultMaxNew = 16

// ParseIDs parses "1,2,3" into token ids.
func ParseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("app: --ids: %q is not a token id (want comma-separated non-negative integers)", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (r RunConfig) validate() error {
	switch {
	case r.Model == "":
		return errors.New("app: run needs --model DIR")
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
	}
	return nil
}

// RunStats is the "stats" object of `deltafin run --json`.
type RunStats struct {
	Model           string  `json:"model"`
	Backend         string  `json:"backend"`
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	FinishReason    string  `json:"finish_reason"`
	PrefillMS       float64 `json:"prefill_ms"`
	DecodeMS        float64 `json:"decode_ms"`
	DecodeTokPerS   float64 `json:"decode_tokens_per_s"`
	LogitsRows      int     `json:"logits_rows,omitempty"`
	// Speculation: two-position passes and how many guesses were accepted.
	SpecPasses   int `json:"spec_passes"`
	SpecAccepted int `json:"spec_accepted"`
}

// RunOutput is what `deltafin run --json` prints.
type RunOutput struct {
	PromptIDs []int    `json:"prompt_ids"`
	IDs       []int    `json:"ids"`
	Text      *string  `json:"text,omitempty"`      // when the model directory has a tokenizer
	Reasoning *string  `json:"reasoning,omitempty"` // --chat: the think channel
	Content   *string  `json:"content,omitempty"`   // --chat: the answer
	Stats     RunStats `json:"stats"`
}

// Run generates greedily from cfg.Run's prompt. Without --json it prints
// the text as it is generated (the reasoning dimmed on a terminal; the ids
// when the model directory has no tokenizer), then a stats line on stderr.
// Ctrl-C (ctx cancelled) stops generation, keeps what was printed, prints
// the stats with finish reason "interrupted" and returns an error wrapping
// context.Canceled.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	rc := cfg.Run
	if err := rc.validate(); err != nil {
		return err
	}
	// The tokenizer is needed for --prompt and adds "text" to --ids runs
	// when the model directory has one.
	tok, err := tokenizer.Load(rc.Model)
	switch {
	case err != nil && rc.Prompt != "":
		return fmt.Errorf("app: --prompt needs the model's tokenizer: %w", err)
	case err != nil && !errors.Is(err, tokenizer.ErrMissing):
		return fmt.Errorf("app: the model's tokenizer: %w", err)
	}
	chatOpts := chat.Options{Thinking: !rc.NoThinking, Effort: rc.Effort}
	prompt := rc.IDs
	if rc.Prompt != "" {
		if prompt, err = textPrompt(tok, rc.Prompt, rc.Chat, chatOpts); err != nil {
			return err
		}
	}
	backend, err := kernels.ByName(cfg.Kernels) // DELTAFIN_KERNELS
	if err != nil {
		return err
	}
	st, err := cfg.OpenStream(nil)
	if err != nil {
		return err
	}
	defer st.Close()
	eo := engine.Options{Backend: backend, Stream: st.Options, NoSpec: !cfg.Spec}
	if cfg.Spine == "int8" {
		eo.SpineInt8 = engine.SpineInt8Dir(rc.Model)
		fmt.Fprintf(stderr, "spine: int8 copy in %s (approximate: NOT the exact K3 output)\n", eo.SpineInt8)
	}
	m, err := engine.Open(ctx, rc.Model, eo)
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	fmt.Fprintln(stderr, m.Plan())

	opts := engine.GenerateOptions{MaxNew: rc.MaxNew}
	if rc.Chat {
		opts.StopTokens = chat.StopTokens(tok)
		if info.EOS >= 0 && !slices.Contains(opts.StopTokens, info.EOS) {
			opts.StopTokens = append(opts.StopTokens, info.EOS)
		}
	}
	var printer *textPrinter
	if tok != nil {
		w := io.Discard // --json only collects the text
		if !rc.JSON {
			w = stdout
		}
		printer = newTextPrinter(w, isTerminal(w), tok, rc.Chat, chatOpts)
	}
	var logits *logitsFile
	if rc.LogitsOut != "" {
		if logits, err = createLogitsFile(rc.LogitsOut); err != nil {
			return err
		}
		defer logits.abort()
		opts.Logits = logits.write
	}

	out := RunOutput{PromptIDs: prompt, IDs: []int{}}
	start := time.Now()
	sess := m.NewSession()
	res, err := sess.Generate(ctx, prompt, opts, func(tok int) error {
		out.IDs = append(out.IDs, tok)
		if printer != nil {
			if err := printer.add(tok); err != nil {
				return err
			}
		}
		if !rc.JSON && printer == nil {
			sep := " "
			if len(out.IDs) == 1 {
				sep = ""
			}
			_, err := fmt.Fprintf(stdout, "%s%d", sep, tok)
			return err
		}
		return nil
	})
	interrupted := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if err != nil && !interrupted {
		return err
	}
	if interrupted {
		res.FinishReason = "interrupted"
	}
	if printer != nil {
		if err := printer.finish(res.FinishReason != "stop"); err != nil {
			return err
		}
		text, reasoning, content := printer.result()
		out.Text, out.Reasoning, out.Content = &text, reasoning, content
	}
	out.Stats = RunStats{
		Model: info.ID, Backend: info.Backend,
		PromptTokens: res.PromptTokens, GeneratedTokens: res.Tokens, FinishReason: res.FinishReason,
		PrefillMS: ms(res.Prefill.Seconds()), DecodeMS: ms(res.Decode.Seconds()),
		SpecPasses: sess.SpecStats().Passes, SpecAccepted: sess.SpecStats().Accepted,
	}
	if res.Tokens > 1 && res.Decode > 0 {
		out.Stats.DecodeTokPerS = math.Round(float64(res.Tokens-1)/res.Decode.Seconds()*100) / 100
	}
	if logits != nil && !interrupted {
		if out.Stats.LogitsRows, err = logits.commit(); err != nil {
			return err
		}
	}
	if rc.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false) // keep "<|open|>" readable in "text"
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout)
		s := out.Stats
		fmt.Fprintf(stderr, "%s (%s): %d prompt tokens in %.0f ms, %d generated in %.0f ms (%.2f tok/s), finish %s; speculation: %d of %d guesses accepted\n",
			s.Model, s.Backend, s.PromptTokens, s.PrefillMS, s.GeneratedTokens, s.DecodeMS, s.DecodeTokPerS, s.FinishReason, s.SpecAccepted, s.SpecPasses)
	}
	if rc.Notify != nil && !interrupted {
		answer := ""
		switch {
		case out.Content != nil:
			answer = *out.Content
		case out.Text != nil:
			answer = *out.Text
		}
		// A notification that cannot be shown costs the user nothing they
		// asked for: the answer is printed, so report and carry on.
		if err := NotifyLongAnswer(ctx, cfg, rc.Notify, time.Since(start), answer); err != nil {
			fmt.Fprintf(stderr, "deltafin: long-answer notification: %v\n", err)
		}
	}
	if interrupted {
		return fmt.Errorf("app: interrupted after %d tokens: %w", res.Tokens, ctx.Err())
	}
	return nil
}

func ms(sec float64) float64 { return math.Round(sec*1e6) / 1e3 }

// logitsFile writes logits rows to a temporary file renamed into place on
// commit, so a failed or interrupted run leaves no partial file behind.
type logitsFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	rows int
	buf  []byte
}

func createLogitsFile(path string) (*logitsFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("app: --logits-out: %w", err)
	}
	return &logitsFile{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (l *logitsFile) write(row []float32) error {
	l.buf = l.buf[:0]
	for _, v := range row {
		l.buf = binary.LittleEndian.AppendUint32(l.buf, math.Float32bits(v))
	}
	l.rows++
	_, err := l.w.Write(l.buf)
	return err
}

func (l *logitsFile) commit() (int, error) {
	err := l.w.Flush()
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(l.f.Name(), l.path)
	}
	if err != nil {
		os.Remove(l.f.Name())
		return 0, fmt.Errorf("app: --logits-out %s: %w", l.path, err)
	}
	l.f = nil
	return l.rows, nil
}

// abort removes the temporary file unless commit succeeded.
func (l *logitsFile) abort() {
	if l.f != nil {
		l.f.Close()
		os.Remove(l.f.Name())
	}
}
