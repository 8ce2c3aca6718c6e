package loopback

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBelow(t *testing.T) {
	cases := map[string]struct {
		reason  string
		content string
		lo, hi  int
		wantErr bool
	}{
		"Default": {
			reason:  "Linux's default range leaves 10000 up to 32768.",
			content: "32768\t60999\n",
			lo:      10000, hi: 32768,
		},
		"Widened": {
			reason:  "A range widened down to 15000 leaves 10000 up to 15000.",
			content: "15000 65000",
			lo:      10000, hi: 15000,
		},
		"TooLow": {
			reason:  "A range starting at 1024 leaves nothing below it to hand out.",
			content: "1024\t65000\n",
			wantErr: true,
		},
		"OneField": {
			reason:  "The file holds two ports.",
			content: "32768\n",
			wantErr: true,
		},
		"NotANumber": {
			reason:  "The first field is a port number.",
			content: "low high",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lo, hi, err := Below(tc.content)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("%s\nBelow(%q): error %v, want error %v", tc.reason, tc.content, err, tc.wantErr)
			}
			if diff := cmp.Diff([2]int{tc.lo, tc.hi}, [2]int{lo, hi}); !tc.wantErr && diff != "" {
				t.Errorf("%s\nBelow(%q): -want +got:\n%s", tc.reason, tc.content, diff)
			}
		})
	}
}

// busyRange returns n consecutive ports below the ephemeral range that
// nothing listens on now, so a test can reason about which it gets.
func busyRange(t *testing.T, n int) int {
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
	p := busyRange(t, 4)
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

func TestPortIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	_, ephemeral, err := Below(string(b))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= ephemeral {
			t.Errorf("Port() = %d, want one in [%d, %d): below the ephemeral range", p, lowest, ephemeral)
		}
		if seen[p] {
			t.Errorf("Port() handed out %d twice", p)
		}
		seen[p] = true
	}
}
