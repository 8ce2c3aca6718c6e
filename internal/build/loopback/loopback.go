// Package loopback hands out TCP ports on 127.0.0.1 for the upstream
// binaries the proof (and so `fleet validate`) and the real-controller
// suite run as processes (composition functions, etcd, kube-apiserver,
// Flux's controllers).
//
// A port found by binding port 0 and closing the listener is free only
// until the kernel hands it out again, and it does: to the next listener
// that binds port 0 (an httptest server, the registry) in this or another
// process, before the binary it was meant for has bound it. That happened
// in CI on 27 Nov 2026: the hub's etcd lost its port to another test's HTTP
// server, and kube-apiserver spoke gRPC to that server until it gave up.
//
// So a port here is taken outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), which neither binding port 0 nor an
// outgoing connection uses (below it where there is room); it is never
// handed out twice by one Allocator; and it is locked (flock on a file per
// port, under a directory per user) for the life of the process, so two of
// the user's processes on one machine never share one. A port something
// else listens on already is skipped.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lowest is the lowest port handed out: below it are well-known and
// registered services more likely to be listening.
const lowest = 10000

// Allocator hands out ports in [lo, hi) on 127.0.0.1.
type Allocator struct {
	lo, hi  int
	lockDir string

	mu    sync.Mutex
	next  int
	locks map[int]*os.File
}

// NewAllocator hands out ports in [lo, hi), starting at start, locked by
// files in lockDir.
func NewAllocator(lo, hi, start int, lockDir string) (*Allocator, error) {
	if lo <= 0 || hi > 65536 || lo >= hi {
		return nil, fmt.Errorf("port range [%d, %d) is empty or outside 1-65535", lo, hi)
	}
	if start < lo || start >= hi {
		return nil, fmt.Errorf("start port %d is outside [%d, %d)", start, lo, hi)
	}
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return nil, fmt.Errorf("port locks: %w", err)
	}
	return &Allocator{lo: lo, hi: hi, lockDir: lockDir, next: start, locks: map[int]*os.File{}}, nil
}

// Port returns a port no one listens on, that this Allocator has not
// handed out before and that no other process holds the lock of.
func (a *Allocator) Port() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range a.hi - a.lo {
		p := a.next
		a.next++
		if a.next == a.hi {
			a.next = a.lo
		}
		if _, given := a.locks[p]; given {
			continue
		}
		lock, err := a.lock(p)
		if err != nil {
			return 0, err
		}
		if lock == nil {
			continue // another process holds it
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			lock.Close() // someone else listens there; leave it to them
			continue
		}
		if err := l.Close(); err != nil {
			lock.Close()
			return 0, fmt.Errorf("release port %d: %w", p, err)
		}
		a.locks[p] = lock
		return p, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d) on 127.0.0.1", a.lo, a.hi)
}

// lock takes port p's lock file without waiting; nil when another process
// holds it.
func (a *Allocator) lock(p int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(a.lockDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock port %d: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock port %d: %w", p, err)
	}
	return f, nil
}

// Range returns the ports to hand out given ip_local_port_range's content
// ("32768\t60999\n"): from lowest up to the ephemeral range, or else above
// it, whichever holds a thousand ports (far more than a run uses: the
// real-controller suite takes about a hundred); on a machine whose
// ephemeral range leaves neither, or whose range cannot be read, every
// port from lowest up, where only the kernel's own picks can race.
func Range(ipLocalPortRange string) (lo, hi int) {
	const enough = 1000
	f := strings.Fields(ipLocalPortRange)
	if len(f) == 2 {
		first, err1 := strconv.Atoi(f[0])
		last, err2 := strconv.Atoi(f[1])
		switch {
		case err1 != nil || err2 != nil || first > last:
		case first-lowest >= enough:
			return lowest, first
		case 65535-last >= enough:
			return last + 1, 65536
		}
	}
	return lowest, 65536
}

var (
	defaultOnce sync.Once
	defaultA    *Allocator
	defaultErr  error
)

// Port returns a port from this process's Allocator: outside the kernel's
// ephemeral range (Range), from a random start so processes seldom probe
// the same ports, locked under the temporary directory (one directory per
// user: another user's could not be written).
func Port() (int, error) {
	defaultOnce.Do(func() {
		b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range") // unread: Range falls back
		lo, hi := Range(string(b))
		defaultA, defaultErr = NewAllocator(lo, hi, lo+rand.IntN(hi-lo), filepath.Join(os.TempDir(), "eks-fleet-loopback-ports-"+strconv.Itoa(os.Getuid())))
	})
	if defaultErr != nil {
		return 0, defaultErr
	}
	return defaultA.Port()
}
