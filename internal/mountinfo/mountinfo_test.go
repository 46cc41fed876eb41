package mountinfo

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
41 22 0:38 / /var/tmp/glyd-fsbench-1/mnt rw,nosuid,nodev,relatime shared:20 - fuse.glydfs glydfs:/var/tmp/glyd-fsbench-1/store rw,user_id=0,group_id=0
42 22 0:39 / /tmp/with\040space rw - fuse squashfuse rw
`
	ms := Parse(strings.NewReader(in))
	if len(ms) != 3 {
		t.Fatalf("got %d entries, want 3", len(ms))
	}
	if ms[1].Point != "/var/tmp/glyd-fsbench-1/mnt" || ms[1].FSType != "fuse.glydfs" || ms[1].Source != "glydfs:/var/tmp/glyd-fsbench-1/store" || ms[1].Options != "rw,nosuid,nodev,relatime" || ms[1].Super != "rw,user_id=0,group_id=0" {
		t.Errorf("entry 1 = %+v", ms[1])
	}
	if ms[2].Point != "/tmp/with space" || ms[2].FSType != "fuse" {
		t.Errorf("entry 2 = %+v", ms[2])
	}
	if ms[0].Point != "/" || ms[0].FSType != "ext4" || ms[0].Source != "/dev/vda" {
		t.Errorf("entry 0 = %+v", ms[0])
	}
	for in, want := range map[string]string{`a\040b`: "a b", `a\134b`: `a\b`, `plain`: "plain", `tail\04`: `tail\04`, `end\040`: "end "} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
