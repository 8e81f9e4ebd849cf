// Package servertest holds a scripted K3 for tests of the packages above
// the server (app, web): a server.Model whose output the test writes and
// whose every token waits for the test's word, so a page or a menu can be
// read between any two tokens without timing them. (The server's own
// tests, inside package server, keep their twin in scripted_test.go and
// thinking_test.go: they cannot import a package that imports server.)
package servertest
