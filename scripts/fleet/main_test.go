package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneGC: without GOGC and GOMEMLIMIT fleet runs the collector with
// its own settings; with them, the environment's values stay.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tt := range []struct {
		name      string
		env       map[string]string
		wantGC    int
		wantLimit int64
	}{
		{"defaults", nil, gcPercent, memoryLimit},
		{"GOGC set", map[string]string{"GOGC": "50"}, 50, memoryLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, gcPercent, 1 << 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
				if v, ok := tt.env[k]; ok {
					t.Setenv(k, v)
				} else if old, had := os.LookupEnv(k); had {
					os.Unsetenv(k)
					t.Cleanup(func() { os.Setenv(k, old) })
				}
			}
			// What the runtime read from the environment at start-up.
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			if tt.env["GOGC"] != "" {
				debug.SetGCPercent(50)
			}
			if tt.env["GOMEMLIMIT"] != "" {
				debug.SetMemoryLimit(1 << 30)
			}
			tuneGC()
			if got := debug.SetGCPercent(100); got != tt.wantGC {
				t.Errorf("GC percent %d, want %d", got, tt.wantGC)
			}
			if got := debug.SetMemoryLimit(math.MaxInt64); got != tt.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tt.wantLimit)
			}
		})
	}
}
