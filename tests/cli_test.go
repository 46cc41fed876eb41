// Package tests runs the glyd binary end to end on real files and pipes.
package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var glydBin string

// noteSources stats every Go source of the module so that go test's result
// cache, which tracks the files a test touches, notices when the binary
// built by TestMain would change. It must run inside m.Run (the cache's log
// starts there), so run calls it once.
var noteOnce sync.Once

func noteSources(root string) {
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".s") || d.Name() == "go.mod" || d.Name() == "go.sum" {
			_, _ = os.Stat(p)
		}
		return nil
	})
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "glyd-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	glydBin = filepath.Join(dir, "glyd")
	build := exec.Command("go", "build", "-o", glydBin, "github.com/glyd/glyd/cmd/glyd")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building glyd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr []byte
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stderr %q", r.code, r.stderr)
}

// run runs glyd in dir with stdin (nil: /dev/null; an *os.File is passed as
// it is, anything else arrives through a pipe).
func run(t *testing.T, dir string, stdin any, args ...string) result {
	t.Helper()
	noteOnce.Do(func() { noteSources("..") })
	cmd := exec.Command(glydBin, args...)
	cmd.Dir = dir
	switch in := stdin.(type) {
	case nil:
	case *os.File:
		cmd.Stdin = in
	case []byte:
		cmd.Stdin = bytes.NewReader(in) // not an *os.File: exec uses a pipe
	default:
		t.Fatalf("bad stdin %T", stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running glyd %v: %v", args, err)
	}
	checkNoPanic(t, r)
	return r
}

func checkNoPanic(t *testing.T, r result) {
	t.Helper()
	if bytes.Contains(r.stderr, []byte("goroutine ")) || bytes.Contains(r.stderr, []byte("panic:")) {
		t.Fatalf("glyd panicked: %s", r.stderr)
	}
}

// ok runs glyd and fails the test unless it succeeds.
func ok(t *testing.T, dir string, stdin any, args ...string) result {
	t.Helper()
	r := run(t, dir, stdin, args...)
	if r.code != 0 {
		t.Fatalf("glyd %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// fails runs glyd, expects exit status 1 and one "glyd: " line on stderr
// holding every one of want.
func fails(t *testing.T, dir string, stdin any, args []string, want ...string) result {
	t.Helper()
	r := run(t, dir, stdin, args...)
	if r.code != 1 {
		t.Fatalf("glyd %s: want exit 1, got %v", strings.Join(args, " "), r)
	}
	msg := string(r.stderr)
	if !strings.HasPrefix(msg, "glyd: ") {
		t.Fatalf("glyd %s: stderr %q does not start with \"glyd: \"", strings.Join(args, " "), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("glyd %s: stderr %q does not mention %q", strings.Join(args, " "), msg, w)
		}
	}
	return r
}

// sample makes n bytes that hold compressible text and incompressible
// noise, so streams get both lz and raw blocks.
func sample(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while glyd packs units of blocks into streams read many times")
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(8) == 0 {
			noise := make([]byte, 64<<10+r.IntN(256<<10))
			for i := range noise {
				noise[i] = byte(r.Uint32())
			}
			b.Write(noise)
			continue
		}
		for range 4000 {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(12) == 0 {
				fmt.Fprintf(&b, " %d\n", r.IntN(100000))
			} else {
				b.WriteByte(' ')
			}
		}
	}
	return b.Bytes()[:n]
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// checkOnly fails unless dir holds exactly the named entries: in particular
// no temporary files.
func checkOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %q, want %q", dir, got, names)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("%s holds %q, want %q", dir, got, names)
		}
	}
}

var tiers = []struct {
	name string
	args []string
}{
	{"default", nil},
	{"max", []string{"--max"}},
	{"cold", []string{"--cold"}},
}

func TestRoundTripFiles(t *testing.T) {
	data := sample(3<<20+12345, 1)
	mtime := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "data.bin")
			writeFile(t, in, data)
			if err := os.Chmod(in, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(in, mtime, mtime); err != nil {
				t.Fatal(err)
			}

			r := ok(t, dir, nil, append(tier.args, "data.bin")...)
			if len(r.stdout) != 0 || len(r.stderr) != 0 {
				t.Fatalf("compression printed %q / %q with stderr not a terminal", r.stdout, r.stderr)
			}
			checkOnly(t, dir, "data.bin.glyd")
			fi, err := os.Stat(in + ".glyd")
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mtime) {
				t.Fatalf("compressed file has mode %v mtime %v, want 0640 %v", fi.Mode().Perm(), fi.ModTime(), mtime)
			}
			if fi.Size() >= int64(len(data)) {
				t.Fatalf("compressed %d bytes to %d", len(data), fi.Size())
			}
			var info infoJSON
			if err := json.Unmarshal(ok(t, dir, nil, "info", "--json", "data.bin.glyd").stdout, &info); err != nil {
				t.Fatal(err)
			}
			if info.Tier != tier.name {
				t.Fatalf("info says tier %q, want %q", info.Tier, tier.name)
			}

			ok(t, dir, nil, "-d", "data.bin.glyd")
			checkOnly(t, dir, "data.bin")
			if !bytes.Equal(readFile(t, in), data) {
				t.Fatal("round trip changed the data")
			}
			fi, err = os.Stat(in)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mtime) {
				t.Fatalf("decompressed file has mode %v mtime %v, want 0640 %v", fi.Mode().Perm(), fi.ModTime(), mtime)
			}

			// Explicit output names and thread counts.
			ok(t, dir, nil, append(tier.args, "-k", "-T", "1", "data.bin", "one.glyd")...)
			ok(t, dir, nil, "-d", "-T3", "one.glyd", "back")
			if !bytes.Equal(readFile(t, filepath.Join(dir, "back")), data) {
				t.Fatal("round trip with explicit names changed the data")
			}
			checkOnly(t, dir, "data.bin", "back")
		})
	}
}

func TestRoundTripPipes(t *testing.T) {
	data := sample(2<<20+777, 2)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			dir := t.TempDir()
			// tar c dir | glyd - - > x.glyd
			comp := ok(t, dir, data, append(tier.args, "-", "-")...).stdout
			// No arguments at all: standard input to standard output.
			if again := ok(t, dir, data, tier.args...).stdout; !bytes.Equal(again, comp) {
				t.Fatal("'glyd' and 'glyd - -' differ")
			}
			// glyd -d - - < x.glyd, through a pipe.
			if out := ok(t, dir, comp, "-d", "-", "-").stdout; !bytes.Equal(out, data) {
				t.Fatal("pipe round trip changed the data")
			}
			if out := ok(t, dir, comp, "-d").stdout; !bytes.Equal(out, data) {
				t.Fatal("'glyd -d' from a pipe changed the data")
			}
			// Standard input redirected from a file (seekable path).
			cf := filepath.Join(dir, "x.glyd")
			writeFile(t, cf, comp)
			f, err := os.Open(cf)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if out := ok(t, dir, f, "-d", "-", "-").stdout; !bytes.Equal(out, data) {
				t.Fatal("'glyd -d - - < file' changed the data")
			}
			// Standard input to a named file, and a file to standard output.
			ok(t, dir, data, append(tier.args, "-", "y.glyd")...)
			if out := ok(t, dir, nil, "-dc", "y.glyd").stdout; !bytes.Equal(out, data) {
				t.Fatal("'glyd - y.glyd; glyd -dc y.glyd' changed the data")
			}
			if out := ok(t, dir, nil, "-d", "y.glyd", "-").stdout; !bytes.Equal(out, data) {
				t.Fatal("'glyd -d y.glyd -' changed the data")
			}
			checkOnly(t, dir, "x.glyd", "y.glyd")
		})
	}
}

func TestKeepForceStdout(t *testing.T) {
	dir := t.TempDir()
	data := sample(300<<10, 3)
	writeFile(t, filepath.Join(dir, "a"), data)

	// -k keeps the input.
	ok(t, dir, nil, "-k", "a")
	checkOnly(t, dir, "a", "a.glyd")
	comp := readFile(t, filepath.Join(dir, "a.glyd"))

	// -c writes to standard output and keeps the input.
	r := ok(t, dir, nil, "-c", "a")
	if !bytes.Equal(r.stdout, comp) {
		t.Fatal("-c output differs from the file output")
	}
	checkOnly(t, dir, "a", "a.glyd")

	// Refuse to overwrite, in both directions, leaving everything as it was.
	fails(t, dir, nil, []string{"a"}, "a.glyd", "already exists", "-f")
	fails(t, dir, nil, []string{"-d", "a.glyd"}, "glyd: a:", "already exists")
	checkOnly(t, dir, "a", "a.glyd")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "a.glyd")), comp) || !bytes.Equal(readFile(t, filepath.Join(dir, "a")), data) {
		t.Fatal("a refused run changed a file")
	}

	// -f overwrites: a stale output is replaced.
	writeFile(t, filepath.Join(dir, "a.glyd"), []byte("stale"))
	ok(t, dir, nil, "-f", "-k", "a")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "a.glyd")), comp) {
		t.Fatal("-f did not replace the stale output")
	}
	writeFile(t, filepath.Join(dir, "a"), []byte("stale"))
	ok(t, dir, nil, "-d", "-f", "a.glyd")
	checkOnly(t, dir, "a")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "a")), data) {
		t.Fatal("-d -f did not replace the stale output")
	}

	// -dc keeps the input too.
	ok(t, dir, nil, "a")
	if out := ok(t, dir, nil, "-dc", "a.glyd").stdout; !bytes.Equal(out, data) {
		t.Fatal("-dc changed the data")
	}
	checkOnly(t, dir, "a.glyd")

	// The output may not be the input, even with -f.
	fails(t, dir, nil, []string{"-d", "-f", "a.glyd", "a.glyd"}, "a.glyd", "input")
	checkOnly(t, dir, "a.glyd")
}

func TestVerboseSummary(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), sample(200<<10, 4))
	r := ok(t, dir, nil, "-v", "a")
	if !regexp.MustCompile(`^a: [0-9.]+ kB -> [0-9.]+ kB \([0-9.]+%\)\n$`).Match(r.stderr) {
		t.Fatalf("-v summary %q", r.stderr)
	}
	r = ok(t, dir, nil, "-d", "-v", "a.glyd")
	if !regexp.MustCompile(`^a\.glyd: [0-9.]+ kB -> [0-9.]+ kB\n$`).Match(r.stderr) {
		t.Fatalf("-d -v summary %q", r.stderr)
	}
	if r := ok(t, dir, nil, "-q", "-k", "a"); len(r.stderr) != 0 {
		t.Fatalf("-q printed %q", r.stderr)
	}
}

// corruptions of a valid stream, each with what the error must say.
func corruptions(comp []byte) []struct {
	name string
	data []byte
	want string
} {
	flip := func(i int) []byte {
		b := bytes.Clone(comp)
		b[i] ^= 0x40
		return b
	}
	return []struct {
		name string
		data []byte
		want string
	}{
		{"flipped-payload", flip(len(comp) / 3), "damaged"},
		{"flipped-header", flip(6), "header"},
		{"truncated-half", comp[:len(comp)/2], "truncated"},
		{"truncated-tail", comp[:len(comp)-1], ""},
		{"truncated-header", comp[:10], ""},
		{"empty", nil, ""},
		{"foreign", []byte("this is not a glyd stream but plain text, long enough to have a header\n"), "not a glyd stream"},
		{"trailing-junk", append(bytes.Clone(comp), "junk"...), ""},
	}
}

func TestCorruptInput(t *testing.T) {
	data := sample(2<<20, 5)
	dir := t.TempDir()
	comp := ok(t, dir, data, "-").stdout
	for _, c := range corruptions(comp) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "x.glyd"), c.data)

			// From a file: no output left, input kept.
			fails(t, dir, nil, []string{"-d", "x.glyd"}, "x.glyd", c.want)
			checkOnly(t, dir, "x.glyd")
			fails(t, dir, nil, []string{"-d", "x.glyd", "named"}, "x.glyd", c.want)
			checkOnly(t, dir, "x.glyd")

			// From a pipe, to a file and to standard output.
			fails(t, dir, c.data, []string{"-d", "-", "out"}, "(stdin)", c.want)
			checkOnly(t, dir, "x.glyd")
			fails(t, dir, c.data, []string{"-d"}, "(stdin)", c.want)

			// test and info.
			r := run(t, dir, nil, "test", "x.glyd")
			if r.code == 0 || !bytes.Contains(r.stderr, []byte("x.glyd")) {
				t.Fatalf("test on a corrupt file: %v", r)
			}
			if c.name != "flipped-payload" { // info reads headers, not payloads
				fails(t, dir, nil, []string{"info", "x.glyd"}, "x.glyd")
			}
			if r := run(t, dir, c.data, "test", "-"); r.code == 0 {
				t.Fatalf("test - on a corrupt stream: %v", r)
			}
			checkOnly(t, dir, "x.glyd")
		})
	}
}

// infoJSON mirrors what info --json prints.
type infoJSON struct {
	File           string         `json:"file"`
	Version        int            `json:"version"`
	Tier           string         `json:"tier"`
	UnitSize       int            `json:"unit_size"`
	Units          int            `json:"units"`
	CompressedSize int64          `json:"compressed_size"`
	DecodedSize    int64          `json:"decoded_size"`
	Ratio          float64        `json:"ratio"`
	Blocks         int            `json:"blocks"`
	Codings        map[string]int `json:"codings"`
}

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	data := sample(5<<20+3, 6)
	writeFile(t, filepath.Join(dir, "d"), data)
	ok(t, dir, nil, "--max", "d")
	size := int64(len(readFile(t, filepath.Join(dir, "d.glyd"))))

	var info infoJSON
	out := ok(t, dir, nil, "info", "--json", "d.glyd").stdout
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	const unit, block = 1 << 20, 128 << 10
	wantUnits := (len(data) + unit - 1) / unit
	wantBlocks := (len(data) + block - 1) / block
	if info.DecodedSize != int64(len(data)) || info.CompressedSize != size || info.Tier != "max" ||
		info.Version != 7 || info.UnitSize != unit || info.Units != wantUnits || info.Blocks != wantBlocks {
		t.Fatalf("info --json: %+v; want decoded %d, compressed %d, %d units, %d blocks", info, len(data), size, wantUnits, wantBlocks)
	}
	if info.Codings["lz"] == 0 || info.Codings["raw"] == 0 || info.Codings["lz"]+info.Codings["raw"] != info.Blocks {
		t.Fatalf("block codings %v for %d blocks of text and noise", info.Codings, info.Blocks)
	}
	if r := float64(info.DecodedSize) / float64(info.CompressedSize); r-info.Ratio > 1e-9 || info.Ratio-r > 1e-9 {
		t.Fatalf("ratio %v, want %v", info.Ratio, r)
	}

	text := string(ok(t, dir, nil, "info", "d.glyd").stdout)
	for _, w := range []string{"d.glyd", "max", "1.0 MiB", "MB", fmt.Sprintf("units       %d", wantUnits), "lz", "raw"} {
		if !strings.Contains(text, w) {
			t.Fatalf("info text lacks %q:\n%s", w, text)
		}
	}
	// From standard input too.
	var info2 infoJSON
	if err := json.Unmarshal(ok(t, dir, readFile(t, filepath.Join(dir, "d.glyd")), "info", "--json", "-").stdout, &info2); err != nil {
		t.Fatal(err)
	}
	if info2.DecodedSize != info.DecodedSize || info2.Blocks != info.Blocks {
		t.Fatalf("info - %+v differs from info FILE %+v", info2, info)
	}
}

func TestTestCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), sample(1<<20, 7))
	ok(t, dir, nil, "-k", "a")
	comp := readFile(t, filepath.Join(dir, "a.glyd"))
	if out := string(ok(t, dir, nil, "test", "a.glyd").stdout); out != "a.glyd: OK\n" {
		t.Fatalf("test printed %q", out)
	}
	if out := string(ok(t, dir, comp, "test", "-").stdout); out != "(stdin): OK\n" {
		t.Fatalf("test - printed %q", out)
	}
	// A flipped byte anywhere in the payload is caught.
	for _, off := range []int{100, len(comp) / 2, len(comp) - 500} {
		b := bytes.Clone(comp)
		b[off] ^= 1
		writeFile(t, filepath.Join(dir, "bad.glyd"), b)
		r := run(t, dir, nil, "test", "a.glyd", "bad.glyd")
		if r.code != 1 || string(r.stdout) != "a.glyd: OK\n" || !bytes.HasPrefix(r.stderr, []byte("glyd: bad.glyd: ")) {
			t.Fatalf("test with byte %d flipped: stdout %q, %v", off, r.stdout, r)
		}
	}
}

func TestRouting(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "info"), sample(10<<10, 8))
	// "info FILE" is the info command...
	fails(t, dir, nil, []string{"info", "nosuch.glyd"}, "nosuch.glyd", "no such file")
	// ...while a file named info compresses through an explicit command or path.
	ok(t, dir, nil, "compress", "-k", "info")
	ok(t, dir, nil, "-k", "-f", "./info")
	checkOnly(t, dir, "info", "info.glyd")
	if r := ok(t, dir, nil, "info", "info.glyd"); !bytes.Contains(r.stdout, []byte("tier")) {
		t.Fatalf("info printed %q", r.stdout)
	}
	if r := ok(t, dir, nil, "test", "info.glyd"); string(r.stdout) != "info.glyd: OK\n" {
		t.Fatalf("test printed %q", r.stdout)
	}
	if r := ok(t, dir, nil, "--help"); !bytes.Contains(r.stdout, []byte("info")) {
		t.Fatalf("--help printed %q", r.stdout)
	}
	if r := ok(t, dir, nil, "--version"); !bytes.HasPrefix(r.stdout, []byte("glyd ")) {
		t.Fatalf("--version printed %q", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain"), []byte("hello"))
	writeFile(t, filepath.Join(dir, "x.glyd"), []byte("hello"))
	fails(t, dir, nil, []string{"-d", "plain"}, "plain", "suffix")
	fails(t, dir, nil, []string{"nosuch"}, "nosuch", "no such file")
	fails(t, dir, nil, []string{"-d", "nosuch.glyd"}, "nosuch.glyd", "no such file")
	fails(t, dir, nil, []string{"--max", "--cold", "plain"}, "--max", "--cold")
	fails(t, dir, nil, []string{"-T", "-1", "plain"}, "-1")
	fails(t, dir, nil, []string{"-c", "plain", "out"}, "-c")
	fails(t, dir, nil, []string{"x.glyd"}, "x.glyd", "suffix")
	fails(t, dir, nil, []string{"--bogus"}, "--bogus")
	fails(t, dir, nil, []string{"."}, "directory")
	fails(t, dir, nil, []string{"plain", "no/such/dir/out"}, "no/such/dir/out")
	checkOnly(t, dir, "plain", "x.glyd")
}

// An interrupted run leaves neither the output nor a temporary file.
func TestInterruptRemovesOutput(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(glydBin, "-", "out.glyd")
	cmd.Dir = dir
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Feed enough for units to be written, then stall with stdin open.
	if _, err := w.Write(sample(3<<20, 9)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		es, _ := os.ReadDir(dir)
		if len(es) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no temporary output appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	w.Close()
	if err == nil {
		t.Fatal("glyd exited 0 after SIGINT")
	}
	checkOnly(t, dir)
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestEmptyInput(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e"), nil)
	ok(t, dir, nil, "e")
	ok(t, dir, nil, "-d", "e.glyd")
	if b := readFile(t, filepath.Join(dir, "e")); len(b) != 0 {
		t.Fatalf("empty file came back as %d bytes", len(b))
	}
	comp := ok(t, dir, []byte{}, "-").stdout
	if out := ok(t, dir, comp, "-d").stdout; len(out) != 0 {
		t.Fatalf("empty stream came back as %d bytes", len(out))
	}
}

// GLYD_CORPUS, when set, names a directory whose every file goes through
// every tier, by file and by pipe.
func TestCorpus(t *testing.T) {
	root := os.Getenv("GLYD_CORPUS")
	if root == "" {
		t.Skip("GLYD_CORPUS not set")
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files under %s", root)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		data := readFile(t, f)
		for _, tier := range tiers {
			t.Run(rel+"/"+tier.name, func(t *testing.T) {
				dir := t.TempDir()
				ok(t, dir, nil, append(tier.args, "-k", f, "c.glyd")...)
				ok(t, dir, nil, "-d", "-k", "c.glyd", "back")
				if !bytes.Equal(readFile(t, filepath.Join(dir, "back")), data) {
					t.Fatal("file round trip changed the data")
				}
				ok(t, dir, nil, "test", "c.glyd")
				comp := ok(t, dir, data, tier.args...).stdout
				if !bytes.Equal(comp, readFile(t, filepath.Join(dir, "c.glyd"))) {
					t.Fatal("pipe and file compression differ")
				}
				if out := ok(t, dir, comp, "-d").stdout; !bytes.Equal(out, data) {
					t.Fatal("pipe round trip changed the data")
				}
			})
		}
	}
}
