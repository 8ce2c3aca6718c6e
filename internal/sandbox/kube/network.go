package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Network is the pod network of an environment: a Linux bridge on the host
// holding HostIP, and one network namespace per pod, joined to the bridge
// by a veth pair and addressed with the IP kwok gave the pod, so each
// process playing a container listens on its own address with its
// default ports, as in a cluster. API servers, the internet stand-in and
// the Git server listen on HostIP, which every pod routes to.
type Network struct {
	Bridge string
	Prefix netip.Prefix // e.g. 10.200.0.0/16
	HostIP netip.Addr   // first address of Prefix, on the bridge
	next   int          // veth names are numbered, never reused

	mu   sync.Mutex
	pods map[string]string // netns -> host-side veth
}

// ipCmd runs ip with args.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewNetwork creates the bridge named name with the first address of
// prefix. Stale namespaces and bridges of an earlier run under the same
// name are removed first.
func NewNetwork(name string, prefix netip.Prefix) (*Network, error) {
	n := &Network{Bridge: name, Prefix: prefix.Masked(), HostIP: prefix.Masked().Addr().Next(), pods: map[string]string{}}
	n.removeStale()
	if err := ipCmd("link", "add", name, "type", "bridge"); err != nil {
		return nil, fmt.Errorf("pod network (needs root and CAP_NET_ADMIN): %w", err)
	}
	if err := ipCmd("addr", "add", fmt.Sprintf("%s/%d", n.HostIP, n.Prefix.Bits()), "dev", name); err != nil {
		return nil, err
	}
	if err := ipCmd("link", "set", name, "up"); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Network) removeStale() { _, _ = RemoveNetwork(n.Bridge) }

// namespacePrefix is what the name of every pod namespace of the network
// whose bridge is named bridge starts with.
func namespacePrefix(bridge string) string { return bridge + "-" }

// NetworkLeftovers lists what of the network whose bridge is named bridge
// exists on this machine: its pod namespaces, their /etc/netns directories
// and the bridge itself, each as "network namespace N", "directory D" or
// "bridge B".
func NetworkLeftovers(bridge string) ([]string, error) {
	var out []string
	b, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], namespacePrefix(bridge)) {
			out = append(out, "network namespace "+f[0])
		}
	}
	entries, err := os.ReadDir("/etc/netns")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading /etc/netns: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), namespacePrefix(bridge)) {
			out = append(out, "directory "+filepath.Join("/etc/netns", e.Name()))
		}
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		out = append(out, "bridge "+bridge)
	}
	return out, nil
}

// RemoveNetwork removes what NetworkLeftovers finds (a network a killed
// process left) and returns it.
func RemoveNetwork(bridge string) ([]string, error) {
	left, err := NetworkLeftovers(bridge)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, l := range left {
		name := l[strings.LastIndex(l, " ")+1:]
		switch {
		case strings.HasPrefix(l, "network namespace "):
			err = ipCmd("netns", "del", name)
		case strings.HasPrefix(l, "directory "):
			err = os.RemoveAll(name)
		default:
			err = ipCmd("link", "del", name)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return left, errors.Join(errs...)
}

// Close removes every pod namespace and the bridge.
func (n *Network) Close() {
	n.mu.Lock()
	names := make([]string, 0, len(n.pods))
	for ns := range n.pods {
		names = append(names, ns)
	}
	n.mu.Unlock()
	for _, ns := range names {
		n.DelPod(ns)
	}
	n.removeStale()
}

// AddPod creates namespace ns addressed ip, routed through the bridge,
// with hosts as its /etc/hosts (ip netns exec bind-mounts /etc/netns/<ns>/
// over /etc).
func (n *Network) AddPod(ns string, ip netip.Addr, hosts []byte) error {
	if !n.Prefix.Contains(ip) {
		return fmt.Errorf("pod IP %s is outside the pod network %s", ip, n.Prefix)
	}
	n.mu.Lock()
	n.next++
	idx := n.next
	n.mu.Unlock()
	host := fmt.Sprintf("%sv%d", n.Bridge, idx)
	if len(host) > 15 {
		host = host[len(host)-15:]
	}
	etc := filepath.Join("/etc/netns", ns)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(etc, "hosts"), hosts, 0o644); err != nil {
		return err
	}
	// No DNS server: names resolve from the hosts file only.
	if err := os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte("nameserver 127.0.0.53\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", host, "master", n.Bridge},
		{"link", "set", host, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s/%d", ip, n.Prefix.Bits()), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", n.HostIP.String()},
	} {
		if err := ipCmd(args...); err != nil {
			n.DelPod(ns)
			return err
		}
	}
	n.mu.Lock()
	n.pods[ns] = host
	n.mu.Unlock()
	return nil
}

// SetHosts replaces namespace ns's /etc/hosts in place (the bind mount of a
// running process keeps seeing the same file).
func (n *Network) SetHosts(ns string, hosts []byte) error {
	f, err := os.OpenFile(filepath.Join("/etc/netns", ns, "hosts"), os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(hosts)
	return err
}

// DelPod removes namespace ns (its veth goes with it).
func (n *Network) DelPod(ns string) {
	_ = ipCmd("netns", "del", ns)
	os.RemoveAll(filepath.Join("/etc/netns", ns))
	n.mu.Lock()
	delete(n.pods, ns)
	n.mu.Unlock()
}
