package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mainEnv makes the test binary run deltafin's main instead of the tests, so
// process tests start real deltafin processes.
const mainEnv = "DELTAFIN_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// deltafin is one deltafin process with its own environment (no session
// bus unless env gives one) whose stderr lines arrive on lines.
type deltafin struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan error
}

func startDeltafin(t *testing.T, env map[string]string, args ...string) *deltafin {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{mainEnv + "=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	d := &deltafin{cmd: cmd, lines: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range d.lines {
		}
	})
	return d
}

// waitLine returns the first stderr line matching re (its submatches), or
// fails when the process exits first.
func (d *deltafin) waitLine(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(2 * time.Minute)
	var seen []string
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				t.Fatalf("deltafin exited before printing %q; it printed:\n%v", re, seen)
			}
			seen = append(seen, l)
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line %q in 2 minutes; it printed:\n%v", re, seen)
		}
	}
}

// exit waits for the process to end and returns its exit code and the rest
// of its stderr.
func (d *deltafin) exit(t *testing.T) (int, []string) {
	t.Helper()
	var rest []string
	for l := range d.lines {
		rest = append(rest, l)
	}
	err := <-d.done
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), rest
	}
	require.NoError(t, err)
	return 0, rest
}

func getOK(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// TestHeadlessAppAndOneInstance: without a session bus the app runs
// headless on the demo model and says where its API is; a second app or
// serve on the same data directory says who runs and exits non-zero; after
// a kill -9 the lock is taken over.
func TestHeadlessAppAndOneInstance(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"DELTAFIN_HOME": data, "DELTAFIN_PORT": "0"}
	first := startDeltafin(t, env)
	m := first.waitLine(t, `^Deltafin is running without a menu bar \(.*DBUS_SESSION_BUS_ADDRESS is unset.*\); the API is at (http://127\.0\.0\.1:\d+)/v1`)
	url := m[1]
	getOK(t, url+"/v1/models")

	for _, args := range [][]string{nil, {"serve", "--port", "0"}} {
		second := startDeltafin(t, env, args...)
		code, lines := second.exit(t)
		require.Equal(t, 1, code)
		require.Contains(t, lines, "deltafin: Deltafin is already running (pid "+strconv.Itoa(first.cmd.Process.Pid)+", "+url+")")
	}

	require.NoError(t, first.cmd.Process.Kill()) // kill -9: no chance to clean up
	first.exit(t)
	third := startDeltafin(t, env, "serve", "--port", "0")
	m = third.waitLine(t, `msg=serving .*base_url=(http://127\.0\.0\.1:\d+)/v1`)
	getOK(t, m[1]+"/health")
	require.NoError(t, third.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := third.exit(t)
	require.Equal(t, 0, code)
}

// TestAppTakesTheNextFreePort: a port in use by another program moves the
// app to the next free one, which it shows.
func TestAppTakesTheNextFreePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	d := startDeltafin(t, map[string]string{"DELTAFIN_HOME": t.TempDir()}, "app", "--port", strconv.Itoa(taken))
	m := d.waitLine(t, `the API is at http://127\.0\.0\.1:(\d+)/v1`)
	port, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Greater(t, port, taken)
	require.LessOrEqual(t, port, taken+20)
	getOK(t, "http://127.0.0.1:"+m[1]+"/v1/models")
}

// TestServeRefusesRAMAboveTheMachine: --ram-gb above physical RAM is
// refused before any weight is read (it used to die out of memory while
// loading).
func TestServeRefusesRAMAboveTheMachine(t *testing.T) {
	d := startDeltafin(t, map[string]string{"DELTAFIN_HOME": t.TempDir()}, "serve", "--port", "0", "--ram-gb", "100000", "--model", "testdata/k3-tiny")
	code, lines := d.exit(t)
	require.Equal(t, 1, code)
	require.Len(t, lines, 1, "refused before loading: no model line")
	require.Regexp(t, `^deltafin: --ram-gb is more than this machine's RAM: --ram-gb 100000, and this machine has [0-9.]+ GB`, lines[0])
}

// TestServeServesTheDemo: deltafin serve with nothing installed serves the
// demo model and says so.
func TestServeServesTheDemo(t *testing.T) {
	data := t.TempDir()
	d := startDeltafin(t, map[string]string{"DELTAFIN_HOME": data}, "serve", "--port", "0")
	d.waitLine(t, `nothing is installed: serving the demo model \(random weights`)
	m := d.waitLine(t, `msg=serving .*base_url=(http://127\.0\.0\.1:\d+)/v1`)
	require.Contains(t, getOK(t, m[1]+"/v1/models"), `"id":"deltafin-demo"`)
	require.Contains(t, getOK(t, m[1]+"/health"), `"description":"the demo model: random weights`)
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	code, rest := d.exit(t)
	require.Equal(t, 0, code)
	for _, l := range rest {
		require.NotContains(t, l, "uri=/health", "health checks stay out of the console")
	}
	// The log file has every line, the /health requests at debug level.
	b, err := os.ReadFile(filepath.Join(data, "logs", "deltafin.log"))
	require.NoError(t, err)
	require.Contains(t, string(b), "serving the demo model")
	require.Regexp(t, `level=DEBUG msg=request method=GET uri=/health status=200`, string(b))
	require.Regexp(t, `level=INFO msg=request method=GET uri=/v1/models status=200`, string(b))
}

// TestServeRefusesATakenPortBeforeLoading: serve binds its port before it
// reads a weight, so a taken port is said at once, with what to do.
func TestServeRefusesATakenPortBeforeLoading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	d := startDeltafin(t, map[string]string{"DELTAFIN_HOME": t.TempDir()}, "serve", "--port", port, "--model", "testdata/k3-tiny")
	code, lines := d.exit(t)
	require.Equal(t, 1, code)
	require.Len(t, lines, 1, "refused before loading: no model line")
	require.Contains(t, lines[0], "listen on 127.0.0.1:"+port+": the port is in use")
	require.Contains(t, lines[0], "use --port to pick another")
}
