package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/tokenizer"
)

// ANSI escapes for the terminal: reasoning is dimmed, the answer plain.
const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// isTerminal reports whether w is a character device (a terminal), where
// `deltafin run` dims the reasoning.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// textPrompt turns --prompt into prompt ids: as a chat turn rendered in the
// K3 format with --chat, else as plain text (no BOS, as the references are
// made), never with special tokens from the user's text.
func textPrompt(tok *tokenizer.Tokenizer, prompt string, asChat bool, opts chat.Options) ([]int, error) {
	if !asChat {
		return tok.Encode(prompt), nil
	}
	return chat.Prompt(tok, []chat.Message{{Role: "user", Content: prompt}}, opts)
}

// textPrinter prints generated ids as text while they arrive. In chat mode
// it splits reasoning from the answer; on a terminal the reasoning is
// dimmed. Whatever was printed stays valid text when generation stops early
// (Ctrl-C): finish closes any open escape and flushes held-back bytes.
type textPrinter struct {
	w      io.Writer
	color  bool
	dec    *tokenizer.Decoder // raw completion
	parser *chat.TokenParser  // chat
	dimmed bool               // an ANSI dim is open
	said   bool               // reasoning was printed (for the line break before the answer)
	answer bool               // the answer has started
	tok    *tokenizer.Tokenizer
	ids    []int
	err    error
}

func newTextPrinter(w io.Writer, color bool, tok *tokenizer.Tokenizer, asChat bool, opts chat.Options) *textPrinter {
	p := &textPrinter{w: w, color: color, tok: tok}
	if asChat {
		p.parser = chat.NewTokenParser(tok, opts)
	} else {
		p.dec = tok.NewDecoder()
	}
	return p
}

// add prints what id completes. A write error is kept and returned, which
// stops generation.
func (p *textPrinter) add(id int) error {
	p.ids = append(p.ids, id)
	if p.parser == nil {
		p.write(p.dec.Add(id), false)
	} else {
		r, c := p.parser.Add(id)
		p.write(r, true)
		p.write(c, false)
	}
	return p.err
}

// finish prints the rest; cut says generation did not end at a stop token.
func (p *textPrinter) finish(cut bool) error {
	if p.parser == nil {
		p.write(p.dec.Flush(), false)
	} else {
		r, c := p.parser.Finish(cut)
		p.write(r, true)
		p.write(c, false)
	}
	if p.dimmed {
		p.put(ansiReset)
		p.dimmed = false
	}
	return p.err
}

func (p *textPrinter) write(s string, reasoning bool) {
	if s == "" {
		return
	}
	if reasoning {
		if p.color && !p.dimmed {
			p.put(ansiDim)
			p.dimmed = true
		}
		p.said = true
	} else {
		if p.dimmed {
			p.put(ansiReset)
			p.dimmed = false
		}
		if p.said && !p.answer {
			p.put("\n\n") // set the answer apart from the reasoning
		}
		p.answer = true
	}
	p.put(s)
}

func (p *textPrinter) put(s string) {
	if p.err == nil {
		if _, err := io.WriteString(p.w, s); err != nil {
			p.err = fmt.Errorf("writing output: %w", err)
		}
	}
}

// result returns the JSON fields: the full decoded text (markers included)
// and, in chat mode, the split into reasoning and content.
func (p *textPrinter) result() (text string, reasoning, content *string) {
	text = p.tok.Decode(p.ids)
	if p.parser != nil {
		r, c := p.parser.Result()
		reasoning, content = &r, &c
	}
	return text, reasoning, content
}
