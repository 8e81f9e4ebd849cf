// Package servertest holds a scripted K3 for tests of the packages above
// the server (app, web) and the server's external tests: a server.Model
// whose output the test writes and whose every token waits for the test's
// word, so a page or a menu can be read between any two tokens without
// timing them. K3Turn writes such an output (thinking, then an answer) and
// Serve serves it. (The server's internal tests, inside package server,
// keep their twin in scripted_test.go: they cannot import a
// package that imports server.)
package servertest
