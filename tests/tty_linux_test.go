package tests

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal's master and slave, or skips the test.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pty slave: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// runTTY runs glyd with the pty slave as stdout and/or stderr and returns
// its exit code, what reached the terminal, and the other streams.
func runTTY(t *testing.T, dir string, ttyOut, ttyErr bool, args ...string) (code int, tty string, stdout, stderr []byte) {
	t.Helper()
	noteOnce.Do(func() { noteSources("..") })
	m, s := openPTY(t)
	cmd := exec.Command(glydBin, args...)
	cmd.Dir = dir
	var ob, eb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &ob, &eb
	if ttyOut {
		cmd.Stdout = s
	}
	if ttyErr {
		cmd.Stderr = s
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(m) // ends with EIO once the slave is closed
		got <- b
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	s.Close()
	b := <-got
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(b), ob.Bytes(), eb.Bytes()
}

func TestTerminal(t *testing.T) {
	dir := t.TempDir()
	data := sample(2<<20, 10)
	writeFile(t, filepath.Join(dir, "a"), data)

	// Compressed data is not written to a terminal without -f.
	code, tty, _, stderr := runTTY(t, dir, true, false, "-c", "a")
	if code != 1 || tty != "" || !strings.Contains(string(stderr), "terminal") {
		t.Fatalf("-c to a terminal: exit %d, terminal got %d bytes, stderr %q", code, len(tty), stderr)
	}
	checkOnly(t, dir, "a")
	if code, tty, _, _ = runTTY(t, dir, true, false, "-c", "-f", "a"); code != 0 || len(tty) < 100 {
		t.Fatalf("-c -f to a terminal: exit %d, %d bytes", code, len(tty))
	}

	// With stderr a terminal the summary appears there; -q silences it.
	code, tty, _, _ = runTTY(t, dir, false, true, "-k", "a")
	if code != 0 || !strings.Contains(tty, "a: 2.1 MB -> ") || !strings.Contains(tty, "%)") {
		t.Fatalf("summary on a terminal: exit %d, %q", code, tty)
	}
	code, tty, _, _ = runTTY(t, dir, false, true, "-d", "-q", "-f", "a.glyd")
	if code != 0 || tty != "" {
		t.Fatalf("-q on a terminal: exit %d, %q", code, tty)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "a")), data) {
		t.Fatal("round trip changed the data")
	}
}
