package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltafin/deltafin/app"
	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/tokenizer"
)

// Run is `deltafin run`: one generation from the command line.
//
// With no --model and nothing installed it runs demo, the built-in demo
// model, as serve and the app do, and says so.
func Run(demo func() (iofs.FS, error)) func(ctx context.Context, c *Call) error {
	return func(ctx context.Context, c *Call) error { return runCmd(ctx, c, demo) }
}

func runCmd(ctx context.Context, c *Call, demo func() (iofs.FS, error)) error {
	cfg := &c.Config
	fs := c.flags("")
	addModelFlags(fs, cfg)
	r := &cfg.Run
	fs.StringVar(&r.Model, "model", r.Model, "model directory (config.json and safetensors shards); default: the model deltafin setup installed")
	ids := fs.String("ids", "", "prompt as comma-separated token ids, e.g. 1,2,3")
	fs.StringVar(&r.Prompt, "prompt", r.Prompt, "prompt text, tokenized with the model directory's tokenizer (no BOS)")
	fs.BoolVar(&r.Chat, "chat", r.Chat, "send --prompt as a chat turn and stop at the end-of-turn token")
	thinking := fs.Bool("thinking", !r.NoThinking, "with --chat: think before answering (--thinking=false answers directly)")
	fs.StringVar(&r.Effort, "effort", r.Effort, "with --chat: thinking effort none (thinking off), low, high or max; minimal, medium and xhigh map to low, high and max (empty: max)")
	fs.IntVar(&r.MaxNew, "max-new", r.MaxNew, "tokens to generate (a raw completion always runs to this)")
	samplingFlags(fs, r)
	fs.BoolVar(&r.JSON, "json", r.JSON, `print one JSON object: {"prompt_ids","ids","text","reasoning","content","seed","stats"}`)
	fs.StringVar(&r.LogitsOut, "logits-out", r.LogitsOut, "write float32 little-endian logits rows (prompt positions, then each step) to this file")
	fs.DurationVar(&cfg.NotifyAfter, "notify-after", cfg.NotifyAfter, "notify on the desktop when the answer takes longer than this (0: never)")
	if err := c.parse(fs, c.Args); err != nil {
		return err
	}
	if err := thinkingFlags(r, *thinking); err != nil {
		return err
	}
	if *ids != "" {
		var err error
		if r.IDs, err = ParseIDs(*ids); err != nil {
			return err
		}
	}
	if cfg.NotifyAfter > 0 {
		r.Notify = app.NewNotifier()
	}
	return runPromptOr(ctx, *cfg, demo, c.Stdout, c.Stderr)
}

// thinkingFlags settles --thinking and --effort as the server settles
// thinking and reasoning_effort: --effort takes the names clients send
// (chat.NearestEffort maps them to K3's), none turns thinking off, and
// --thinking=false wins over an effort.
func thinkingFlags(r *app.RunConfig, thinking bool) error {
	r.NoThinking = !thinking
	if r.Effort == "" {
		return nil
	}
	effort, on, err := chat.NearestEffort(r.Effort)
	if err != nil {
		return fmt.Errorf("--effort %q: K3 takes none, minimal, low, medium (as high), high, xhigh (as max) or max", r.Effort)
	}
	r.Effort = effort
	if !on || r.NoThinking {
		r.NoThinking, r.Effort = true, ""
	}
	return nil
}

// ParseIDs parses "1,2,3" into token ids.
func ParseIDs(s string) ([]int, error) {
	ids, bad, ok := parseInts(s, 0)
	if !ok {
		return nil, fmt.Errorf("--ids: %q is not a token id (want comma-separated non-negative integers)", bad)
	}
	return ids, nil
}

// parseInts reads comma-separated integers of at least min; on failure it
// returns the field that is not one.
func parseInts(s string, min int) (out []int, bad string, ok bool) {
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < min {
			return nil, f, false
		}
		out = append(out, n)
	}
	return out, "", true
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
	// Speculation: verify passes and how many drafted tokens were accepted.
	SpecPasses   int `json:"spec_passes"`
	SpecAccepted int `json:"spec_accepted"`
	// Drafting (the decode passes after the prefill): the drafter
	// (--draft), the target's passes, the tokens drafted and accepted, and
	// the bytes read from disk per token those passes gave.
	Draft         string  `json:"draft"`
	TargetPasses  int     `json:"target_passes"`
	Drafted       int     `json:"drafted_tokens"`
	Accepted      int     `json:"accepted_tokens"`
	BytesPerToken float64 `json:"bytes_per_token"`
}

// RunOutput is what `deltafin run --json` prints.
type RunOutput struct {
	PromptIDs []int `json:"prompt_ids"`
	IDs       []int `json:"ids"`
	// Seed is the seed sampled with (--seed, or the one drawn): --seed
	// with it and the same flags gives the same ids.
	Seed      int64    `json:"seed"`
	Text      *string  `json:"text,omitempty"`      // when the model directory has a tokenizer
	Reasoning *string  `json:"reasoning,omitempty"` // --chat: the think channel
	Content   *string  `json:"content,omitempty"`   // --chat: the answer
	Stats     RunStats `json:"stats"`
}

// Run generates from cfg.Run's prompt, sampled as the model card says
// unless the flags say otherwise (--temperature 0 is greedy). Without
// --json it prints the text as it is generated (the reasoning dimmed on a
// terminal; the ids when the model directory has no tokenizer), then a
// stats line on stderr.
// Ctrl-C (ctx cancelled) stops generation, keeps what was printed, prints
// the stats with finish reason "interrupted" and returns an error wrapping
// context.Canceled.
func runPrompt(ctx context.Context, cfg app.Config, stdout, stderr io.Writer) (err error) {
	return runPromptOr(ctx, cfg, nil, stdout, stderr)
}

// runPromptOr is runPrompt falling back to demo when nothing is installed
// (nil: no fallback).
func runPromptOr(ctx context.Context, cfg app.Config, demo func() (iofs.FS, error), stdout, stderr io.Writer) (err error) {
	rc := cfg.Run
	if err := rc.Validate(); err != nil {
		return err
	}
	// Without --model, the installed model (a stream install fetches its
	// experts on demand). The tokenizer is needed for --prompt and adds
	// "text" to --ids runs when the model directory has one.
	// What opening says (a --ram-gb above what is free, a drive skipped)
	// goes to the console and the data directory's log file, as serve's.
	logger := app.NewLogger(cfg, stderr)
	defer logger.Close()
	ref := app.ModelRef{Dir: rc.Model, NeedTokenizer: rc.Prompt != "", Log: logger.Logger}
	if ref.Dir == "" {
		switch ref.Mirror, err = app.OpenInstalled(ctx, cfg); {
		case errors.Is(err, app.ErrNoModel) && demo != nil:
			if ref.Dir, err = app.UnpackDemo(cfg, demo); err != nil {
				return err
			}
			cfg.DataDir = ref.Dir // the demo keeps its own heat histogram
			fmt.Fprintln(stderr, "nothing is installed: running the demo model (random weights, gibberish answers); run deltafin setup for Kimi K3")
		case err != nil:
			return err
		default:
			defer ref.Mirror.Close()
			ref.Dir = ref.Mirror.Dir()
		}
	}
	m, err := app.OpenModel(ctx, cfg, ref)
	if err != nil {
		if rc.Prompt != "" && errors.Is(err, tokenizer.ErrMissing) {
			return fmt.Errorf("--prompt needs the model's tokenizer: %w", err)
		}
		return err
	}
	defer m.Close()
	if m.Approximate != "" {
		fmt.Fprintln(stderr, m.Approximate)
	}
	tok := m.Tokenizer
	chatOpts := chat.Options{Thinking: !rc.NoThinking, Effort: rc.Effort}
	prompt := rc.IDs
	if rc.Prompt != "" {
		if prompt, err = textPrompt(tok, rc.Prompt, rc.Chat, chatOpts); err != nil {
			return err
		}
	}
	info := m.Info()
	fmt.Fprintln(stderr, m.Plan())

	samp, seed := runSampling(rc, info.Sampling)
	opts := engine.GenerateOptions{MaxNew: rc.MaxNew, Sampling: samp}
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

	out := RunOutput{PromptIDs: prompt, IDs: []int{}, Seed: seed}
	start := time.Now()
	sess := m.NewSession()
	draftName, err := oracleSession(ctx, cfg.Draft, m.Model, sess, prompt, opts)
	if err != nil {
		return err
	}
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
		SpecPasses: res.Spec.Passes, SpecAccepted: res.Spec.Accepted,
		Draft: draftName, TargetPasses: res.Spec.TargetPasses(), Drafted: res.Spec.Drafted, Accepted: res.Spec.Accepted,
		BytesPerToken: math.Round(res.Spec.BytesPerToken()),
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
		fmt.Fprintf(stderr, "%s (%s): %d prompt tokens in %.0f ms, %d generated in %.0f ms (%.2f tok/s), finish %s; drafting (%s): %d target passes, %d of %d drafted tokens accepted, %.1f MB read per token; %s\n",
			s.Model, s.Backend, s.PromptTokens, s.PrefillMS, s.GeneratedTokens, s.DecodeMS, s.DecodeTokPerS, s.FinishReason, s.Draft, s.TargetPasses, s.Accepted, s.Drafted, s.BytesPerToken/1e6, describeSampling(samp, seed))
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
		if err := app.NotifyLongAnswer(ctx, cfg, rc.Notify, time.Since(start), answer); err != nil {
			fmt.Fprintf(stderr, "deltafin: long-answer notification: %s\n", app.UserText(err))
		}
	}
	if interrupted {
		return fmt.Errorf("interrupted after %d tokens: %w", res.Tokens, ctx.Err())
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
		return nil, fmt.Errorf("--logits-out: %w", err)
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
		return 0, fmt.Errorf("--logits-out %s: %w", l.path, err)
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

// samplingFlags registers --temperature, --top-p, --top-k, --min-p and
// --seed; a flag not given leaves its field nil (the model's default).
func samplingFlags(fs *flag.FlagSet, r *app.RunConfig) {
	float := func(dst **float64) func(string) error {
		return func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.New("not a number")
			}
			*dst = &f
			return nil
		}
	}
	fs.Func("temperature", "sampling temperature, 0 (greedy) to 2 (default: the model card's, 1.0)", float(&r.Temperature))
	fs.Func("top-p", "nucleus: sample from the most likely tokens up to this probability (default: the model card's, 0.95)", float(&r.TopP))
	fs.Func("min-p", "drop tokens less likely than this times the most likely one (default 0: off)", float(&r.MinP))
	fs.Func("top-k", "sample from the K most likely tokens only (default 0: off)", func(v string) error {
		k, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not an integer")
		}
		r.TopK = &k
		return nil
	})
	fs.Func("seed", "random seed: the same seed and flags give the same tokens (default: drawn and reported)", func(v string) error {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("not a 64-bit integer")
		}
		r.Seed = &s
		return nil
	})
}

// runSampling is the run's sampling: the flags given over the model's
// default, and the seed (drawn below 2^53 when not given, as the server
// does, so that it can be passed back exactly).
func runSampling(rc app.RunConfig, def engine.Sampling) (engine.Sampling, int64) {
	s := def
	if rc.Temperature != nil {
		s.Temperature = *rc.Temperature
	}
	if rc.TopP != nil {
		s.TopP = *rc.TopP
	}
	if rc.TopK != nil {
		s.TopK = *rc.TopK
	}
	if rc.MinP != nil {
		s.MinP = *rc.MinP
	}
	var seed int64
	if rc.Seed != nil {
		seed = *rc.Seed
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		seed = int64(binary.LittleEndian.Uint64(b[:]) & (1<<53 - 1))
	}
	s.Seed = uint64(seed)
	return s, seed
}

func describeSampling(s engine.Sampling, seed int64) string {
	if s.Greedy() {
		return "greedy"
	}
	d := fmt.Sprintf("temperature %g", s.Temperature)
	if s.TopP > 0 && s.TopP < 1 {
		d += fmt.Sprintf(", top_p %g", s.TopP)
	}
	if s.TopK > 0 {
		d += fmt.Sprintf(", top_k %d", s.TopK)
	}
	if s.MinP > 0 {
		d += fmt.Sprintf(", min_p %g", s.MinP)
	}
	return d + fmt.Sprintf(", seed %d", seed)
}

// oracleSession sets up --draft oracle:R on sess: the answer is decoded
// first without drafting in a session of its own (the oracle proposes the
// target's own continuation), then sess drafts it back, each token wrong
// with probability 1 − R. It returns the drafter's name for the stats.
func oracleSession(ctx context.Context, spec string, m *engine.Model, sess *engine.Session, prompt []int, opts engine.GenerateOptions) (string, error) {
	d, err := engine.ParseDraft(spec)
	if err != nil || d.Kind != "oracle" {
		name := d.Kind
		if n := m.Info().Draft; n != "" && d.Kind == "ngram" {
			name = "ngram+" + n
		}
		return name, err
	}
	first := m.NewSession()
	opts.Logits = nil
	if _, err := first.Generate(ctx, prompt, opts, func(int) error { return nil }); err != nil {
		return "", fmt.Errorf("--draft %s: decoding the answer to draft: %w", spec, err)
	}
	draft, err := d.WithAnswer(first.Tokens(), uint64(len(prompt)))
	if err != nil {
		return "", err
	}
	return draft.Name(), sess.SetDraft(draft)
}
