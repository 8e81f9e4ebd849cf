// Command gen writes the tiny EAGLE-3.1 drafter (package tinydrafter):
//
//	go run ./internal/tinydrafter/gen testdata/k3-tiny-eagle3
package main

import (
	"fmt"
	"os"

	"github.com/deltafin/deltafin/internal/tinydrafter"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	if err := tinydrafter.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
