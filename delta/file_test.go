package delta

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/glyd/glyd/codec"
)

func TestEncodeFileRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	old := randText(r, 3<<20)
	// the new version: edits, a block moved from the end to the front, and
	// some new text
	nw := append(bytes.Clone(old[2<<20:2<<20+300<<10]), old...)
	for i := 0; i < len(nw); i += 200 << 10 {
		copy(nw[i:], "EDIT")
	}
	nw = append(nw, randText(r, 100<<10)...)
	for _, tier := range []codec.Tier{codec.Default, codec.Max} {
		var buf bytes.Buffer
		if err := EncodeFile(&buf, old, bytes.NewReader(nw), FileOptions{Tier: tier}); err != nil {
			t.Fatal(err)
		}
		alone, _ := codec.Encode(nw, codec.Options{Tier: tier})
		if buf.Len()*5 > len(alone) {
			t.Errorf("tier %v: %d bytes against the base, %d alone", tier, buf.Len(), len(alone))
		}
		// random access with the base
		f, err := codec.OpenBytes(buf.Bytes(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if !f.NeedsBase() {
			t.Fatal("stream does not say it needs a base")
		}
		if _, err := f.ReadAt(make([]byte, 10), 0); !errors.Is(err, codec.ErrFormat) {
			t.Fatalf("read without base: %v", err)
		}
		if err := f.SetBase(bytes.NewReader(old), int64(len(old))); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, f.Size())
		if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, nw) {
			t.Fatalf("tier %v: ReadAt with base: %v", tier, err)
		}
		// streaming with the base
		got, err = io.ReadAll(codec.NewReaderBase(bytes.NewReader(buf.Bytes()), 2, bytes.NewReader(old), int64(len(old))))
		if err != nil || !bytes.Equal(got, nw) {
			t.Fatalf("stream with base: %v", err)
		}
		// the wrong base is refused, not decoded
		wrong := bytes.Clone(old)
		wrong[12345] ^= 1
		if err := f.SetBase(bytes.NewReader(wrong), int64(len(wrong))); err == nil || !bytes.Contains([]byte(err.Error()), []byte("wrong base")) {
			t.Fatalf("wrong base: %v", err)
		}
		if _, err := io.ReadAll(codec.NewReader(bytes.NewReader(buf.Bytes()), 1)); err == nil {
			t.Fatal("stream reader without a base accepted a based stream")
		}
	}
}
