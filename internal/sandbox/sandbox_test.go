package sandbox

import (
	"net/netip"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Dir: "/var/tmp/sandbox", Network: DefaultNetwork, Prefix: DefaultPrefix}
	tests := map[string]struct {
		reason string
		edit   func(*Config)
		want   string // "" for valid
	}{
		"Defaults":       {reason: "the defaults are valid", edit: func(*Config) {}},
		"RelativeDir":    {reason: "the background process runs elsewhere", edit: func(c *Config) { c.Dir = "sandbox" }, want: `--dir "sandbox": want an absolute path`},
		"LongNetwork":    {reason: "Linux interface names are at most 15 bytes", edit: func(c *Config) { c.Network = "a-very-long-bridge" }, want: `--network "a-very-long-bridge": want a Linux interface name`},
		"UpperNetwork":   {reason: "namespaces are named after it", edit: func(c *Config) { c.Network = "Fleet" }, want: `--network "Fleet"`},
		"NarrowPrefix":   {reason: "the hub and spokes take /20s of a /16", edit: func(c *Config) { c.Prefix = netip.MustParsePrefix("10.240.0.0/20") }, want: `--prefix "10.240.0.0/20": want a private IPv4 /16`},
		"PublicPrefix":   {reason: "the sandbox's addresses stay private", edit: func(c *Config) { c.Prefix = netip.MustParsePrefix("8.8.0.0/16") }, want: `--prefix "8.8.0.0/16"`},
		"UnmaskedPrefix": {reason: "a /16 is named by its first address", edit: func(c *Config) { c.Prefix = netip.MustParsePrefix("10.240.1.0/16") }, want: `--prefix "10.240.1.0/16"`},
		"IPv6Prefix":     {reason: "the pod network is IPv4", edit: func(c *Config) { c.Prefix = netip.MustParsePrefix("fd00::/16") }, want: `--prefix "fd00::/16"`},
		"PrivateB":       {reason: "172.16.0.0/12 is private", edit: func(c *Config) { c.Prefix = netip.MustParsePrefix("172.20.0.0/16") }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\nValidate() = %v, want nil", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s\nValidate() = %v, want an error containing %q", tc.reason, err, tc.want)
			}
		})
	}
}

func TestSpokeCIDR(t *testing.T) {
	p := netip.MustParsePrefix("10.207.0.0/16")
	tests := map[string]struct {
		reason string
		slot   int
		want   string
	}{
		"First": {reason: "the first spoke takes the /20 after the hub's two", slot: 0, want: "10.207.32.1/20"},
		"Last":  {reason: "the last slot ends the /16", slot: maxSpokes - 1, want: "10.207.240.1/20"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := spokeCIDR(p, tc.slot).String(); got != tc.want {
				t.Errorf("%s\nspokeCIDR(%s, %d) = %s, want %s", tc.reason, p, tc.slot, got, tc.want)
			}
		})
	}
}

func TestFluxSummary(t *testing.T) {
	tests := map[string]struct {
		reason string
		ks     []string
		want   string
	}{
		"None":  {reason: "before the spoke runs Flux", want: "0 of 0 Kustomizations Ready"},
		"Mixed": {reason: "only Ready ones count", ks: []string{"flux-system/a: Ready", "flux-system/b: not Ready (dependency 'flux-system/a' is not ready: Ready)"}, want: "1 of 2 Kustomizations Ready"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FluxSummary(tc.ks); got != tc.want {
				t.Errorf("%s\nFluxSummary(%q) = %q, want %q", tc.reason, tc.ks, got, tc.want)
			}
		})
	}
}
