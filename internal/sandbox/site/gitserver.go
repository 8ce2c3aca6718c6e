package site

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// GitServer serves bare repositories over SSH the way a Git host does for
// Flux's source-controller: public-key authentication with the deploy keys
// it was given, and git-upload-pack (the system git's) for the repository a
// command names. It is a stand-in for the Git host only; Flux's Git client
// and transport are the real ones.
type GitServer struct {
	Root string // bare repositories live under it
	Addr string // host:port
	// KnownHosts is the known_hosts line for the server's host key.
	KnownHosts string

	mu         sync.Mutex
	authorized [][]byte
	listener   net.Listener
	config     *ssh.ServerConfig
}

// NewGitServer listens on ip (a free port) with a new host key.
func NewGitServer(root, ip string) (*GitServer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	g := &GitServer{Root: root}
	g.config = &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, a := range g.authorized {
			if bytes.Equal(a, key.Marshal()) {
				return &ssh.Permissions{}, nil
			}
		}
		return nil, fmt.Errorf("unknown key")
	}}
	g.config.AddHostKey(signer)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	g.listener, g.Addr = l, l.Addr().String()
	host, port, _ := net.SplitHostPort(g.Addr)
	g.KnownHosts = fmt.Sprintf("[%s]:%s %s", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	go g.serve()
	return g, nil
}

// Authorize lets the key (authorized_keys form) read every repository.
func (g *GitServer) Authorize(authorizedKey string) error {
	k, err := parseKey(authorizedKey)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.authorized = append(g.authorized, k)
	return nil
}

// parseKey is an authorized_keys line's key in wire form.
func parseKey(authorizedKey string) ([]byte, error) {
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil {
		return nil, fmt.Errorf("deploy key: %w", err)
	}
	return k.Marshal(), nil
}

// URL is the ssh:// URL of repository name (e.g. org/fleet.git).
func (g *GitServer) URL(name string) string { return "ssh://git@" + g.Addr + "/" + name }

// Close stops the server.
func (g *GitServer) Close() { g.listener.Close() }

func (g *GitServer) serve() {
	for {
		c, err := g.listener.Accept()
		if err != nil {
			return
		}
		go g.handle(c)
	}
}

func (g *GitServer) handle(c net.Conn) {
	_, chans, reqs, err := ssh.NewServerConn(c, g.config)
	if err != nil {
		c.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go g.session(ch, requests)
	}
}

func (g *GitServer) session(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" {
			_ = req.Reply(req.Type == "env", nil)
			continue
		}
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		verb, arg, _ := strings.Cut(p.Command, " ")
		if verb != "git-upload-pack" {
			_ = req.Reply(false, nil)
			fmt.Fprintf(ch.Stderr(), "read-only: %s refused\n", verb)
			return
		}
		repo := filepath.Join(g.Root, filepath.Clean("/"+strings.Trim(arg, "'\"")))
		_ = req.Reply(true, nil)
		cmd := exec.Command("git-upload-pack", repo)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
			if ee, ok := err.(*exec.ExitError); ok {
				status = uint32(ee.ExitCode())
			}
		}
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, status)
		_, _ = ch.SendRequest("exit-status", false, b)
		return
	}
}

// Repo is a repository of the server with a work tree the test commits
// from.
type Repo struct {
	Bare, Work, Branch string
}

// git runs git in dir.
func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// gitOutput runs git in dir and returns its standard output.
func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// InitRepo creates repository name with one commit on branch holding the
// files fill writes into the work tree.
func (g *GitServer) InitRepo(name, branch string, fill func(work string) error) (*Repo, error) {
	r := &Repo{Bare: filepath.Join(g.Root, filepath.FromSlash(name)), Work: filepath.Join(g.Root, ".work", filepath.FromSlash(name)), Branch: branch}
	if err := os.MkdirAll(r.Bare, 0o755); err != nil {
		return nil, err
	}
	if err := git(r.Bare, "init", "--bare", "-q", "-b", branch); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Work, 0o755); err != nil {
		return nil, err
	}
	if err := git(r.Work, "init", "-q", "-b", branch); err != nil {
		return nil, err
	}
	if err := git(r.Work, "remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	if err := fill(r.Work); err != nil {
		return nil, err
	}
	return r, r.Commit("initial tree")
}

// Commit commits everything in the work tree and pushes it.
func (r *Repo) Commit(message string) error {
	if err := git(r.Work, "add", "-A"); err != nil {
		return err
	}
	if err := git(r.Work, "commit", "-q", "--allow-empty", "-m", message); err != nil {
		return err
	}
	return git(r.Work, "push", "-q", "origin", r.Branch)
}

// Edit replaces old with new once in the work tree's file rel.
func (r *Repo) Edit(rel, old, new string) error {
	p := filepath.Join(r.Work, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), old) {
		return fmt.Errorf("%s does not contain %q", rel, old)
	}
	return os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

// copyDir copies src's regular files into dst.
func copyDir(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(t)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
