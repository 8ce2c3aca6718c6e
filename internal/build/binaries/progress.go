package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Uncached returns those of tools whose binary is not in the binary cache
// yet (CacheDir), in their order.
func Uncached(tools ...Tool) ([]Tool, error) {
	dir, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	return uncached(dir, tools)
}

func uncached(dir string, tools []Tool) ([]Tool, error) {
	var out []Tool
	for _, t := range tools {
		p, err := t.Path(dir)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(p); err != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// BuildShowingProgress builds tools as BuildAll does (Parallel at a time,
// in order, each after its After), reporting through logf each build's
// start and end and, every interval while any builds, which are still
// building and for how long: a cold build takes minutes, and a user
// waiting on it sees it move.
func BuildShowingProgress(ctx context.Context, interval time.Duration, logf func(format string, args ...any), tools ...Tool) error {
	dir, err := ToolsDir()
	if err != nil {
		return err
	}
	return buildShowingProgress(ctx, dir, interval, logf, tools)
}

func buildShowingProgress(ctx context.Context, dir string, interval time.Duration, logf func(format string, args ...any), tools []Tool) error {
	var mu sync.Mutex
	building := map[string]time.Time{}
	done := 0
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				var names []string
				for n, at := range building {
					names = append(names, fmt.Sprintf("%s (%s)", n, time.Since(at).Round(time.Second)))
				}
				sort.Strings(names)
				if len(names) > 0 {
					logf("  %d of %d built; building %s", done, len(tools), strings.Join(names, ", "))
				}
				mu.Unlock()
			}
		}
	}()
	errs := make([]error, len(tools))
	InOrder(tools, Parallel, func(i int) {
		t := tools[i]
		mu.Lock()
		building[t.Name] = time.Now()
		mu.Unlock()
		logf("  build %s", t.Name)
		_, errs[i] = build(ctx, dir, t)
		mu.Lock()
		took := time.Since(building[t.Name]).Round(time.Second)
		delete(building, t.Name)
		done++
		n := done
		mu.Unlock()
		if errs[i] == nil {
			logf("  built %s in %s (%d of %d)", t.Name, took, n, len(tools))
		}
	})
	return errors.Join(errs...)
}
