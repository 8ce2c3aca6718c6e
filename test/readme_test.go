package test

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCIRunsTheReadmesTestCommand: .ci/run runs exactly the command the
// README gives under "Run every test", and the README's opening block gives
// the same one: CI proves what a newcomer is told to run.
func TestCIRunsTheReadmesTestCommand(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	want, err := readmeTestCommand(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	var ran bool
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(line) == want {
			ran = true
		}
	}
	if !ran {
		t.Errorf(".ci/run has no line %q (the README's test command)", want)
	}
	// The opening block: each command is followed by a comment.
	var opening bool
	for _, line := range strings.Split(string(readme), "\n") {
		if cmd, _, ok := strings.Cut(line, "#"); ok && strings.TrimSpace(cmd) == want {
			opening = true
		}
	}
	if !opening {
		t.Errorf("the README's opening commands do not include %q", want)
	}
}

// readmeTestCommand is the one line of the first code block after the
// README's "## Run every test" heading.
func readmeTestCommand(readme string) (string, error) {
	_, rest, ok := strings.Cut(readme, "\n## Run every test\n")
	if !ok {
		return "", errors.New("README.md has no \"## Run every test\" section")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		return "", errors.New("README.md's \"Run every test\" has no sh block")
	}
	block, _, _ := strings.Cut(rest, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "go test ") {
		return "", errors.New("README.md's \"Run every test\" block is not one go test command: " + block)
	}
	return lines[0], nil
}
