// Package flock takes the exclusive advisory locks that keep two Deltafin
// processes off one data directory (app.LockDataDir) and one mirror
// (downloader).
package flock
