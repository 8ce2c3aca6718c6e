package iamsim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Server is one evaluator process answering requests until Close, for a
// caller that evaluates many small batches (the stand-in AWS authorizes
// every provider call): a node process per batch would cost more than the
// evaluation. Calls are serialized.
type Server struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	closed bool
}

// Serve installs the tool's packages and starts the evaluator in its
// serving mode. It fails, never skips, when node or the packages are
// missing.
func Serve(toolDir string) (*Server, error) {
	if err := Install(toolDir); err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (20 or later) is needed to evaluate IAM policies: %w", err)
	}
	cmd := exec.Command(node, "evaluate.mjs", "--serve")
	cmd.Dir = toolDir
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the IAM evaluator: %w", err)
	}
	return &Server{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// Evaluate is RunShared on the running evaluator.
func (s *Server) Evaluate(docs map[string]policydoc.Document, reqs []Request) ([]Result, error) {
	b, err := json.Marshal(map[string]any{"requests": prepare(reqs), "documents": docs})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the IAM evaluator was closed")
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("send to the IAM evaluator: %w", err)
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("read the IAM evaluator's answer: %w", err)
	}
	var ans struct {
		output
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return nil, fmt.Errorf("read the IAM evaluator's answer: %w", err)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("the IAM evaluator: %s", ans.Error)
	}
	if err := ans.answers(len(reqs)); err != nil {
		return nil, err
	}
	return ans.Results, nil
}

// Close ends the evaluator.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	_ = s.in.Close()
	return s.cmd.Wait()
}
