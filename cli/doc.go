// Package cli is the deltafin command's subcommands, one file each: its
// flags, parsed into the app.Config that main.go's environment filled, then
// its body. main.go holds only the command table and calls Main.
//
// The bodies drive the product packages through their public API: models
// are opened with app.OpenModel (the one way every entry point opens one),
// mirrors with app.OpenMirror / app.OpenPlan, and benchmarks live in
// package bench.
package cli
