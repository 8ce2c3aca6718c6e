// Command renderserver serves Crossplane's render, the implementation of
// `crossplane internal render` at the pinned release
// (github.com/crossplane/crossplane/v2/cmd/crossplane/render.Command), to
// many requests from one process: the offline proof renders every claim of
// a fleet several times, and a process per render would cost more than the
// render itself.
//
// The protocol is upstream's: the body of POST /render is a protobuf
// RenderRequest (crossplane.render.v1alpha1) and the response body the
// RenderResponse the command writes to stdout. When the command fails the
// status is 422, the header X-Render-Error carries its error and
// X-Render-Exit-Code the exit code the command would have (3 for a
// pipeline FATAL, whose partial response is still the body, as upstream
// writes it to stdout).
//
// render.Command reads its request from os.Stdin and writes to os.Stdout,
// both captured in AfterApply; each request gets its own pipes, swapped in
// under a lock for that call only. Nothing else in this process writes to
// stdout.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/crossplane/crossplane/v2/cmd/crossplane/render"
)

var stdioMu sync.Mutex

// run renders one request with upstream's command.
func run(req []byte, timeout time.Duration) ([]byte, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer inR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		inW.Close()
		return nil, err
	}
	defer outR.Close()
	cmd := &render.Command{Timeout: timeout}
	stdioMu.Lock()
	oldIn, oldOut := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inR, outW
	err = cmd.AfterApply()
	os.Stdin, os.Stdout = oldIn, oldOut
	stdioMu.Unlock()
	if err != nil {
		inW.Close()
		outW.Close()
		return nil, err
	}
	go func() {
		_, _ = inW.Write(req)
		inW.Close()
	}()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, outR)
		done <- err
	}()
	runErr := cmd.Run(logging.NewNopLogger())
	outW.Close()
	if err := <-done; err != nil {
		return nil, err
	}
	return out.Bytes(), runErr
}

type exitCoder interface{ ExitCode() int }

func main() {
	socket := flag.String("socket", "", "unix socket to serve on")
	timeout := flag.Duration("timeout", 2*time.Minute, "timeout of one render (the command's --timeout)")
	flag.Parse()
	if *socket == "" {
		log.Fatal("--socket is required")
	}
	l, err := net.Listen("unix", *socket)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /render", func(w http.ResponseWriter, r *http.Request) {
		req, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := run(req, *timeout)
		if err != nil {
			code := 1
			var ec exitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
			w.Header().Set("X-Render-Error", strings.ReplaceAll(err.Error(), "\n", " "))
			w.Header().Set("X-Render-Exit-Code", strconv.Itoa(code))
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		_, _ = w.Write(out)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	log.Fatal(http.Serve(l, mux))
}
