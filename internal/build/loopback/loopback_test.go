package loopback

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRange(t *testing.T) {
	// Linux's default range is 32768-60999.
	cases := map[string]struct {
		reason  string
		content string
		lo, hi  int
	}{
		"Default":    {reason: "the default range leaves 10000 up to 32768", content: "32768\t60999\n", lo: 10000, hi: 32768},
		"Widened":    {reason: "a range widened down to 15000 leaves 10000 up to 15000", content: "15000 65000", lo: 10000, hi: 15000},
		"LowRange":   {reason: "a range of 1024-49151 leaves nothing below it: above it, then", content: "1024\t49151\n", lo: 49152, hi: 65536},
		"WholeRange": {reason: "a range of every port leaves no room: every port from 10000", content: "1024 65535", lo: 10000, hi: 65536},
		"OneField":   {reason: "a file of one port is not understood: every port from 10000", content: "32768\n", lo: 10000, hi: 65536},
		"Unread":     {reason: "no file (another kernel): every port from 10000", content: "", lo: 10000, hi: 65536},
		"NotANumber": {reason: "fields that are not ports are not understood", content: "low high", lo: 10000, hi: 65536},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lo, hi := Range(tc.content)
			if diff := cmp.Diff([2]int{tc.lo, tc.hi}, [2]int{lo, hi}); diff != "" {
				t.Errorf("%s\nRange(%q): -want +got:\n%s", tc.reason, tc.content, diff)
			}
		})
	}
}

// freeRun returns n consecutive ports below the ephemeral range that
// nothing listens on now, so a test can reason about which it gets.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for p := 20000; p < 32000; p += n {
		free := true
		for q := p; q < p+n && free; q++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			return p
		}
	}
	t.Fatal("no free run of ports")
	return 0
}

func ports(t *testing.T, a *Allocator, n int) []int {
	t.Helper()
	var got []int
	for range n {
		p, err := a.Port()
		if err != nil {
			t.Fatalf("Port: %v", err)
		}
		got = append(got, p)
	}
	return got
}

func TestAllocator(t *testing.T) {
	p := freeRun(t, 4)
	cases := map[string]struct {
		reason string
		// listen is the ports something listens on during the test.
		listen []int
		// other is how many ports another process's Allocator over the
		// same range and locks takes first, from the range's start.
		other int
		start int
		take  int
		want  []int
	}{
		"InOrderAndWrapping": {
			reason: "Ports come from the start up, wrap to the range's bottom, and none twice.",
			start:  p + 2, take: 4,
			want: []int{p + 2, p + 3, p, p + 1},
		},
		"SkipsListened": {
			reason: "A port something listens on is skipped: the binary could not bind it.",
			listen: []int{p + 1},
			start:  p, take: 3,
			want: []int{p, p + 2, p + 3},
		},
		"SkipsLockedByAnotherProcess": {
			reason: "A port another process holds the lock of is skipped, though it is not yet bound: that process's binary is about to bind it.",
			other:  2,
			start:  p, take: 2,
			want: []int{p + 2, p + 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, q := range tc.listen {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			if tc.other > 0 {
				o, err := NewAllocator(p, p+4, p, dir)
				if err != nil {
					t.Fatal(err)
				}
				ports(t, o, tc.other)
			}
			a, err := NewAllocator(p, p+4, tc.start, dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ports(t, a, tc.take)); diff != "" {
				t.Errorf("%s\nports: -want +got:\n%s", tc.reason, diff)
			}
			if q, err := a.Port(); err == nil {
				t.Errorf("%s\nPort after the range is used up: %d, want an error", tc.reason, q)
			}
		})
	}
}

func TestNewAllocatorErrors(t *testing.T) {
	cases := map[string]struct {
		reason        string
		lo, hi, start int
	}{
		"Empty":        {reason: "An empty range hands out nothing.", lo: 20000, hi: 20000, start: 20000},
		"AbovePorts":   {reason: "Ports end at 65535.", lo: 65000, hi: 70000, start: 65000},
		"StartOutside": {reason: "The start lies in the range.", lo: 20000, hi: 20010, start: 20010},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewAllocator(tc.lo, tc.hi, tc.start, t.TempDir()); err == nil {
				t.Errorf("%s\nNewAllocator(%d, %d, %d): no error", tc.reason, tc.lo, tc.hi, tc.start)
			}
		})
	}
}

func TestPortIsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := Range(string(b))
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Errorf("Port() = %d, want one in [%d, %d): outside the ephemeral range %q", p, lo, hi, b)
		}
		if seen[p] {
			t.Errorf("Port() handed out %d twice", p)
		}
		seen[p] = true
	}
}
