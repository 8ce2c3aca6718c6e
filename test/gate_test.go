package test

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestGateRunsNoPullRequestCode reads the PR gate's workflow as GitHub
// runs it and checks that a pull request cannot change or run code in the
// gate that judges it: the trigger is pull_request_target (the workflow
// file comes from the base), every checkout is the base commit without a
// persisted token, every go command runs in the base checkout, the pull
// request's tree is only a worktree argument, and the jobs holding a write
// token check nothing out and run nothing from the tree.
func TestGateRunsNoPullRequestCode(t *testing.T) {
	b, err := os.ReadFile("../.github/workflows/fleet-validate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On          map[string]any    `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Name string         `yaml:"name"`
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
				Run  string         `yaml:"run"`
				Dir  string         `yaml:"working-directory"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["pull_request"]; ok {
		t.Error("on: pull_request runs the pull request's own copy of the gate")
	}
	if _, ok := wf.On["pull_request_target"]; !ok || len(wf.On) != 1 {
		t.Errorf("on: %v, want only pull_request_target", wf.On)
	}
	for _, v := range wf.Permissions {
		if v != "read" {
			t.Errorf("workflow permissions %v: the default token must be read-only", wf.Permissions)
		}
	}
	for name, job := range wf.Jobs {
		writes := false
		for _, v := range job.Permissions {
			writes = writes || v == "write"
		}
		for _, s := range job.Steps {
			step := name + "/" + s.Name
			if strings.HasPrefix(s.Uses, "actions/checkout") {
				if writes {
					t.Errorf("%s: a job with a write token checks out code", step)
				}
				if s.With["ref"] != "${{ github.event.pull_request.base.sha }}" || s.With["persist-credentials"] != false {
					t.Errorf("%s: checkout %v, want the base commit without persisted credentials", step, s.With)
				}
			}
			if strings.Contains(s.Run, "head.sha") || strings.Contains(s.Run, "head.ref") {
				t.Errorf("%s: interpolates the pull request's ref into a script (use env)", step)
			}
			for _, line := range strings.Split(s.Run, "\n") {
				fields := strings.Fields(line)
				if len(fields) == 0 {
					continue
				}
				cmd := fields[0]
				switch {
				case cmd == "go" || cmd == "make" || cmd == "npm" || cmd == "node" || cmd == "bash" || cmd == "sh" || cmd == "python3":
					if writes {
						t.Errorf("%s: a job with a write token runs %q", step, line)
					}
					if s.Dir != "base" {
						t.Errorf("%s: runs %q outside the base checkout (working-directory %q)", step, line, s.Dir)
					}
				case strings.HasPrefix(cmd, "./") || strings.HasPrefix(cmd, "../") || strings.Contains(cmd, "pr/"):
					t.Errorf("%s: runs a file from a checkout: %q", step, line)
				}
			}
			if writes && strings.Contains(s.Run, "pr/") {
				t.Errorf("%s: a job with a write token reads the pull request's tree", step)
			}
		}
	}
}
