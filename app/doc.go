// Package app wires Deltafin together at the end of the data flow: it turns
// one Config into the downloader, the engine, the server and the menu bar.
// OpenModel is the one way a model is opened (deltafin run and serve in
// package cli, and the menu bar's server); a folder a mirror wrote is read
// through its presence maps (folder.go), and an install holding bytes that
// are not verified is refused (ErrUnverified) unless Config.AllowUnverified.
// The CLI subcommands' flags and bodies live in package cli.
//
// The menu-bar app (`deltafin` with no arguments) is one App struct:
// BuildMenu renders its State into a plain Menu value, the tray (systray:
// Cocoa on macOS, StatusNotifierItem + com.canonical.dbusmenu over the
// session bus on Linux) mirrors that value and forwards clicks to
// App.Click, and the actions call the downloader, warmer and server
// through the interfaces in services.go. Platform seams (idle time, AC
// power, keep-awake, launch at login, clipboard) have one portable file
// and small _darwin/_linux files; the darwin ones run only on a Mac and
// their parsers are tested everywhere.
//
// It is the only place besides server that logs (log/slog) and the only
// place that knows about the environment: DefaultConfig fills a Config from
// environment variables, cli parses flags into it, and every package below
// takes options.
package app
