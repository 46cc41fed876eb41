package chunkstore

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashContent is what the child puts under name: deterministic, so the
// parent can check it after the crash. Consecutive names are versions of
// each other, so deltas and dedup are in play when the kill lands.
func crashContent(i int) []byte {
	return version(256<<10+i*1000, i%5+1)
}

// TestCrashDuringPut kills a putting process (kill -9) at random instants,
// reopens the store each time, and checks that every object whose Put had
// returned is intact and that the store verifies.
func TestCrashDuringPut(t *testing.T) {
	if dir := os.Getenv("GLYD_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("GLYD_CRASH_LOG"), os.Getenv("GLYD_CRASH_ROUND"))
		return
	}
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	log := filepath.Join(t.TempDir(), "returned")
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	r := rand.New(rand.NewPCG(7, 7))
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashDuringPut$")
		cmd.Env = append(os.Environ(), "GLYD_CRASH_CHILD="+dir, "GLYD_CRASH_LOG="+log, fmt.Sprint("GLYD_CRASH_ROUND=", round))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+r.IntN(1200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: store does not open after kill -9: %v\n%s", round, err, out.String())
		}
		names := committed(readLines(t, log))
		for _, name := range names {
			var i int
			fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &i)
			if got := get(t, s, name); !bytes.Equal(got, crashContent(i)) {
				t.Fatalf("round %d: object %s, whose put returned, is damaged", round, name)
			}
		}
		rep, err := s.Verify()
		if err != nil || len(rep.Damaged) != 0 {
			t.Fatalf("round %d: verify: %+v %v", round, rep.Damaged, err)
		}
		if _, err := s.GC(); err != nil {
			t.Fatalf("round %d: gc: %v", round, err)
		}
		s.Close()
		t.Logf("round %d: %d objects committed so far", round, len(names))
	}
	if len(committed(readLines(t, log))) == 0 {
		t.Fatal("no put ever completed: the kill came too early to test anything")
	}
}

// committed returns the names whose put returned, less those the child
// had started to delete ("rm NAME" is logged before the delete).
func committed(lines []string) []string {
	gone := map[string]bool{}
	for _, l := range lines {
		if n, ok := strings.CutPrefix(l, "rm "); ok {
			gone[n] = true
		}
	}
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "rm ") && !gone[l] {
			out = append(out, l)
		}
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		out = append(out, sc.Text())
	}
	return out
}

// crashChild puts objects until it is killed, logging each name (synced)
// only after its Put returned.
func crashChild(dir, log, round string) {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(2)
	}
	lf, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(2)
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("r%s-%d", round, i)
		if _, err := s.Put(name, bytes.NewReader(crashContent(i))); err != nil {
			fmt.Println("child put:", err)
			os.Exit(2)
		}
		fmt.Fprintln(lf, name)
		lf.Sync()
		if i%4 == 3 { // deletes race the kill too
			victim := fmt.Sprintf("r%s-%d", round, i-2)
			fmt.Fprintln(lf, "rm", victim)
			lf.Sync()
			s.Delete(victim)
		}
	}
}
