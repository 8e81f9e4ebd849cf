package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"gopkg.in/natefinch/lumberjack.v2"
)

// LogPath is the log file of the app and of deltafin serve: in
// ~/Library/Logs/Deltafin on macOS (where Console.app looks), in the data
// directory's logs/ elsewhere.
func LogPath(cfg Config) string { return filepath.Join(logDir(cfg), "deltafin.log") }

// Logger is the log of a long-running command: text lines to stderr and to
// LogPath, rotated at 10 MB with five old files kept for 30 days, so a
// menu error's whole text can be found later. Debug lines (the /health
// requests a monitor sends every few seconds) go to the file only.
type Logger struct {
	*slog.Logger
	file *lumberjack.Logger
}

// NewLogger opens the log. A log directory that cannot be created costs the
// file, not the command: stderr still gets every line, and the first says
// why.
func NewLogger(cfg Config, stderr io.Writer) *Logger {
	path := LogPath(cfg)
	console := slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		l := &Logger{Logger: slog.New(console)}
		l.Warn("no log file", "path", path, "err", err)
		return l
	}
	file := &lumberjack.Logger{Filename: path, MaxSize: 10, MaxBackups: 5, MaxAge: 30}
	toFile := slog.NewTextHandler(file, &slog.HandlerOptions{Level: slog.LevelDebug})
	return &Logger{Logger: slog.New(teeHandler{console, toFile}), file: file}
}

// Close closes the log file.
func (l *Logger) Close() error {
	if l.file == nil {
		return nil
	}
	return l.file.Close()
}

// teeHandler sends each record to every handler that is enabled for it.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, level) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("app: log: %w", err)
	}
	return nil
}

func (t teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}
