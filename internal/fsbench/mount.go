package fsbench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/glyd/glyd/internal/mountinfo"
)

// How long a mount may take to appear, and an unmounted filesystem's
// process to exit (glydfs syncs and closes its store first).
const (
	mountTimeout = 2 * time.Minute
	exitTimeout  = 5 * time.Minute
)

// mount is one FUSE filesystem the benchmark started: a child process in
// the foreground (glydfs -f, squashfuse -f) serving dir.
type mount struct {
	kind string // "glydfs" or "squashfuse"
	dir  string // absolute mount point
	log  string // the process's standard output and error
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

// mountGlydfs mounts the store (created when empty) at dir.
func (b *bench) mountGlydfs(store, dir string) (*mount, error) {
	return b.startMount("glydfs", dir, b.glydfs, "-f", store, dir)
}

// mountSquash mounts a squashfs image at dir with squashfuse.
func (b *bench) mountSquash(img, dir string) (*mount, error) {
	return b.startMount("squashfuse", dir, "squashfuse", "-f", img, dir)
}

// startMount starts a FUSE server in the foreground and waits until its
// mount shows in /proc/self/mountinfo. The server gets its own process
// group, so a Ctrl-C reaches only the benchmark, which unmounts in order.
func (b *bench) startMount(kind, dir, bin string, args ...string) (*mount, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if b.ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if mounted(dir) {
		return nil, fmt.Errorf("%s: something is mounted there already", dir)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("interrupted")
	}
	b.nlog++
	m := &mount{kind: kind, dir: dir, log: filepath.Join(b.cfg.work, "logs", fmt.Sprintf("%02d-%s.log", b.nlog, kind)), done: make(chan struct{})}
	b.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(m.log), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(m.log)
	if err != nil {
		return nil, err
	}
	defer lf.Close() // the child holds its own copy
	m.cmd = exec.Command(bin, args...)
	m.cmd.Stdout, m.cmd.Stderr = lf, lf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("interrupted")
	}
	if err := m.cmd.Start(); err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("starting %s: %w", kind, err)
	}
	b.mounts = append(b.mounts, m)
	b.mu.Unlock()
	go func() {
		m.err = m.cmd.Wait()
		close(m.done)
	}()

	deadline := time.Now().Add(mountTimeout)
	for !mounted(dir) {
		select {
		case <-m.done:
			b.forget(m)
			return nil, fmt.Errorf("%s %s exited before its mount appeared (%v): %s", kind, strings.Join(args, " "), m.err, logTail(m.log))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("%s: no mount on %s after %v: %s", kind, dir, mountTimeout, logTail(m.log))
			b.unmount(m)
			return nil, err
		}
	}
	return m, nil
}

// unmount unmounts m with fusermount3 -u (retrying while the mount is
// busy, lazily with -z as a last resort) and waits for its process to
// exit. A process that does not exit in exitTimeout is killed. The error
// says what went wrong, including a nonzero exit of the server.
func (b *bench) unmount(m *mount) error {
	defer b.forget(m)
	var errs []error
	if mounted(m.dir) {
		var last string
		for i := 0; i < 50 && mounted(m.dir); i++ {
			out, err := exec.Command("fusermount3", "-u", m.dir).CombinedOutput()
			if err == nil {
				break
			}
			last = strings.TrimSpace(string(out))
			time.Sleep(100 * time.Millisecond)
		}
		if mounted(m.dir) {
			errs = append(errs, fmt.Errorf("%s on %s would not unmount (%s); unmounted lazily", m.kind, m.dir, last))
			exec.Command("fusermount3", "-u", "-z", m.dir).Run()
		}
	}
	select {
	case <-m.done:
	case <-time.After(exitTimeout):
		errs = append(errs, fmt.Errorf("%s did not exit %v after its unmount; killed", m.kind, exitTimeout))
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			m.cmd.Process.Kill()
			<-m.done
		}
	}
	if m.err != nil {
		errs = append(errs, fmt.Errorf("%s exited with %v after unmounting %s: %s", m.kind, m.err, m.dir, logTail(m.log)))
	}
	return errors.Join(errs...)
}

func (b *bench) forget(m *mount) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.mounts {
		if x == m {
			b.mounts = append(b.mounts[:i], b.mounts[i+1:]...)
			return
		}
	}
}

// unmountAll unmounts every mount still registered, newest first.
func (b *bench) unmountAll() error {
	var errs []error
	for {
		b.mu.Lock()
		if len(b.mounts) == 0 {
			b.mu.Unlock()
			return errors.Join(errs...)
		}
		m := b.mounts[len(b.mounts)-1]
		b.mu.Unlock()
		if err := b.unmount(m); err != nil {
			errs = append(errs, err)
		}
	}
}

// abandon is the interrupt path: refuse new mounts, detach every mount at
// once (lazily: the benchmark may hold files open in them) and give the
// servers a few seconds to exit.
func (b *bench) abandon() {
	b.mu.Lock()
	b.closed = true
	ms := append([]*mount(nil), b.mounts...)
	b.mu.Unlock()
	for _, m := range ms {
		if mounted(m.dir) {
			if exec.Command("fusermount3", "-u", m.dir).Run() != nil {
				exec.Command("fusermount3", "-u", "-z", m.dir).Run()
			}
		}
	}
	deadline := time.After(15 * time.Second)
	for _, m := range ms {
		select {
		case <-m.done:
		case <-deadline:
			return
		}
	}
}

// logTail is the last lines of a server's log, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	if s == "" {
		return "(empty log)"
	}
	return strings.ReplaceAll(s, "\n", " / ")
}

// mountEntry is one mount (internal/mountinfo).
type mountEntry = mountinfo.Entry

func readMounts() []mountEntry { return mountinfo.Read() }

// mounted says whether something is mounted on dir.
func mounted(dir string) bool {
	for _, e := range readMounts() {
		if e.Point == dir {
			return true
		}
	}
	return false
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) []string {
	var out []string
	for _, e := range readMounts() {
		if e.Point == dir || strings.HasPrefix(e.Point, dir+"/") {
			out = append(out, e.Point)
		}
	}
	return out
}

// fsOf is the mount holding path: the entry with the longest mount point
// that is path or one of its parents.
func fsOf(path string) mountEntry {
	var best mountEntry
	for _, e := range readMounts() {
		if (path == e.Point || strings.HasPrefix(path, strings.TrimSuffix(e.Point, "/")+"/")) && len(e.Point) >= len(best.Point) {
			best = e
		}
	}
	return best
}
