// Package app wires Deltafin together at the end of the data flow: it turns
// one Config into the downloader, the engine, the server and the menu bar,
// and runs the CLI subcommands that main.go dispatches to.
//
// It is the only place besides server that logs (log/slog) and the only
// place that knows about the environment: main.go fills a Config from flags
// and environment variables, and every package below takes options.
package app
