// Package golden reads and writes the SHA256SUMS lists that go with the
// golden fixtures of the file formats (codec/testdata/golden,
// packed/testdata/golden): one line per fixture, "SHA-256  size  name", the
// SHA-256 and size of what the fixture decodes to. Fixtures are written
// once, when a format version or coding is added, and every later glyd
// must decode them to the same bytes.
package golden

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Fixture is one line of a SHA256SUMS list.
type Fixture struct {
	Name string // file name within the directory
	Size int    // bytes it decodes to
	Sum  string // hex SHA-256 of those bytes
}

// Line is the list line of fixture name, which decodes to data.
func Line(name string, data []byte) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s  %d  %s\n", hex.EncodeToString(sum[:]), len(data), name)
}

// Write writes the list of dir from its lines.
func Write(dir string, lines []string) error {
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}

// Read reads the list of dir.
func Read(dir string) ([]Fixture, error) {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Fixture
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var fx Fixture
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %s", &fx.Sum, &fx.Size, &fx.Name); err != nil {
			return nil, fmt.Errorf("%s: bad line %q", f.Name(), sc.Text())
		}
		out = append(out, fx)
	}
	return out, sc.Err()
}

// Matches reports whether got is what the fixture decodes to.
func (fx Fixture) Matches(got []byte) bool {
	sum := sha256.Sum256(got)
	return len(got) == fx.Size && hex.EncodeToString(sum[:]) == fx.Sum
}
